#pragma once
// The configuration of `gpucanary serve` (docs/configuration.md): one YAML
// file with the listener, the data directory and its retention, the
// remote_write receiver, and Prometheus's own `global` and `scrape_configs`
// sections for scraping.
//
//   listen: 127.0.0.1:9464
//   tls_server_config: {cert_file: tls.crt, key_file: tls.key}   # HTTPS, reloaded on change
//   storage:
//     path: data               # relative to this file's folder
//     retention: 15d
//     retention_size: 50GB     # 0: no limit
//     max_series: 2000000
//   remote_write:                # the receiver (POST /api/v1/write)
//     enabled: true
//     max_body: 32MiB
//     creation_grace_period: 10m   # and past_grace_period, label_limit, ...
//   remote_write_out:            # senders (docs/remote-write-out.md)
//     - {url: http://prometheus:9090/api/v1/write, queue_config: {shards: 4}}
//   global: {scrape_interval: 15s, fast_interval: 1s}
//   scrape_configs: [...]
//   auth: {token_file: /etc/gpucanary/token, tokens: [{scope: read, token_file: ro.token}]}
//   releases: {max_body: 1MiB, info_window: 7d}
//   publish:
//     grafana: {url: http://grafana:3000, token_file: grafana.token, tags: [prod]}
//     otlp: {endpoint: http://collector:4318, headers: {X-Scope-OrgID: fleet}}
//   nvml: {enabled: true, interval: 1s}   # this node's GPUs through NVML (docs/nvml.md)
//   http: {max_connections: 512, max_connections_per_client: 64, idle_timeout: 30s}
//   query: {max_samples: 5000000, max_concurrency: 2}
//
// Errors name the file, line, column and field:
// "serve.yaml:4:14: storage.retention: bad duration '15 days'".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actions/action_config.h"
#include "canary/manager.h"
#include "core/status.h"
#include "net/tls_options.h"
#include "nvml/source.h"
#include "releases/publisher.h"
#include "remote/sender.h"
#include "scrape/config.h"

namespace gpucanary::daemon {

// Token authentication (daemon/auth.h). No token: everything is open.
// Scopes are ordered: admin covers write, write covers read.
enum class TokenScope { kRead = 0, kWrite = 1, kAdmin = 2 };
std::string_view ScopeName(TokenScope scope);

struct TokenConfig {
  std::string name;  // for logs and errors (never the token itself)
  TokenScope scope = TokenScope::kAdmin;
  std::string token;  // from `token` or the file `token_file`
};

struct AuthConfig {
  // `auth.token`/`token_file` (one admin token named "default") and the
  // entries of `auth.tokens`, each value distinct.
  std::vector<TokenConfig> tokens;
  bool enabled() const { return !tokens.empty(); }
};

// The release API (daemon/release_api.h).
struct ReleasesConfig {
  std::size_t max_body_bytes = std::size_t{1} << 20;     // larger annotations get 413
  std::int64_t info_window_ms = 7LL * 24 * 3600 * 1000;  // gpucanary_release_info on /metrics
};

// The HTTP server's limits (`http:`, net/http_server.h), so that one client
// cannot take the listener from the others (docs/configuration.md).
struct HttpConfig {
  std::size_t max_connections = 512;            // open at once; more get 503
  std::size_t max_connections_per_client = 64;  // from one IP address; more get 429
  int idle_timeout_s = 30;                      // keep-alive wait for the next request
  int handler_threads = 8;                      // threads answering everything but /-/ health
};

// The query API's limits (`query:`, daemon/query_api.h).
struct QueryConfig {
  std::uint64_t max_samples = 5'000'000;  // points one query may hold; more: 422
  int max_concurrency = 2;                // queries at once; more: 503
};

// remote_write's accepted timestamp window and label limits
// (`remote_write:`, remote/receiver.h ReceiverOptions).
struct RemoteWriteLimits {
  std::int64_t creation_grace_period_ms = 10LL * 60 * 1000;  // how far ahead of now
  // How far behind now; storage.retention unless set; 0: no bound.
  std::int64_t past_grace_period_ms = 15LL * 24 * 3600 * 1000;
  std::size_t label_limit = 64;
  std::size_t label_name_length_limit = 256;
  std::size_t label_value_length_limit = 2048;
  // Series one tenant (the token a writer presents; "anonymous" without
  // auth) may write within an hour; 0: no limit (daemon/remote_write_guard.h).
  std::size_t max_series_per_tenant = 150'000;
};

struct ServeConfig {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 9464;
  // `tls_server_config`: serve HTTPS (net::HttpServer::ListenTls); unset: HTTP.
  std::optional<net::TlsServerOptions> tls_server;
  std::string data_dir = "data";
  std::int64_t retention_ms = 15LL * 24 * 3600 * 1000;
  std::uint64_t retention_bytes = 0;
  std::size_t max_series = 2'000'000;  // storage.max_series (store::StoreOptions)
  bool remote_write = true;
  std::size_t max_body_bytes = std::size_t{32} << 20;
  RemoteWriteLimits remote_write_limits;
  // `remote_write_out:` receivers every stored sample is sent to
  // (docs/remote-write-out.md).
  std::vector<remote::SenderConfig> remote_write_out;
  scrape::ScrapeConfig scrape;
  AuthConfig auth;
  ReleasesConfig releases;
  releases::PublishConfig publish;
  canary::CanaryOptions canary;                // `canary:` (canary/config.h)
  std::vector<actions::ActionConfig> actions;  // `actions:` (docs/actions.md)
  nvml::SourceConfig nvml;                     // `nvml:` (docs/nvml.md)
  HttpConfig http;                             // `http:`
  QueryConfig query;                           // `query:`
};

Result<ServeConfig> ParseServeConfig(std::string_view yaml_text, std::string_view file_name);
// Errors: kNotFound / kIoError for the file, kParseError as above.
Result<ServeConfig> LoadServeConfig(const std::string& path);

// "50GB", "32MiB", "1024" (bytes): B KB MB GB TB (powers of 1000) and KiB
// MiB GiB TiB (of 1024). False if malformed.
bool ParseByteSize(std::string_view text, std::uint64_t* bytes);

}  // namespace gpucanary::daemon
