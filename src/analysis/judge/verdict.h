#pragma once
// The judge's verdict (docs/analysis-method.md, "Release or node (scope)"
// and "Verdict"): a failing measure becomes a finding with its scope (the
// release, or the units that were already like that or that clean siblings
// clear) and the mechanism its signature points to; the findings that count
// against the release fail it; the release passes once every required
// measure is shown not worse and enough canary GPUs are healthy. Scores are
// -log10 of the smallest error rate at which the decision still holds.
//
// Thread-compatible. Internal to the judge.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/judge/diagnose.h"
#include "analysis/judge/fleet.h"
#include "analysis/judge/internal.h"
#include "analysis/judge/measures.h"
#include "analysis/judge/rules.h"
#include "analysis/policy/policy.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis::judge_internal {

class VerdictTracker {
 public:
  // Everything passed must outlive the tracker. It adds metric findings to
  // `findings`, marks those that fail the release, and takes the units of a
  // node-scoped one out of `fleet`'s pools.
  VerdictTracker(const Policy& policy, const Timeline& time, Fleet& fleet, const Measures& measures,
                 const HardRules& rules, std::vector<MetricFinding>& findings);

  // Measure m was shown worse than its margin on `unit` (0: whole canary) at
  // tick t (Measures::WorseSink).
  void OnMetricWorse(std::size_t m, int unit, std::int64_t t);
  // The verdict as of tick t: which findings fail the release, and whether
  // (and since when) it passes.
  void Update(std::int64_t t);

  // Relative changes of the signature metrics on the whole canary, now.
  Signature CurrentSignature() const;
  // The fail's score: the strongest failing finding's.
  double FailScore() const;
  // The pass's score: the weakest critical measure's.
  double PassScore() const;
  // No service metric seen and the policy has without_service entries: the
  // canary is judged from GPU telemetry alone.
  bool JudgedWithoutService() const;
  std::optional<std::int64_t> failed_at() const { return failed_at_; }
  std::optional<std::int64_t> pass_since() const { return pass_since_; }

  // The measures a pass requires now (indices into the measures' list).
  std::vector<std::size_t> RequiredMeasures() const;
  // At least half of the canary GPUs are not node-faulted.
  bool CanaryHealthy() const;
  // The kind of a throttle rule finding on any of the finding's GPUs.
  std::optional<vocab::CauseKind> RuleKindOn(const MetricFinding& f) const;

 private:
  // Canary units of a failing measure, by what their own comparisons show.
  struct UnitTally {
    std::set<int> harmed;
    std::set<int> preexisting;  // already like that before the release
    bool witness = false;       // a clean unit
  };

  FindingScope ScopeForMeasure(std::size_t m, int seed_unit, std::vector<int>* affected) const;
  void TallyCountUnits(std::size_t m, int seed_unit, UnitTally& tally) const;
  void TallyBlockUnits(std::size_t m, int seed_unit, UnitTally& tally) const;
  std::int64_t MetricFindingSince(std::int64_t t) const;
  std::vector<int> CanaryUnits(bool gpus) const;
  vocab::CauseKind MetricFindingKind(std::size_t m, FindingScope scope) const;
  bool ExplainedByFleetEvent(vocab::CauseKind kind) const;
  void ExcludeUnits(const MetricFinding& f);
  double MeasureChange(int gpu_slot) const;
  double FindingScore(const MetricFinding& f) const;
  void MarkFailing();
  // A canary that stops working while its baseline works fails the release
  // (docs/analysis-method.md, "Hard rules": idle canary).
  void WatchWork(std::int64_t t);
  // A canary node whose server keeps restarting after the release while no
  // baseline server does fails it (docs/analysis-method.md, "Hard rules":
  // crash loop).
  void WatchRestarts(std::int64_t t);
  // Mean activity (utilisation, else SM active, as a fraction) of one arm's
  // GPUs this tick; nullopt when none reports either.
  std::optional<double> ArmActivity(Role role) const;
  bool RequiredMeasuresPass() const;
  std::int64_t PassDecidedAt(std::int64_t t) const;

  const Policy& policy_;
  const Timeline& time_;
  Fleet& fleet_;
  const Measures& measures_;
  const HardRules& rules_;
  std::vector<MetricFinding>& findings_;
  std::optional<std::int64_t> failed_at_;
  std::optional<std::int64_t> pass_since_;
  std::optional<std::int64_t> idle_since_;  // first second of the canary's idle streak
  bool idle_found_ = false;
  std::set<int> crashloop_nodes_;  // canary nodes already found crash-looping
};

}  // namespace gpucanary::analysis::judge_internal
