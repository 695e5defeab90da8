// The facade of the judge engine and its per-tick phases. The rooms it runs
// (docs/analysis-method.md, "Code layout"):
//   fleet.{h,cc}     the GPUs and nodes, their switch to the release, this tick's values
//   rules.{h,cc}     the hard rules, their findings' scope, evidence windows
//   measures.{h,cc}  the measures and their block comparisons (count_tests.cc, tail.cc)
//   verdict.{h,cc}   failing measures' findings and scope, the verdict, scores
//   report.{h,cc}    the Report
//   diagnose.{h,cc}  signatures -> cause kinds, the sentences

#include "analysis/judge/judge.h"

#include <set>
#include <utility>

#include "analysis/judge/fleet.h"
#include "analysis/judge/internal.h"
#include "analysis/judge/measures.h"
#include "analysis/judge/report.h"
#include "analysis/judge/rules.h"
#include "analysis/judge/verdict.h"

namespace gpucanary::analysis {

namespace ji = judge_internal;

std::vector<std::string> JudgeInputNames(const Policy& policy) {
  std::set<std::string> names(ji::kGpuSlotNames.begin(), ji::kGpuSlotNames.end());
  // Every server's samples of the measures the judge always reads (tokens,
  // per-token latency, and the running batch they are compared at) and of
  // the measures the policy names.
  std::set<vocab::ServiceMeasure> measures = {vocab::ServiceMeasure::kGeneratedTokens,
                                              vocab::ServiceMeasure::kPerTokenLatency,
                                              vocab::ServiceMeasure::kRunningRequests};
  std::vector<const MetricPolicy*> entries;
  for (const MetricPolicy& mp : policy.metrics) entries.push_back(&mp);
  for (const MetricPolicy& mp : policy.without_service) entries.push_back(&mp);
  for (const MetricPolicy* entry : entries) {
    const MetricPolicy& mp = *entry;
    if (mp.gpu_measure) continue;  // from the fixed GPU fields
    if (mp.measure) {
      measures.insert(*mp.measure);
      continue;
    }
    switch (mp.kind) {
      case MetricPolicy::Kind::kMean:
        names.insert({mp.name + "_sum", mp.name + "_count"});
        break;
      case MetricPolicy::Kind::kP99:
        names.insert(mp.name + "_bucket");
        break;
      default:
        names.insert(mp.name);
        break;
    }
  }
  for (const vocab::ServiceMetric& row : vocab::ServiceMetrics()) {
    if (!measures.contains(row.measure)) continue;
    for (std::string& sample : vocab::SampleNames(row)) names.insert(std::move(sample));
  }
  return {names.begin(), names.end()};
}

namespace {

ji::Timeline TimelineOf(const JudgeOptions& options) {
  ji::Timeline time;
  time.release_start = options.release_start_s;
  time.warmup_s = static_cast<std::int64_t>(options.policy.warmup_s);
  return time;
}

}  // namespace

// The rooms, wired once: they hold references to each other, so the Impl
// never moves (the Judge moves its pointer).
class Judge::Impl {
 public:
  explicit Impl(JudgeOptions options)
      : opt_(std::move(options)),
        time_(TimelineOf(opt_)),
        fleet_(opt_.policy, time_),
        rules_(opt_.policy, fleet_, findings_),
        measures_(opt_.policy, time_, fleet_,
                  [this](std::size_t m, int unit, std::int64_t t) {
                    verdict_.OnMetricWorse(m, unit, t);
                  }),
        verdict_(opt_.policy, time_, fleet_, measures_, rules_, findings_) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void Add(const Tick& tick, const Catalog& catalog);
  Report Snapshot() const;
  Report Finish();
  void SetTap(Tap tap) { measures_.SetTap(std::move(tap)); }

 private:
  void SwitchNodes(std::int64_t t);

  JudgeOptions opt_;
  ji::Timeline time_;
  std::int64_t ignored_ticks_ = 0;
  bool history_closed_ = false;
  ji::Fleet fleet_;
  // Rule hits and failing metrics, in the order found: the rules add and
  // scope theirs, the verdict adds the metrics' and marks what fails.
  std::vector<ji::MetricFinding> findings_;
  ji::HardRules rules_;
  ji::Measures measures_;
  ji::VerdictTracker verdict_;
};

void Judge::Impl::Add(const Tick& tick, const Catalog& catalog) {
  const std::int64_t t = tick.time_s;
  if (time_.last_tick && t <= *time_.last_tick) {
    ++ignored_ticks_;
    return;
  }
  if (!time_.first_tick) time_.first_tick = t;
  time_.last_tick = t;
  // Read the tick.
  fleet_.Sync(catalog);
  measures_.SyncFamilies(*catalog.metrics);
  rules_.Track(fleet_.gpus().size());
  fleet_.Read(tick);
  fleet_.TrackRestarts(t);
  if (time_.release_start && t >= *time_.release_start && !history_closed_) {
    // The history ends: close its last block.
    history_closed_ = true;
    measures_.CloseHistory();
  }
  SwitchNodes(t);
  // Hard rules against this tick's matched baseline.
  fleet_.PoolBaseline();
  rules_.Run(t);
  rules_.UpdateWindows(t);
  // Measures, then the verdict.
  measures_.Run(t, tick);
  verdict_.Update(t);
}

// Each node's findings while it switched are resolved as soon as its switch
// is known, before the next node's switch is looked at: their scope counts
// the canary nodes serving the release so far.
void Judge::Impl::SwitchNodes(std::int64_t t) {
  if (!time_.release_start) return;
  for (std::size_t i = 0; i < fleet_.nodes().size(); ++i) {
    const int node = static_cast<int>(i);
    if (fleet_.UpdateSwitch(node, t)) rules_.ResolveSwitching(node, t);
  }
}

Report Judge::Impl::Snapshot() const {
  return ji::BuildReport({.policy = opt_.policy,
                          .time = time_,
                          .fleet = fleet_,
                          .measures = measures_,
                          .rules = rules_,
                          .verdict = verdict_,
                          .findings = findings_,
                          .ignored_ticks = ignored_ticks_});
}

Report Judge::Impl::Finish() {
  measures_.Flush();
  if (time_.last_tick) {
    rules_.ResolvePending(*time_.last_tick, true);
    verdict_.Update(*time_.last_tick);
  }
  return Snapshot();
}

Judge::Judge(JudgeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Judge::~Judge() = default;
Judge::Judge(Judge&&) noexcept = default;
Judge& Judge::operator=(Judge&&) noexcept = default;

void Judge::Add(const Tick& tick, const Catalog& catalog) { impl_->Add(tick, catalog); }
Report Judge::Snapshot() const { return impl_->Snapshot(); }
Report Judge::Finish() { return impl_->Finish(); }
void Judge::SetTap(Tap tap) { impl_->SetTap(std::move(tap)); }

}  // namespace gpucanary::analysis
