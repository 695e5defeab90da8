#pragma once
// The scrape section of gpucanary's configuration, in Prometheus's own shapes
// (prometheus.io/docs/prometheus/latest/configuration/configuration/), so a
// site can paste its scrape_configs:
//
//   global:
//     scrape_interval: 15s      # default 15s
//     scrape_timeout: 10s       # default 10s
//     fast_interval: 1s         # ours: the interval of targets in a running canary
//   scrape_configs:
//     - job_name: dcgm
//       scrape_interval: 15s    # default: global
//       scrape_timeout: 5s      # default: global, capped at the interval
//       metrics_path: /metrics
//       scheme: http                     # or https, with tls_config
//       tls_config: {ca_file: ca.pem, cert_file: c.pem, key_file: c.key,
//                    server_name: dcgm.internal, insecure_skip_verify: false}
//       honor_labels: false
//       honor_timestamps: true
//       static_configs: [{targets: ['10.0.0.1:9400'], labels: {site: a}}]
//       file_sd_configs: [{files: ['targets/*.json'], refresh_interval: 5m}]
//       prometheus_sd_configs: [{url: 'http://prom:9090', job: dcgm, refresh_interval: 30s}]
//       kubernetes_sd_configs: [{role: pod, namespaces: {names: [gpu]}}]  # kubernetes_sd_config.h
//       params: {format: [prometheus]}   # the scrape URL's query
//       relabel_configs: [...]           # on targets (scrape/target.h MakeTarget)
//       metric_relabel_configs: [...]    # on scraped samples (scrape/ingester.h)
//       sample_limit: 20000              # and label_limit, label_name_length_limit,
//       body_size_limit: 8MiB            # label_value_length_limit; global sets defaults
//
// prometheus_sd_configs is our extension: targets read from an existing
// Prometheus's /api/v1/targets. The relabel lists are Prometheus's
// (scrape/relabel_config.h). Unknown keys are errors (Prometheus's
// basic_auth, authorization, ... are not supported and are reported, not
// ignored); tls_config is config/tls_config.h's. Every error is a kParseError "FILE:LINE:COL:
// field.path: what".

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/relabel.h"
#include "net/tls_options.h"
#include "scrape/kubernetes_sd_config.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace gpucanary::config {
class Reporter;
}  // namespace gpucanary::config

namespace gpucanary::scrape {

// Label name/value pairs in file order, as written in a config or target file.
using LabelPairs = std::vector<std::pair<std::string, std::string>>;

struct StaticConfig {
  std::vector<std::string> targets;  // "host:port"
  LabelPairs labels;

  friend bool operator==(const StaticConfig&, const StaticConfig&) = default;
};

struct FileSdConfig {
  // Paths or globs (a pattern only in the last path element, as Prometheus
  // allows), made absolute against the config file's folder.
  std::vector<std::string> files;
  std::int64_t refresh_interval_ms = 300'000;  // 5m
  std::string where;  // "FILE:LINE:COL" of this entry, for messages (not compared)

  friend bool operator==(const FileSdConfig& a, const FileSdConfig& b) {
    return a.files == b.files && a.refresh_interval_ms == b.refresh_interval_ms;
  }
};

struct PrometheusSdConfig {
  std::string url;  // http://host:port[/prefix] of the Prometheus to ask
  std::string job;  // keep only active targets whose labels.job is this; "" keeps all
  std::int64_t refresh_interval_ms = 30'000;
  net::TlsClientOptions tls;  // for an https:// url (tls_config)
  std::string where;          // not compared

  friend bool operator==(const PrometheusSdConfig& a, const PrometheusSdConfig& b) {
    return a.url == b.url && a.job == b.job && a.refresh_interval_ms == b.refresh_interval_ms &&
           a.tls == b.tls;
  }
};

// Prometheus's per-scrape limits (scrape_config sample_limit, label_limit,
// label_name_length_limit, label_value_length_limit, body_size_limit), with
// Prometheus's semantics: a scrape over any of them fails whole (up 0, the
// target down with the reason). sample_limit counts the samples left after
// metric relabeling; the label limits apply to each new series after
// relabeling, __name__ and target labels included (lengths in bytes);
// body_size_limit to the body as decompressed. 0: no limit.
struct ScrapeLimits {
  std::size_t sample_limit = 0;
  std::size_t label_limit = 0;
  std::size_t label_name_length_limit = 0;
  std::size_t label_value_length_limit = 0;
  std::uint64_t body_size_limit = 0;  // bytes

