#pragma once
// The configuration of `gpucanary serve` (docs/configuration.md): one YAML
// file with the listener, the data directory and its retention, the
// remote_write receiver, and Prometheus's own `global` and `scrape_configs`
// sections for scraping.
//
//   listen: 127.0.0.1:9464
//   storage:
//     path: data               # relative to this file's folder
//     retention: 15d
//     retention_size: 50GB     # 0: no limit
//   remote_write:
//     enabled: true
//     max_body: 32MiB
//   global: {scrape_interval: 15s, fast_interval: 1s}
//   scrape_configs: [...]
//   auth: {token_file: /etc/gpucanary/token, protect_reads: false}
//   releases: {max_body: 1MiB, info_window: 7d}
//   publish:
//     grafana: {url: http://grafana:3000, token_file: grafana.token, tags: [prod]}
//     otlp: {endpoint: http://collector:4318, headers: {X-Scope-OrgID: fleet}}
//   nvml: {enabled: true, interval: 1s}   # this node's GPUs through NVML (docs/nvml.md)
//
// Errors name the file, line, column and field:
// "serve.yaml:4:14: storage.retention: bad duration '15 days'".

#include <cstdint>
#include <string>
#include <string_view>

#include "actions/action_config.h"
#include "canary/manager.h"
#include "core/status.h"
#include "nvml/source.h"
#include "releases/publisher.h"
#include "scrape/config.h"

namespace gpucanary::daemon {

// Bearer-token authentication (daemon/auth.h). No token: everything is open.
struct AuthConfig {
  std::string token;                  // from `token` or the file `token_file`
  bool protect_reads = false;         // GETs under /api/v1/ and /metrics need it too
  bool protect_remote_write = false;  // POST /api/v1/write needs it too
};

// The release API (daemon/release_api.h).
struct ReleasesConfig {
  std::size_t max_body_bytes = std::size_t{1} << 20;     // larger annotations get 413
  std::int64_t info_window_ms = 7LL * 24 * 3600 * 1000;  // gpucanary_release_info on /metrics
};

struct ServeConfig {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 9464;
  std::string data_dir = "data";
  std::int64_t retention_ms = 15LL * 24 * 3600 * 1000;
  std::uint64_t retention_bytes = 0;
  bool remote_write = true;
  std::size_t max_body_bytes = std::size_t{32} << 20;
  scrape::ScrapeConfig scrape;
  AuthConfig auth;
  ReleasesConfig releases;
  releases::PublishConfig publish;
  canary::CanaryOptions canary;                // `canary:` (canary/config.h)
  std::vector<actions::ActionConfig> actions;  // `actions:` (docs/actions.md)
  nvml::SourceConfig nvml;                     // `nvml:` (docs/nvml.md)
};

Result<ServeConfig> ParseServeConfig(std::string_view yaml_text, std::string_view file_name);
// Errors: kNotFound / kIoError for the file, kParseError as above.
Result<ServeConfig> LoadServeConfig(const std::string& path);

// "50GB", "32MiB", "1024" (bytes): B KB MB GB TB (powers of 1000) and KiB
// MiB GiB TiB (of 1024). False if malformed.
bool ParseByteSize(std::string_view text, std::uint64_t* bytes);

}  // namespace gpucanary::daemon
