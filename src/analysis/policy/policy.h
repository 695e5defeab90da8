#pragma once
// Judge policies (docs/analysis-method.md, "Policies"): which hard rules
// apply, which metrics are compared with which margin, and the error rate to
// hold. Written in YAML; policies/default.yaml is the shipped default and
// DefaultPolicy() returns the same text, built in.
//
//   alpha: 0.01          # P(any metric ever fails a healthy release), whole canary
//   pass_alpha: 0.05     # P(a metric worse than its margin is ever shown not worse)
//   block: 10s           # block length for block means
//   min_block_fraction: 0.5
//   rules:
//     throttle: {reasons: [hw_slowdown, ...], power_cap_if_baseline_uncapped: true,
//                seconds: 3, critical: true}
//     dram_efficiency: {max_drop: 0.15}
//     pcie_link: {seconds: 3, critical: false}
//     critical_xids: [48, 62, 79, ...]
//     ecc_dbe: {critical: true}
//   metrics:
//     - {measure: per_token_latency, kind: mean, better: lower, margin: 0.03, critical: true}
//     - {name: DCGM_FI_DEV_SM_CLOCK, kind: gauge, better: higher, margin: 0.05}
//
//   without_service:     # a canary without service metrics (DCGM only)
//     - {measure: work_per_joule, better: higher, margin: 0.05}
//
// An entry names a metric (`name`) or a measure (`measure`: one of
// vocab::ServiceMeasure's or vocab::GpuMeasure's wire names), not both. A
// measure's kind follows from it: latencies mean or p99, generated_tokens
// rate, queue_depth, kv_cache_usage and the GPU measures gauge.
//
// Parsing is pure; every error is a kParseError "FILE:LINE:COL: field: what".
// A rule left out of `rules:` is off; `metrics:` may be empty.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "vocab/service_measures.h"

namespace gpucanary::analysis {

struct MetricPolicy {
  enum class Kind : std::uint8_t {
    kGauge,  // the value of each 1 s sample (DCGM gauges)
    kRate,   // a counter's increase per second (tokens, replays, ECC)
    kMean,   // a histogram's mean observation per tick: increase of _sum / of _count
    kP99,    // the tail of a histogram: observations beyond the baseline's p99 bucket bound,
             // tested as a count against the number of observations
    kCount,  // a counter of rare events (replays, SBEs), tested as a rate per GPU-second
  };
  enum class Better : std::uint8_t { kHigher, kLower };

  // What is compared: a metric by its name, or a service measure
  // (src/vocab/service_measures.h), which the judge reads from whichever
  // inference server each node runs; `name` is then the measure's wire name.
  std::string name;
  std::optional<vocab::ServiceMeasure> measure;
  // Or a GPU measure (derived from DCGM fields, e.g. work_per_joule): a
  // gauge per GPU; `name` is its wire name.
  std::optional<vocab::GpuMeasure> gpu_measure;
  Kind kind = Kind::kGauge;
  Better better = Better::kHigher;
  double margin = 0;  // relative change allowed in the harmful direction (0.03 = 3%)
  bool critical = false;
};

struct ThrottlePolicy {
  bool enabled = false;
  std::uint64_t harmful_mask = 0;  // clock-event reason bits that hurt
  bool power_cap_if_baseline_uncapped = true;
  // A streak on a canary GPU after its release halts the canary (the seed's
  // rule) unless the GPU had it before or the baseline shows it too; false:
  // a streak on a minority of one node's GPUs, or with a clean canary node
  // on the release longer, is that node's (docs/analysis-method.md).
  bool halt_on_canary = true;
  double seconds = 3;  // "more than 3 consecutive seconds"
  bool critical = true;
};

struct RulesPolicy {
  ThrottlePolicy throttle;
  bool dram_efficiency = false;
  double dram_efficiency_max_drop = 0.15;
  bool pcie_link = false;
  double pcie_seconds = 3;
  bool pcie_critical = false;
  // A link below what it should be on a canary GPU after its release (a
  // retrain at the deploy's reset) halts the canary unless the GPU had it
  // before; false: the spread, witness and sibling tests decide.
  bool pcie_halt_on_canary = true;
  std::vector<int> critical_xids;  // sorted, unique
  bool ecc_dbe = false;
  bool ecc_dbe_critical = true;
};

struct Policy {
  double alpha = 0.01;
  // P(a metric worse than its margin is ever shown not worse), per metric:
  // a pass is decided on an interval at this level. A pass needs every
  // required metric shown not worse (an intersection-union test), so this
  // bounds the chance of passing a release that is worse than a margin,
  // with no split across metrics (docs/analysis-method.md, "Decision").
  double pass_alpha = 0.05;
  double block_s = 10;
  double min_block_fraction = 0.5;
  // p99 measures are compared per block of block_s seconds, and decide from
  // min_blocks blocks; every other measure is compared every second and
  // decides from min_seconds seconds of both arms (the CS is asymptotic).
  int min_blocks = 10;
  int min_seconds = 5;
  // Service measures (per-token latency, tokens/s from a server's counters)
  // are ratios of small per-second counts, heavy-tailed at 1 s: they decide
  // from this many seconds (at least min_seconds).
  int min_service_seconds = 30;
  double warmup_s = 10;  // after the release starts, seconds not compared (restart, caches)
  RulesPolicy rules;
  std::vector<MetricPolicy> metrics;
  // `without_service:` what must be shown not worse, instead of the critical
  // metrics, when neither arm exposes any service metric (a DCGM-only
  // canary; docs/analysis-method.md, "Without service metrics"). The DRAM
  // efficiency rule, when on, is required with them. An entry that repeats
  // one of `metrics` (same name and kind, better and margin) is that
  // comparison; the others are compared only on such a canary.
  std::vector<MetricPolicy> without_service;
  std::string file;  // what errors were reported against

  // The `metrics` entry of this name and kind (its index), if any: the one a
  // `without_service` entry repeats.
  std::optional<std::size_t> FindMetric(std::string_view name, MetricPolicy::Kind kind) const {
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      if (metrics[i].name == name && metrics[i].kind == kind) return i;
    }
    return std::nullopt;
  }
};

std::string_view MetricKindName(MetricPolicy::Kind kind);  // "gauge", "rate", "mean", ...

// Parses a policy. `file_name` only labels errors and Policy::file.
Result<Policy> ParsePolicy(std::string_view yaml_text, std::string_view file_name);
// Reads and parses `path`: kNotFound / kIoError when it cannot be read.
Result<Policy> LoadPolicy(const std::string& path);
// The built-in default (the text of policies/default.yaml).
const Policy& DefaultPolicy();
std::string_view DefaultPolicyText();

}  // namespace gpucanary::analysis