  friend bool operator==(const ScrapeLimits&, const ScrapeLimits&) = default;
};

// Ours when neither the job nor `global` sets one (Prometheus has none):
// room for 25 dcgm-exporters of 8 GPUs × 100 fields in one scrape (a node's
// real one has 250-800 samples, 60-200 kB), while a target that suddenly
// exposes hundreds of thousands of series fails instead of filling memory.
inline constexpr ScrapeLimits kDefaultScrapeLimits{.sample_limit = 20'000,
                                                   .label_limit = 64,
                                                   .label_name_length_limit = 256,
                                                   .label_value_length_limit = 2048,
                                                   .body_size_limit = std::uint64_t{8} << 20};

struct JobConfig {
  std::string job_name;
  std::int64_t scrape_interval_ms = 15'000;  // the parser fills in the global ones
  std::int64_t scrape_timeout_ms = 10'000;
  std::string metrics_path = "/metrics";
  std::string scheme = "http";  // "http" or "https": the targets' __scheme__ unless set
  // For https targets: file paths made absolute against the config's folder.
  net::TlsClientOptions tls_config{};
  bool honor_labels = false;
  bool honor_timestamps = true;
  std::vector<StaticConfig> static_configs;
  std::vector<FileSdConfig> file_sd_configs;
  std::vector<PrometheusSdConfig> prometheus_sd_configs;
  std::vector<KubernetesSdConfig> kubernetes_sd_configs;
  // The scrape URL's query parameters (Prometheus's `params`); each becomes
  // a __param_<name> target label (its first value) before relabeling.
  std::map<std::string, std::vector<std::string>> params;
  std::vector<model::RelabelRule> relabel_configs;         // on targets
  std::vector<model::RelabelRule> metric_relabel_configs;  // on scraped samples
  ScrapeLimits limits = kDefaultScrapeLimits;              // the parser fills in global's

  friend bool operator==(const JobConfig&, const JobConfig&) = default;
};

struct GlobalConfig {
  std::int64_t scrape_interval_ms = 15'000;
  std::int64_t scrape_timeout_ms = 10'000;
  std::int64_t fast_interval_ms = 1000;
  ScrapeLimits limits = kDefaultScrapeLimits;  // each job's, unless it sets its own
};

struct ScrapeConfig {
  GlobalConfig global;
  std::vector<JobConfig> jobs;
};

// Parses a whole file whose top level holds `global` and `scrape_configs`
// (nothing else). `file_name` names the file in errors; relative file_sd paths
// are resolved against its folder. Errors: kParseError as above.
Result<ScrapeConfig> ParseScrapeConfig(std::string_view yaml_text, std::string_view file_name);
// Reads and parses `path`. Errors: kNotFound / kIoError for the file, else as above.
Result<ScrapeConfig> LoadScrapeConfig(const std::string& path);

// For a larger config file (the daemon's) that embeds the two sections:
// either node may be null (absent). `base_dir` resolves relative file_sd
// paths. May throw nothing; yaml-cpp errors are returned as kParseError.
Result<ScrapeConfig> ReadScrapeSections(const config::Reporter& r, const YAML::Node* global,
                                        const YAML::Node* scrape_configs,
                                        const std::string& base_dir);

// Prometheus's duration grammar (model.ParseDuration):
// [0-9]+(y|w|d|h|m|s|ms), units in that order, each at most once: "1m30s",
// "500ms", "0". False for anything else (including "1.5s").
bool ParsePrometheusDuration(std::string_view text, std::int64_t* ms);
// The inverse, as Prometheus's model.Duration.String: "15s", "1m30s",
// "500ms", "0s"; years and weeks only when they divide the duration.
std::string FormatPrometheusDuration(std::int64_t ms);

// Prometheus's <size> (units.ParseBase2Bytes): a whole number and a unit,
// B, KB, MB, GB, TB (powers of 1024, as Prometheus reads them) or KiB, MiB,
// GiB, TiB; "0" alone. False for anything else ("10", "1.5MB", "10mb") or
// an overflow.
bool ParsePrometheusSize(std::string_view text, std::uint64_t* bytes);

// A target address as Prometheus takes it: "host:port", "[v6]:port", or a
// bare host, which gets ":<default_port>" as Prometheus adds (80 for http;
// a static target of an https job gets 443; file_sd targets always 80, as
// their job is not known where they are read: give them a port). No scheme, path,
// spaces or user info. Errors: kInvalidArgument saying why.
Result<std::string> NormalizeAddress(std::string_view address, std::uint16_t default_port = 80);

}  // namespace gpucanary::scrape
