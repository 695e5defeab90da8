#pragma once
// What discovery produces (target groups) and what the scraper scrapes
// (targets), with Prometheus's rules for turning one into the other, and the
// schedule arithmetic: each target scrapes at phase + k·interval of the Unix
// epoch, its phase fixed by the hash of its URL.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/labels.h"
#include "scrape/config.h"

namespace gpucanary::scrape {

// One group of targets sharing labels (Prometheus's targetgroup.Group): what a
// static_configs entry, a file_sd file entry or one Prometheus active target
// yields. Labels may include "__metrics_path__" (a path, with an optional
// query) to override the job's metrics_path; other "__" labels are dropped.
struct TargetGroup {
  std::vector<std::string> targets;  // "host:port"
  LabelPairs labels;
  std::string source;  // where it came from, for messages: "targets.json:3:5"
};

// One scrape target. Value type; thread-compatible.
struct Target {
  std::string job;
  std::string host;  // "10.0.0.1", "node-3", "::1" (no brackets)
  std::uint16_t port = 0;
  std::string path;  // path and query: "/metrics"
  std::string url;   // "http://10.0.0.1:9400/metrics"
  // The labels every series of the target gets: job, instance and the
  // group's labels; sorted, no "__" names, no empty values.
  model::Labels labels;

  // The identity across discovery updates: job, URL and labels. A target whose
  // key changes is a new target (the old one ends with stale markers).
  std::string Key() const;
  std::string_view instance() const { return model::LabelValue(labels, "instance"); }
};

// Builds the target for `address` in `group` of `job` as Prometheus's
// PopulateLabels does without relabelling: group labels first; job, instance
// (= the address) and the metrics path filled in where the group sets none;
// labels named "__*" and empty values dropped. Errors: kInvalidArgument for a
// bad address or label name, naming group.source.
Result<Target> MakeTarget(const JobConfig& job, std::string_view address, const TargetGroup& group);

// Selects targets, e.g. the nodes of a canary (ScrapeManager::SetFast).
// Called on the scraper's io thread; must be thread-safe and quick.
using TargetMatcher = std::function<bool(const Target&)>;

// Matches a target when one of `hosts` equals its instance, the host part of
// its instance or address, or the value of its label hostname, Hostname,
// node or host.
TargetMatcher MatchHosts(std::vector<std::string> hosts);

// Every target of `groups`, deduplicated by Key() and sorted by it; bad
// addresses are skipped and their errors appended to `errors`.
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
