#pragma once
// The judge engine (docs/analysis-method.md): fed one 1 s tick at a time —
// from a recording's replay (`gpucanary judge`) or, later, from the live
// scraper — it runs the hard rules, the block comparisons (anytime-valid
// confidence sequences) and the count tests for every policy metric, on the
// whole canary and on each canary GPU (or node, for service metrics), and
// keeps a verdict that is valid however often it is read.
//
//   Judge judge({.policy = DefaultPolicy(), .release_start_s = t0});
//   while (replay->Next(tick)) judge.Add(tick, Catalog::Of(*replay));
//   Report report = judge.Finish();
//
// Cost: O(points in the tick) per tick plus O(units x metrics) per closed
// block; nothing is kept per tick, so the cost of a second of data does not
// grow with the window.
//
// Thread-compatible.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/policy/policy.h"
#include "analysis/replay/replay.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis {

// The entities a tick's indices refer to. The replay grows these as it reads;
// the live scraper keeps its own. Every index a tick uses must be valid.
struct Catalog {
  const std::vector<GpuInfo>* gpus = nullptr;
  const std::vector<NodeInfo>* nodes = nullptr;
  const std::vector<MetricInfo>* metrics = nullptr;

  static Catalog Of(const Replay& replay) {
    return Catalog{&replay.gpus(), &replay.nodes(), &replay.metrics()};
  }
};

struct JudgeOptions {
  Policy policy;
  // Unix seconds at which the release started on the canary. Canary ticks
  // before it are the canary GPUs' own history; unset: no history, every
  // tick is judged.
  std::optional<std::int64_t> release_start_s;
};

// The verdict is the vocabulary's (vocab/vocab.h); VerdictName is its wire
// name, vocab::Name.
using vocab::Verdict;
inline std::string_view VerdictName(Verdict verdict) { return vocab::Name(verdict); }

struct Evidence {
  std::string metric;     // a telemetry name, or a derived one ("tokens_per_dram_active_s")
  double baseline = 0.0;  // NaN: not known
  double canary = 0.0;    // NaN: not known
  std::string unit;       // "MHz", "W", "ratio", ... ("" if none)
};

struct Cause {
  vocab::CauseKind kind{};         // docs/contracts.md §6
  vocab::Scope scope{};            // release or node
  std::vector<std::string> gpus;   // "node-4/0", sorted
  std::vector<std::string> nodes;  // the nodes the GPUs sit on (to isolate, for scope node)
  double since = 0.0;              // Unix seconds: when the cause began (first affected tick)
  double decided_at = 0.0;         // Unix seconds: the tick that established it
  bool failing = false;            // counts against the release (scope release and harmful)
  std::string summary;             // one sentence an SRE can act on
  std::vector<Evidence> evidence;
  std::string origin;  // what found it: "rule:throttle", "metric:DCGM_FI_DEV_SM_CLOCK", ...
};

struct MetricResult {
  std::string name;
  std::string kind;    // "gauge", "rate", "mean", "p99", "count"
  std::string better;  // "higher", "lower"
  double margin = 0.0;
  bool critical = false;
  double baseline = 0.0;  // NaN: no data
  double canary = 0.0;    // NaN: no data
  double change = 0.0;    // relative, canary vs baseline; NaN: no data
  // Anytime-valid interval for the relative change; +-inf when too few
  // blocks; NaN for count metrics (their test gives no interval).
  double interval_lo = 0.0;
  double interval_hi = 0.0;
  // "pass" (shown not worse than the margin), "low"/"high" (worse than the
  // margin, in that direction), "inconclusive" (neither yet), "no_data".
  std::string result;
  double detectable_effect = 0.0;  // the interval's half-width (relative); NaN if none
  std::int64_t blocks = 0;         // blocks compared (count metrics: events seen)
  std::optional<double> decided_at;
};

struct Report {
  Verdict verdict = Verdict::kInconclusive;
  std::optional<double> decided_at;  // Unix seconds of the tick that completed the decision
  // -log10 of the smallest error rate at which a fail (or pass) still holds;
  // 0 when inconclusive.
  double score = 0.0;
  std::vector<Cause> causes;
  std::vector<MetricResult> metrics;  // policy order, whole canary
  std::optional<double> release_start;
  std::optional<double> first_tick, last_tick;
  int canary_gpus = 0;
  int baseline_gpus = 0;
  // Whether either arm exposed a service metric (an inference server's).
  // False: judged from GPU telemetry alone (the policy's without_service
  // measures), and a note says so.
  bool service_metrics_seen = true;
  std::vector<std::string> notes;  // what could not be compared and why
};

// The sample names a judge with `policy` reads (canonical DCGM names; a
// histogram as its `_sum` and `_count` series for a mean, its `_bucket` series
// for a p99): the rules' and diagnostics' fixed fields plus the policy's
// metrics, sorted and unique. What a live canary asks a remote Prometheus for
// (docs/canaries.md, "History from Prometheus"); other series change nothing.
std::vector<std::string> JudgeInputNames(const Policy& policy);

class Judge {
 public:
  explicit Judge(JudgeOptions options);
  ~Judge();
  Judge(Judge&&) noexcept;
  Judge& operator=(Judge&&) noexcept;

  // Feeds one tick; ticks must come in increasing time (a tick at or before
  // the previous one is ignored and counted in notes).
  void Add(const Tick& tick, const Catalog& catalog);

  // The verdict as of the last tick (open blocks not yet counted).
  Report Snapshot() const;

  // End of the data: closes the open blocks and returns the final report.
  // The judge must not be fed afterwards.
  Report Finish();

  // For comparison judges (the Kayenta-style baseline): called once per
  // judged tick (at or after release start + warm-up) and policy metric with
  // the whole canary's and the pooled baseline's value at that tick.
  using Tap = std::function<void(std::int64_t tick, int policy_metric, std::optional<double> canary,
                                 std::optional<double> baseline)>;
  void SetTap(Tap tap);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucanary::analysis
