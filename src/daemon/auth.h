#pragma once
// Bearer-token authentication for the daemon's HTTP API (RFC 6750 §2.1:
// "Authorization: Bearer <token>"), configured by `auth` (docs/configuration.md).
// With no token configured everything is open. With one:
//
// - writes need it: any method but GET/HEAD under /api/v1/ (POST
//   /api/v1/releases, POST /api/v1/canaries/{id}/stop), except the query
//   API's POST forms and Flagger's webhooks (/api/v1/flagger/...), which only
//   read (and Flagger cannot send the header);
// - POST /api/v1/write needs it when protect_remote_write is set;
// - reads (the query API, GETs under /api/v1/, /metrics) need it when
//   protect_reads is set;
// - /-/ready, /-/healthy and the dashboard's pages never need it.
//
// A request without the right token gets 401 with
// "WWW-Authenticate: Bearer realm=\"gpucanary\"" (plus error="invalid_token"
// when a token was sent) and a Prometheus-style JSON error body. Tokens are
// compared in constant time.
//
// Thread-safe (immutable after construction).

#include <string>
#include <string_view>
#include <utility>

#include "daemon/serve_config.h"
#include "net/http_message.h"

namespace gpucanary::daemon {

class BearerAuth {
 public:
  explicit BearerAuth(AuthConfig config) : config_(std::move(config)) {}

  // True when `request` may proceed; otherwise fills `response` with the 401.
  bool Allow(const net::HttpRequest& request, net::HttpResponse& response) const;

  // Whether `request` needs the token under this configuration.
  bool Protects(const net::HttpRequest& request) const;

 private:
  AuthConfig config_;
};

// Equality of a secret and a presented value that takes the same time
// whatever the contents (it depends only on the secret's length).
bool ConstantTimeEquals(std::string_view secret, std::string_view presented);

}  // namespace gpucanary::daemon
