#pragma once
// After the fact: which release caused this regression? (docs/contracts.md §7,
// docs/analysis-method.md, "Correlation").
//
//   auto replay = Replay::Open({{"fleet.om", Role::kBaseline}});
//   auto releases = releases::LoadReleasesJsonl("releases.jsonl");
//   Result<CorrelateReport> report = Correlate(**replay, *releases, {});
//   std::string json = CorrelateReportJson(*report);
//
// The method, in order:
//  1. Series. Every GPU's hardware metrics and every node's service metrics
//     are cut into buckets of `resolution_s` (means, rates, the fraction of
//     seconds a throttle reason was set, p99 from histogram buckets). A
//     bucket with no sample is missing, never zero. A node's model-server
//     restarts (its vLLM series absent, or its counters reset) are found at
//     1 s; the restart and the warm-up after it are masked out of that
//     node's series, and each restart dates a release's arrival there.
//  2. Change points. cpd::Segment on each series; a change counts when it is
//     harmful, material (a per-metric floor), abrupt (a step, not a slope:
//     diurnal load is smooth) and lasting (not a burst that went away).
//  3. Episodes. One GPU's changes close in time are one episode, named by
//     its mechanism from the co-changing metrics, in the judge's cause
//     vocabulary (power_brake, memory_thrash, ..., software_regression).
//  4. Regressions. Episodes of one mechanism close in time across GPUs are
//     one regression, split where a release explains only part of it.
//  5. Attribution. Each release is scored on time (the change began on each
//     node it reached, soon after it arrived there), space (the changed
//     nodes are its nodes, and its nodes changed), dose (the number of
//     changed nodes rose as the release reached more of them) and mechanism
//     (one a release can cause). Releases under `min_score` are not named:
//     then no release explains the regression.
//
// Thread-compatible: Correlate reads the replay to its end.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/replay/replay.h"
#include "core/status.h"
#include "releases/release.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis::correlate {

struct CorrelateOptions {
  // Bucket width in seconds; 0: 10 s, or coarser (a multiple of 10 s) so
  // that the range holds at most kMaxBuckets buckets.
  std::int64_t resolution_s = 0;
  // Only ticks in [from_s, to_s) are read (Unix seconds); unset: all.
  std::optional<std::int64_t> from_s;
  std::optional<std::int64_t> to_s;
  // A release scoring below this is not named a suspect.
  double min_score = 0.5;
  // How long after a release reaches a node its effect may still begin.
  std::int64_t max_lag_s = 600;
  // Episodes of one mechanism whose onsets are this close are one regression.
  std::int64_t group_window_s = 300;
  // Seconds after a model-server restart that are masked (warm-up).
  std::int64_t warmup_s = 20;

  static constexpr std::int64_t kMaxBuckets = 4000;
};

struct Suspect {
  std::string release;
  double score = 0;      // 0..1, the product of the parts below
  double time = 0;       // 0..1: onsets soon after the release's arrival on each node
  double space = 0;      // 0..1: changed nodes vs the release's nodes
  double dose = 0;       // 0..1: changed nodes rising with the nodes reached
  double mechanism = 0;  // 0..1: how plausible the mechanism is for a release
  std::string reason;    // in words, for an SRE
};

struct MetricChange {
  std::string metric;  // "DCGM_FI_DEV_SM_CLOCK", "vllm:generation_tokens_per_s", ...
  std::string unit;
  double before = 0;  // median over the regression's entities of the level before
  double after = 0;
  double change = 0;  // relative (after / before - 1), or absolute for fractions and degrees
  bool relative = true;
  int entities = 0;  // GPUs (or nodes, for service metrics) where it changed
};

struct RegressionCause {
  std::optional<vocab::CauseKind> kind;  // unset when no mechanism is named
  // release: a suspect is named; node: one or a few nodes; fleet: (nearly)
  // every node at once.
  vocab::Scope scope = vocab::Scope::kNode;
  std::string detail;  // reason bits, XID code, link, ...
};

struct Regression {
  std::string metric;  // the headline metric (a service metric when one moved)
  double at = 0;       // Unix seconds: the earliest onset
  double change = 0;   // the headline metric's change (see MetricChange::change)
  bool change_relative = true;
  std::vector<std::string> gpus;    // "node-4/0", sorted
  std::vector<std::string> nodes;   // sorted
  std::vector<Suspect> suspects;    // score >= min_score, best first
  std::vector<Suspect> candidates;  // every release scored above 0, best first
  std::vector<RegressionCause> causes;
  std::vector<MetricChange> evidence;
  std::string summary;  // one sentence
};

struct ReleaseReach {
  std::string release;
  double started_at = 0;
  struct Arrival {
    std::string node;
    double at = 0;          // Unix seconds: serving the release there
    bool observed = false;  // from a restart seen in telemetry (else started_at)
  };
  std::vector<Arrival> arrivals;  // in the order it reached them
  // Its pooled effect (docs/analysis-method.md §2) on each measure users
  // care about that it could be told apart on: a release with no
  // regression still shows how close it came, and how small an effect the
  // data could have shown.
  struct Effect {
    std::string metric;
    double change = 0;  // relative (after / before - 1), or absolute
    double low = 0;     // its 99% interval
    double high = 0;
    double z = 0;  // positive: harmful
    bool relative = true;
  };
  std::vector<Effect> effects;
};

struct CorrelateReport {
  double from = 0;  // Unix seconds with data; with none, the range asked for (0: unset)
  double to = 0;
  std::int64_t resolution_s = 0;
  int gpus = 0;
  int nodes = 0;
  std::vector<ReleaseReach> releases;   // the releases considered, by started_at
  std::vector<Regression> regressions;  // by `at`
};

// Reads `replay` to its end and correlates its regressions with `releases`.
// Errors: the replay's (bad input, "FILE:LINE:COL: ..."); kInvalidArgument
// for options out of range; a replay with no tick in range gives an empty
// report, not an error.
Result<CorrelateReport> Correlate(Replay& replay, const std::vector<releases::Release>& releases,
                                  const CorrelateOptions& options);

// The series names the correlation reads (DCGM fields also under their
// DCGM 4.6 names; histograms as their `_bucket`, `_sum` and `_count`
// series): what to select from a store or a Prometheus.
std::vector<std::string> CorrelateInputNames();

// docs/contracts.md §7's JSON: {"regressions": [...]} plus "from", "to",
// "resolution_s" and "releases" (each release's arrivals).
std::string CorrelateReportJson(const CorrelateReport& report);

// A few lines per regression, for a terminal.
std::string CorrelateReportText(const CorrelateReport& report);

}  // namespace gpucanary::analysis::correlate
