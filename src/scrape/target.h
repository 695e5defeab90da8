#pragma once
// What discovery produces (target groups) and what the scraper scrapes
// (targets), with Prometheus's rules for turning one into the other, and the
// schedule arithmetic: each target scrapes at phase + k·interval of the Unix
// epoch, its phase fixed by the hash of its URL.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/labels.h"
#include "scrape/config.h"

namespace gpucanary::scrape {

// One group of targets sharing labels (Prometheus's targetgroup.Group): what a
// static_configs entry, a file_sd file entry or one Prometheus active target
// yields. Labels may include discovery's "__meta_*" labels and any of the
// "__" labels PopulateLabels reads ("__metrics_path__", a path with an
// optional query, "__scheme__", "__param_<name>", "__scrape_interval__").
struct TargetGroup {
  std::vector<std::string> targets;  // "host:port" (each the target's __address__)
  LabelPairs labels;
  std::string source;  // where it came from, for messages: "targets.json:3:5"
};

// One scrape target. Value type; thread-compatible.
struct Target {
  std::string job;
  std::string host;  // "10.0.0.1", "node-3", "::1" (no brackets)
  std::uint16_t port = 0;
  std::string path;    // path and query: "/metrics", "/probe?module=a"
  std::string url;     // "http://10.0.0.1:9400/metrics"
  bool https = false;  // __scheme__ https: scraped over TLS with the job's tls_config
  // The labels every series of the target gets: job, instance and the
  // group's and relabeling's labels; sorted, no "__" names, no empty values.
  model::Labels labels;
  // From __scrape_interval__ / __scrape_timeout__ (the job's unless
  // relabeling set them); 0 < timeout_ms <= interval_ms.
  std::int64_t interval_ms = 0;
  std::int64_t timeout_ms = 0;

  // The identity across discovery updates: job, URL, labels and timing. A
  // target whose key changes is a new target (the old one ends with stale
  // markers).
  std::string Key() const;
  std::string_view instance() const { return model::LabelValue(labels, "instance"); }
};

// The labels of `address` in `group` before relabeling (Prometheus's
// PopulateDiscoveredLabels): __address__, the group's labels (later entries
// win), then job, __scrape_interval__, __scrape_timeout__, __metrics_path__,
// __scheme__ (the job's scheme) and __param_<name> (the first value of each job param) where
// still unset or empty. Sorted; empty values dropped.
model::Labels DiscoveredLabels(const JobConfig& job, std::string_view address,
                               const TargetGroup& group);

// Builds the target for `address` in `group` of `job` as Prometheus's
// PopulateLabels does: DiscoveredLabels, then the job's relabel_configs
// (nullopt: a rule dropped the target, which is then not scraped), then
// checks: __address__ set and a valid host:port (a bare host gets ":80"),
// __scheme__ http or https, interval and timeout
// Prometheus durations with 0 < timeout <= interval; then "__meta_*" labels
// are deleted and instance defaults to the address. The URL is
// __scheme__://__address__ + __metrics_path__ + the job's params as its query, the
// first value of each replaced by its __param_<name> label (which may add
// names), sorted by name;
// the target's labels are those not starting with "__". Errors:
// kInvalidArgument saying why, prefixed with group.source.
Result<std::optional<Target>> MakeTarget(const JobConfig& job, std::string_view address,
                                         const TargetGroup& group);

// Selects targets, e.g. the nodes of a canary (ScrapeManager::SetFast).
// Called on the scraper's io thread; must be thread-safe and quick.
using TargetMatcher = std::function<bool(const Target&)>;

// Matches a target when one of `hosts` equals its instance, the host part of
// its instance or address, or the value of its label hostname, Hostname,
// node or host.
TargetMatcher MatchHosts(std::vector<std::string> hosts);

// Every target of `groups` that relabeling keeps, deduplicated by Key() and
// sorted by it; bad ones are skipped and their errors appended to `errors`.
std::vector<Target> MakeTargets(const JobConfig& job, const std::vector<TargetGroup>& groups,
                                std::vector<Status>* errors);

// FNV-1a, 64 bits, as Go's hash/fnv (Prometheus hashes targets with it).
std::uint64_t Fnv1a64(std::string_view data);

// The target's offset within an interval: FNV-1a of its URL modulo the
// interval (Prometheus's Target.offset hashes its labels and URL the same
// way). REQUIRES: interval_ms > 0.
std::int64_t PhaseMs(std::string_view url, std::int64_t interval_ms);

// The first slot phase + k·interval (k any integer) at or after t_ms.
// REQUIRES: interval_ms > 0, 0 <= phase_ms < interval_ms.
std::int64_t SlotAtOrAfter(std::int64_t phase_ms, std::int64_t interval_ms, std::int64_t t_ms);

}  // namespace gpucanary::scrape
