// Measures' count tests (measures.h): rare events (XIDs, ECC, PCIe replays,
// request errors) compared as counts against the baseline's, given each
// arm's exposure (docs/analysis-method.md, "Statistical comparisons
// (anytime-valid)"), not as block means.

#include <cmath>
#include <optional>
#include <vector>

#include "analysis/judge/measures.h"

namespace gpucanary::analysis::judge_internal {

// Count tests: rare GPU events per GPU-second, service events per token.
void Measures::RunCount(std::size_t m, std::int64_t t) {
  const Measure& ms = measures_[m];
  TickCounts& c = tick_counts_;
  c.Reset();
  if (ms.kind == MeasureKind::kNodeCount) {
    if (ms.node_slot < 0) return;
    CountNodes(ms, t);
  } else {
    if (ms.gpu_slot < 0) return;
    CountGpus(ms, t);
  }
  if (tap_ && ms.policy_index >= 0 && t >= time_.BlockOrigin()) {
    tap_(t, ms.policy_index, c.c_ex > 0 ? std::optional<double>(c.c_ev / c.c_ex) : std::nullopt,
         c.b_ex > 0 ? std::optional<double>(c.b_ev / c.b_ex) : std::nullopt);
  }
  if (c.b_ex <= 0) return;
  if (c.c_ex > 0) FeedCount(m, 0, c.c_ev, c.c_ex, false);
  if (c.h_ex > 0) FeedCount(m, 0, c.h_ev, c.h_ex, true);
  for (const UnitCount& u : c.units) {
    if (u.phase == Phase::kJudged) FeedCount(m, u.unit, u.events, u.exposure, false);
    if (u.phase == Phase::kHistory) FeedCount(m, u.unit, u.events, u.exposure, true);
  }
  if (ms.decides) TestCounts(m, t);
}

// Service events per generated token, per node.
void Measures::CountNodes(const Measure& ms, std::int64_t t) {
  const std::vector<NodeState>& nodes = fleet_.nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeState& n = nodes[i];
    const int ni = static_cast<int>(i);
    const std::optional<double> inc = fleet_.NodeIncrease(ni, ms.node_slot);
    const std::optional<double> tokens = fleet_.NodeIncrease(ni, fleet_.tokens_slot());
    if (!inc || !tokens || *tokens <= 0) continue;
    AddCount(n.role, n.excluded, n.role == Role::kCanary ? fleet_.PhaseOf(ni, t) : Phase::kJudged,
             ni + 1, *inc, *tokens);
  }
}

// GPU events per GPU-second, of the groups that have canary GPUs.
void Measures::CountGpus(const Measure& ms, std::int64_t t) {
  const std::vector<GpuState>& gpus = fleet_.gpus();
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const GpuState& s = gpus[g];
    if (fleet_.group_canary(s.group) == 0) continue;
    const std::optional<double> inc = fleet_.GpuIncrease(static_cast<int>(g), ms.gpu_slot);
    if (!inc) continue;
    AddCount(s.role, s.excluded,
             s.role == Role::kCanary ? fleet_.PhaseOf(s.node, t) : Phase::kJudged,
             static_cast<int>(g) + 1, *inc, 1.0);
  }
}

void Measures::AddCount(Role role, bool excluded, Phase ph, int unit, double ev, double ex) {
  TickCounts& c = tick_counts_;
  if (excluded || ex <= 0) return;
  if (role == Role::kBaseline) {
    c.b_ev += ev;
    c.b_ex += ex;
    return;
  }
  c.units.push_back({unit, ev, ex, ph});
  if (ph == Phase::kJudged) c.c_ev += ev, c.c_ex += ex;
  if (ph == Phase::kHistory) c.h_ev += ev, c.h_ex += ex;
}

// A unit's events against the baseline's this tick, given its share of the
// exposure; in its history, only summed.
void Measures::FeedCount(std::size_t m, int unit, double ev, double ex, bool history) {
  const TickCounts& c = tick_counts_;
  CountComparison& cc = CountFor(m, unit);
  if (history) {
    cc.history_canary += ev;
    cc.history_baseline += c.b_ev;
    cc.history_canary_exposure += ex;
    cc.history_baseline_exposure += c.b_ex;
    return;
  }
  cc.test.AddEvents(std::llround(ev), std::llround(c.b_ev), ex / (ex + c.b_ex));
  ++cc.ticks;
  cc.canary_exposure += ex;
  cc.baseline_exposure += c.b_ex;
}

void Measures::TestCounts(std::size_t m, std::int64_t t) {
  const Measure& ms = measures_[m];
  for (auto& [unit, cc] : counts_[m]) {
    if (cc.rejected) continue;
    if (cc.test.RejectsHigher(cc.alpha, 1.0 + ms.margin)) {
      cc.rejected = true;
      cc.decided_at = t;
      on_worse_(m, unit, t);
    }
  }
}

}  // namespace gpucanary::analysis::judge_internal
