#pragma once
// Token authentication for the daemon's HTTP API, configured by `auth`
// (docs/configuration.md, docs/http-api.md#authentication). With no token
// configured everything is open (and the daemon warns at start when it
// listens beyond loopback). With one or more tokens, every request but the
// health checks and the dashboard's own files needs a token whose scope
// covers it:
//
//   read   the query API (GET or POST), every GET under /api/v1/, /metrics;
//   write  what feeds the daemon: POST /api/v1/write (remote_write),
//          POST /api/v1/releases, and Flagger's webhooks
//          (/api/v1/flagger/...: they bind revisions to releases and a
//          post-rollout stops a canary);
//   admin  everything, among it canary control
//          (POST /api/v1/canaries/{id}/stop) and any other method than
//          GET/HEAD under /api/v1/.
//
// admin covers write, write covers read. A token is presented as
// "Authorization: Bearer <token>" (RFC 6750 §2.1) or as the password of
// "Authorization: Basic" (RFC 7617), which is what a client that can only
// take a URL sends for `http://user:<token>@host/...` (Flagger's webhooks,
// Go's net/http). A missing or unknown token gets 401 with
// "WWW-Authenticate: Bearer realm=\"gpucanary\"" (error="invalid_token" when
// one was sent); a known token whose scope is too narrow gets 403
// (error="insufficient_scope"). Bodies are Prometheus-style JSON errors.
// Tokens are compared in constant time, every configured token each time.
//
// Thread-safe (immutable after construction).

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "daemon/serve_config.h"
#include "net/http_message.h"

namespace gpucanary::daemon {

class BearerAuth {
 public:
  explicit BearerAuth(AuthConfig config) : config_(std::move(config)) {}

  // True when `request` may proceed; otherwise fills `response` with the
  // 401 or 403.
  bool Allow(const net::HttpRequest& request, net::HttpResponse& response) const;

  // The scope `request` needs under this configuration; nullopt when it
  // needs none (no token configured, a health check, the dashboard's files).
  std::optional<TokenScope> Needs(const net::HttpRequest& request) const;

  // The configured token `request` presents (Bearer, or Basic's password);
  // nullptr when it presents none or an unknown one.
  const TokenConfig* Presented(const net::HttpRequest& request) const;

 private:
  AuthConfig config_;
};

// The scope a request needs when tokens are configured (see above); nullopt
// for the health checks and the dashboard's files.
std::optional<TokenScope> RequiredScope(const net::HttpRequest& request);

// Equality of a secret and a presented value that takes the same time
// whatever the contents (it depends only on the secret's length).
bool ConstantTimeEquals(std::string_view secret, std::string_view presented);

// Whether a listen address reaches only this machine (127.0.0.0/8, ::1,
// localhost).
bool IsLoopbackHost(std::string_view host);

}  // namespace gpucanary::daemon
