#include "analysis/judge/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

namespace gpucanary::analysis::judge_internal {
namespace {

// Observations a unit needs to count as affected or clean: three p99 blocks,
// or thirty seconds.
std::int64_t MinScopeObservations(const Comparison& cmp) { return cmp.per_second ? 30 : 3; }
constexpr double kMinLogAlpha = -690;  // log(alpha) ~ 1e-300

double ScoreForAlpha(double alpha_used, double policy_alpha, double alpha_star) {
  // alpha_star is the error rate of the single comparison at which the
  // decision still holds; scale it back to the whole canary's budget.
  const double total = alpha_star * policy_alpha / alpha_used;
  // Capped at 30: beyond that the number says nothing more.
  return -std::log10(std::clamp(total, 1e-30, 1.0));
}

// The decision the comparison's confidence sequence supports at error rate
// alpha (not its running intersection: the score is of the interval alone).
stats::Decision DecisionAt(const Comparison& cmp, const Measure& ms, double alpha) {
  return Decide(ms.better, stats::RelativeChange(cmp.IntervalAt(alpha)), ms.margin);
}

// Bisection on log(alpha) for the smallest alpha at which `holds` (true from
// some alpha up) still holds. REQUIRES: it holds at 0.5 and not at the floor.
template <typename Holds>
double BisectLogAlpha(const Holds& holds) {
  double lo = kMinLogAlpha;
  double hi = std::log(0.5);
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (holds(std::exp(mid)) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace

VerdictTracker::VerdictTracker(const Policy& policy, const Timeline& time, Fleet& fleet,
                               const Measures& measures, const HardRules& rules,
                               std::vector<MetricFinding>& findings)
    : policy_(policy),
      time_(time),
      fleet_(fleet),
      measures_(measures),
      rules_(rules),
      findings_(findings) {}

// ---------------------------------------------------------------------------
// Failing measures

void VerdictTracker::OnMetricWorse(std::size_t m, int unit, std::int64_t t) {
  const Measure& ms = measures_.list()[m];
  MetricFinding f;
  f.measure = static_cast<int>(m);
  f.measure_unit = unit;
  f.origin = std::string(IsCountKind(ms.kind) ? "count:" : "metric:") + ms.name;
  f.unit_is_gpu = !IsNodeLevel(ms.kind);
  f.decided_at = t;
  f.critical = true;
  std::vector<int> affected;
  f.scope = ScopeForMeasure(m, unit, &affected);
  for (int u : affected) f.units.push_back(u - 1);
  f.since = MetricFindingSince(t);
  // Harm on the whole canary with no unit yet resolved: all canary units.
  if (f.units.empty() && unit == 0) f.units = CanaryUnits(f.unit_is_gpu);
  f.kind = MetricFindingKind(m, f.scope);
  // A unit the rules already named (a brake, a cap on these GPUs) slows for
  // that mechanism, whatever scope the rule's finding got.
  if (f.scope != FindingScope::kRelease) {
    if (const std::optional<vocab::CauseKind> rule = RuleKindOn(f)) f.kind = *rule;
  }
  if (f.scope == FindingScope::kRelease && ExplainedByFleetEvent(f.kind)) {
    f.scope = FindingScope::kFleet;
  }
  if (f.scope == FindingScope::kNode) ExcludeUnits(f);
  findings_.push_back(std::move(f));
}

std::optional<vocab::CauseKind> VerdictTracker::RuleKindOn(const MetricFinding& f) const {
  std::set<int> gpus;
  for (int u : f.units) {
    if (f.unit_is_gpu) {
      gpus.insert(u);
      continue;
    }
    for (std::size_t g = 0; g < fleet_.gpus().size(); ++g) {
      if (fleet_.gpus()[g].node == u) gpus.insert(static_cast<int>(g));
    }
  }
  for (const MetricFinding& r : findings_) {
    if (r.measure >= 0 || !r.unit_is_gpu || r.origin != "rule:throttle") continue;
    for (int u : r.units) {
      if (gpus.count(u) != 0) return r.kind;
    }
  }
  return std::nullopt;
}

// A clock mechanism the rules saw on the baseline too (a fleet-wide heat or
// power event) explains a slower canary, unless the canary adds to it: runs
// hotter than the baseline by more than 3 C, or draws 5% more power.
bool VerdictTracker::ExplainedByFleetEvent(vocab::CauseKind kind) const {
  using vocab::CauseKind;
  const auto clock_kind = [](CauseKind k) {
    return k == CauseKind::kThermalThrottle || k == CauseKind::kHwSlowdown ||
           k == CauseKind::kPowerCap || k == CauseKind::kPowerBrake;
  };
  if (!clock_kind(kind)) return false;
  // A facility power cap without throttle reasons leaves no rule finding:
  // the rules infer it from the baseline's power at its limit.
  const bool fleet_event =
      std::any_of(findings_.begin(), findings_.end(),
                  [&](const MetricFinding& f) {
                    return f.scope == FindingScope::kFleet && f.measure < 0 && clock_kind(f.kind);
                  }) ||
      (kind == CauseKind::kPowerCap && rules_.FleetPowerCapped());
  if (!fleet_event) return false;
  const Signature s = CurrentSignature();
  if (s.temp_c - s.temp_baseline_c > 3) return false;
  if (s.power > 0.05) return false;
  return true;
}

// The first judged second of the canary (the release serving after its
// warm-up), the earliest the comparison could see it; else the release start
// (or the first tick).
std::int64_t VerdictTracker::MetricFindingSince(std::int64_t t) const {
  std::optional<std::int64_t> first_serving;
  for (const NodeState& n : fleet_.nodes()) {
    if (n.role == Role::kCanary && n.since) {
      first_serving = std::min(first_serving.value_or(*n.since), *n.since);
    }
  }
  if (first_serving) return *first_serving + static_cast<std::int64_t>(policy_.warmup_s);
  return time_.release_start.value_or(time_.first_tick.value_or(t));
}

std::vector<int> VerdictTracker::CanaryUnits(bool gpus) const {
  std::vector<int> units;
  if (gpus) {
    for (std::size_t g = 0; g < fleet_.gpus().size(); ++g) {
      const GpuState& s = fleet_.gpus()[g];
      if (s.role == Role::kCanary && !s.excluded) units.push_back(static_cast<int>(g));
    }
  } else {
    for (std::size_t i = 0; i < fleet_.nodes().size(); ++i) {
      const NodeState& n = fleet_.nodes()[i];
      if (n.role == Role::kCanary && !n.excluded) units.push_back(static_cast<int>(i));
    }
  }
  return units;
}

// A hardware mechanism already found for the release explains a slower
// service; otherwise the signature names it.
vocab::CauseKind VerdictTracker::MetricFindingKind(std::size_t m, FindingScope scope) const {
  if (scope == FindingScope::kRelease) {
    for (const MetricFinding& other : findings_) {
      if (other.scope == FindingScope::kRelease && other.measure < 0) return other.kind;
    }
  }
  const Measure& ms = measures_.list()[m];
  const Signature signature = CurrentSignature();
  if (ms.kind == MeasureKind::kDramEff) return ClassifyDramEfficiencyFailure(signature);
  return ClassifyMetricFailure(ms.name, !IsNodeLevel(ms.kind), signature);
}

void VerdictTracker::ExcludeUnits(const MetricFinding& f) {
  for (int u : f.units) {
    if (f.unit_is_gpu) {
      fleet_.ExcludeGpu(u);
    } else {
      fleet_.ExcludeNodeAndItsGpus(u);
    }
  }
}

// Scope of a failing measure: which canary units (GPUs or nodes) show the
// harm, by their own point estimates over at least kMinScopeBlocks blocks
// (docs/analysis-method.md, "Release or node (scope)"). The release when the
// harm is on enough canary nodes, or when no unit is clean; a node when clean
// units witness that the release runs fine elsewhere, or when every harmed
// unit was already like that before the release.
FindingScope VerdictTracker::ScopeForMeasure(std::size_t m, int seed_unit,
                                             std::vector<int>* affected) const {
  const Measure& ms = measures_.list()[m];
  const bool gpu_unit = !IsNodeLevel(ms.kind);
  UnitTally tally;
  if (IsCountKind(ms.kind)) {
    TallyCountUnits(m, seed_unit, tally);
  } else {
    TallyBlockUnits(m, seed_unit, tally);
  }
  if (seed_unit != 0 && tally.preexisting.count(seed_unit) == 0) tally.harmed.insert(seed_unit);
  affected->assign(tally.harmed.begin(), tally.harmed.end());
  affected->insert(affected->end(), tally.preexisting.begin(), tally.preexisting.end());
  std::set<int> nodes;
  for (int u : tally.harmed) {
    nodes.insert(gpu_unit ? fleet_.gpus()[static_cast<std::size_t>(u - 1)].node : u - 1);
  }
  const int n_aff = static_cast<int>(nodes.size());
  const int canary_nodes = fleet_.CanaryNodeCount();
  if (n_aff >= 2 && 2 * n_aff >= canary_nodes) return FindingScope::kRelease;
  if (tally.harmed.empty() && !tally.preexisting.empty()) return FindingScope::kNode;
  if (tally.witness && !tally.harmed.empty()) return FindingScope::kNode;
  return FindingScope::kRelease;
}

void VerdictTracker::TallyCountUnits(std::size_t m, int seed_unit, UnitTally& tally) const {
  const Measure& ms = measures_.list()[m];
  const double half = ms.margin / 2;
  for (const auto& [unit, cc] : measures_.counts(m)) {
    if (unit == 0) continue;
    // Already there: events before the release at a rate the release has
    // not raised by more than the margin (so far).
    const double hist_rate =
        cc.history_canary_exposure > 0 ? cc.history_canary / cc.history_canary_exposure : 0.0;
    const double events = static_cast<double>(cc.test.canary_events());
    const double cur_rate = cc.canary_exposure > 0 ? events / cc.canary_exposure : 0.0;
    if (cc.history_canary >= 3 && events > 0 && cur_rate <= (1 + ms.margin) * hist_rate) {
      tally.preexisting.insert(unit);
      continue;
    }
    // Enough exposure to tell (30 s of it); a unit without events is clean.
    if (cc.ticks < 30) continue;
    const bool worse = cc.rate_ratio() > 1 + half;
    if (!worse && unit != seed_unit) {
      tally.witness = true;
      continue;
    }
    tally.harmed.insert(unit);
  }
}

void VerdictTracker::TallyBlockUnits(std::size_t m, int seed_unit, UnitTally& tally) const {
  const Measure& ms = measures_.list()[m];
  const double half = ms.margin / 2;
  for (const auto& [unit, cmp] : measures_.comparisons(m)) {
    if (unit == 0 || cmp.observations() < MinScopeObservations(cmp)) continue;
    const double change = cmp.change();
    if (!Worse(ms.better, change, half) && unit != seed_unit) {
      tally.witness = true;
      continue;
    }
    // Already there before the release: the history was as bad (beyond the
    // margin) and the release made it no worse by another margin.
    const double history_change = cmp.history_change();
    const double added = (1 + change) / (1 + history_change) - 1;
    const bool before = cmp.history_blocks >= MinScopeObservations(cmp) &&
                        Worse(ms.better, history_change, ms.margin) &&
                        !Worse(ms.better, added, ms.margin);
    (before ? tally.preexisting : tally.harmed).insert(unit);
  }
}

// ---------------------------------------------------------------------------
// Signature and scores

double VerdictTracker::MeasureChange(int gpu_slot) const {
  for (std::size_t m = 0; m < measures_.list().size(); ++m) {
    const Measure& ms = measures_.list()[m];
    if (ms.kind != MeasureKind::kGpuGauge || ms.gpu_slot != gpu_slot) continue;
    if (const Comparison* whole = measures_.Whole(m)) return whole->change();
  }
  return kNaN;
}

Signature VerdictTracker::CurrentSignature() const {
  Signature s;
  s.sm_clock = MeasureChange(kClock);
  s.sm_active = MeasureChange(kSmActive);
  s.occupancy = MeasureChange(kOccupancy);
  s.tensor = MeasureChange(kTensor);
  s.dram = MeasureChange(kDram);
  s.power = MeasureChange(kPower);
  s.tokens_per_dram = kNaN;
  for (std::size_t m = 0; m < measures_.list().size(); ++m) {
    if (measures_.list()[m].kind != MeasureKind::kDramEff) continue;
    if (const Comparison* whole = measures_.Whole(m)) s.tokens_per_dram = whole->change();
  }
  s.power_capped = rules_.CanaryPowerCapped();
  s.power_w = kNaN;
  s.temp_c = kNaN;
  s.temp_baseline_c = kNaN;
  for (std::size_t m = 0; m < measures_.list().size(); ++m) {
    const Measure& ms = measures_.list()[m];
    if (ms.kind != MeasureKind::kGpuGauge) continue;
    const Comparison* whole = measures_.Whole(m);
    if (whole == nullptr || whole->observations() == 0) continue;
    if (ms.gpu_slot == kPower) s.power_w = whole->canary_mean();
    if (ms.gpu_slot == kTemp) {
      s.temp_c = whole->canary_mean();
      s.temp_baseline_c = whole->baseline_mean();
    }
  }
  // The limit: the canary GPUs' enforced limit, else their model's default.
  double limit = 0;
  int with_limit = 0;
  std::optional<double> model_limit;
  const std::optional<Catalog>& catalog = fleet_.catalog();
  for (std::size_t g = 0; g < fleet_.gpus().size(); ++g) {
    if (fleet_.gpus()[g].role != Role::kCanary) continue;
    const int gi = static_cast<int>(g);
    if (const std::optional<double> l = fleet_.GpuValue(gi, kPowerLimit); l && *l > 0) {
      limit += *l;
      ++with_limit;
    }
    s.reasons_reported |= fleet_.GpuValue(gi, kReasons).has_value();
    if (!model_limit && catalog && g < catalog->gpus->size()) {
      model_limit = DefaultPowerLimitW((*catalog->gpus)[g].model_name);
    }
  }
  // No reasons to say it: a canary held at a power ceiling is the
  // power cap too, where no limit or model tells the ceiling.
  if (!s.reasons_reported && rules_.CanaryPowerPinned()) s.power_capped = true;
  s.power_limit_w = kNaN;
  if (with_limit > 0) {
    s.power_limit_w = limit / with_limit;
  } else if (model_limit) {
    s.power_limit_w = *model_limit;
    s.limit_from_model = true;
  }
  return s;
}

double VerdictTracker::FindingScore(const MetricFinding& f) const {
  const double rule_score = -std::log10(policy_.alpha);
  if (f.measure < 0) return rule_score;
  const auto m = static_cast<std::size_t>(f.measure);
  const Measure& ms = measures_.list()[m];
  if (IsCountKind(ms.kind)) {
    auto it = measures_.counts(m).find(f.measure_unit);
    if (it == measures_.counts(m).end()) return 0;
    const double log10_e = it->second.test.log_e_value() / std::log(10.0);
    return ScoreForAlpha(it->second.alpha, policy_.alpha,
                         std::pow(10.0, -std::min(log10_e, 300.0)));
  }
  auto it = measures_.comparisons(m).find(f.measure_unit);
  if (it == measures_.comparisons(m).end()) return 0;
  const Comparison& cmp = it->second;
  if (cmp.observations() < 2) return 0;
  // The smallest alpha at which the CS still lies wholly on the harmful side
  // of the margin.
  const auto holds = [&](double a) { return DecisionAt(cmp, ms, a) == stats::Decision::kWorse; };
  if (!holds(std::exp(std::log(0.5)))) return 0;
  if (holds(std::exp(kMinLogAlpha))) return ScoreForAlpha(cmp.alpha, policy_.alpha, 1e-300);
  return ScoreForAlpha(cmp.alpha, policy_.alpha, std::exp(BisectLogAlpha(holds)));
}

double VerdictTracker::FailScore() const {
  double score = 0;
  for (const MetricFinding& f : findings_) {
    if (f.failing) score = std::max(score, FindingScore(f));
  }
  return score;
}

double VerdictTracker::PassScore() const {
  double score = kInf;
  const bool without_service = JudgedWithoutService();
  for (const std::size_t m : RequiredMeasures()) {
    const Measure& ms = measures_.list()[m];
    if (!without_service && !ms.critical) continue;  // scored on the critical ones
    const Comparison* cmp = measures_.Whole(m);
    if (cmp == nullptr) continue;
    const auto holds = [&](double a) {
      return DecisionAt(*cmp, ms, a) == stats::Decision::kNotWorse;
    };
    if (!holds(std::exp(std::log(0.5)))) {
      score = std::min(score, 0.0);
      continue;
    }
    const double log_alpha = holds(std::exp(kMinLogAlpha)) ? kMinLogAlpha : BisectLogAlpha(holds);
    score = std::min(score, ScoreForAlpha(cmp->alpha, policy_.alpha, std::exp(log_alpha)));
  }
  return std::isinf(score) ? 0 : score;
}

// ---------------------------------------------------------------------------
// Verdict

void VerdictTracker::Update(std::int64_t t) {
  WatchWork(t);
  WatchRestarts(t);
  MarkFailing();
  // Pass: every required measure shown not worse on the whole canary, no
  // failing finding, and at least half of the canary GPUs healthy.
  const bool pass = !failed_at_ && RequiredMeasuresPass() && CanaryHealthy();
  if (pass && !pass_since_) pass_since_ = PassDecidedAt(t);
  if (!pass) pass_since_.reset();
}

std::optional<double> VerdictTracker::ArmActivity(Role role) const {
  double sum = 0;
  int n = 0;
  for (std::size_t g = 0; g < fleet_.gpus().size(); ++g) {
    const GpuState& s = fleet_.gpus()[g];
    if (s.role != role || s.excluded) continue;
    const int gi = static_cast<int>(g);
    if (const std::optional<double> util = fleet_.GpuValue(gi, kUtil)) {
      sum += *util / 100;
    } else if (const std::optional<double> sm = fleet_.GpuValue(gi, kSmActive)) {
      sum += *sm;
    } else {
      continue;
    }
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

// After the warm-up, a canary whose GPUs sit idle (activity under a tenth of
// the baseline's) while the baseline works (at least 20%) for kIdleSeconds
// in a row: the release stopped the GPUs from working (or no traffic reaches
// it, which the canary cannot be judged without either).
void VerdictTracker::WatchWork(std::int64_t t) {
  constexpr std::int64_t kIdleSeconds = 30;
  if (idle_found_ || !time_.release_start || t < time_.BlockOrigin()) return;
  const std::optional<double> canary = ArmActivity(Role::kCanary);
  const std::optional<double> baseline = ArmActivity(Role::kBaseline);
  if (!canary || !baseline || *baseline < 0.2 || *canary >= 0.1 * *baseline) {
    idle_since_.reset();
    return;
  }
  if (!idle_since_) idle_since_ = t;
  if (t - *idle_since_ + 1 < kIdleSeconds) return;
  idle_found_ = true;
  MetricFinding f;
  f.kind = vocab::CauseKind::kSoftwareRegression;
  f.scope = FindingScope::kRelease;
  f.origin = "rule:idle";
  f.units = CanaryUnits(true);
  f.unit_is_gpu = true;
  f.since = *idle_since_;
  f.decided_at = t;
  f.critical = true;
  char text[200];
  std::snprintf(text, sizeof text,
                "GPU activity %.0f%% (baseline %.0f%%) for %lld s after the release: the canary "
                "stopped working (no work runs on its GPUs, or no traffic reaches them)",
                *canary * 100, *baseline * 100, static_cast<long long>(kIdleSeconds));
  f.detail = text;
  findings_.push_back(std::move(f));
}

// Restarts of a canary node's server since the release start: the deploy's
// own restart and kCrashLoopRestarts - 1 more (crashes of the release) make
// a crash loop, unless a baseline server restarted as often meanwhile (an
// infrastructure event, not the release). An XID on the node's GPUs since the
// release start is the crash's mechanism, and names the cause (xid_errors;
// else software_regression). A hardware XID (the policy's critical ones: ECC,
// bus, NVLink, GSP) keeps the scope the XID rule gave it; an XID that points
// at the software (13, 31, 43, 45: a kernel faulting the GPU) or none makes
// the crash loop the release's, and the XID findings with it.
void VerdictTracker::WatchRestarts(std::int64_t t) {
  constexpr int kCrashLoopRestarts = 3;
  if (!time_.release_start) return;
  const std::int64_t start = *time_.release_start;
  const std::vector<NodeState>& nodes = fleet_.nodes();
  int baseline_most = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].role != Role::kBaseline) continue;
    baseline_most = std::max(baseline_most, fleet_.RestartsSince(static_cast<int>(i), start));
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const int node = static_cast<int>(i);
    if (nodes[i].role != Role::kCanary || crashloop_nodes_.count(node) != 0) continue;
    const int restarts = fleet_.RestartsSince(node, start);
    if (restarts < kCrashLoopRestarts || baseline_most >= kCrashLoopRestarts - 1) continue;
    crashloop_nodes_.insert(node);
    // The node's XIDs since the release start.
    std::vector<MetricFinding*> xids;
    bool hardware = false;
    bool hardware_release = false;
    for (MetricFinding& f : findings_) {
      if (f.origin != "rule:xid" || f.units.empty() || f.since < start) continue;
      if (fleet_.gpus()[static_cast<std::size_t>(f.units.front())].node != node) continue;
      xids.push_back(&f);
      hardware |= f.critical;
      hardware_release |= f.critical && f.scope == FindingScope::kRelease;
    }
    MetricFinding f;
    f.kind = xids.empty() ? vocab::CauseKind::kSoftwareRegression : vocab::CauseKind::kXidErrors;
    f.scope = hardware && !hardware_release ? FindingScope::kNode : FindingScope::kRelease;
    f.origin = "rule:crashloop";
    for (int g : (*fleet_.catalog()->nodes)[i].gpus) f.units.push_back(g);
    f.unit_is_gpu = true;
    const std::vector<std::int64_t>& at = nodes[i].restarts;
    const auto first = std::lower_bound(at.begin(), at.end(), start);
    f.since = *first;
    f.decided_at = t;
    f.critical = true;
    std::string when;
    for (auto it = first; it != at.end(); ++it) {
      when += (when.empty() ? "+" : ", +") + std::to_string(*it - start) + " s";
    }
    // The XIDs' own findings name their codes; a report merges them with
    // this one (same kind and scope).
    f.detail = "the server restarted " + std::to_string(restarts) + " times since the release (" +
               when + "); " +
               (baseline_most == 0 ? std::string("no baseline server restarted")
                                   : "no baseline server more than once") +
               ": a crash loop";
    if (!hardware) {
      for (MetricFinding* x : xids) {
        x->scope = FindingScope::kRelease;
        x->history = false;
        x->decided_at = t;
      }
    }
    if (f.scope == FindingScope::kNode) ExcludeUnits(f);
    findings_.push_back(std::move(f));
  }
}

// Which findings count against the release.
void VerdictTracker::MarkFailing() {
  std::map<vocab::CauseKind, std::set<int>> release_gpus_by_kind;
  for (const MetricFinding& f : findings_) {
    if (f.scope == FindingScope::kRelease && f.unit_is_gpu) {
      release_gpus_by_kind[f.kind].insert(f.units.begin(), f.units.end());
    }
  }
  for (MetricFinding& f : findings_) {
    if (f.failing || f.scope != FindingScope::kRelease) continue;
    if (f.measure >= 0) {
      f.failing = true;
    } else if (f.origin == "rule:xid") {
      // A critical XID fails at once; another XID when it recurs on several GPUs.
      f.failing = f.critical || release_gpus_by_kind[f.kind].size() >= 2;
    } else {
      f.failing = f.critical;
    }
    if (f.failing && !failed_at_) failed_at_ = std::max(f.decided_at, f.since);
  }
}

bool VerdictTracker::JudgedWithoutService() const {
  return !fleet_.service_seen() && !policy_.without_service.empty();
}

// The required measures: with service metrics, the critical ones if the
// policy has any, else every deciding one but the DRAM efficiency rule.
// Without (JudgedWithoutService), the without_service ones and the DRAM
// efficiency rule, those with data. Count tests never pass.
std::vector<std::size_t> VerdictTracker::RequiredMeasures() const {
  const std::vector<Measure>& measures = measures_.list();
  std::vector<std::size_t> out;
  if (JudgedWithoutService()) {
    for (std::size_t m = 0; m < measures.size(); ++m) {
      const Measure& ms = measures[m];
      if (!ms.decides || IsCountKind(ms.kind)) continue;
      if (!ms.without_service && ms.kind != MeasureKind::kDramEff) continue;
      const Comparison* whole = measures_.Whole(m);
      if (whole == nullptr || whole->observations() == 0) continue;  // no data (yet)
      out.push_back(m);
    }
    return out;
  }
  bool has_critical = false;
  for (const Measure& ms : measures) {
    has_critical |= ms.decides && ms.critical && !IsCountKind(ms.kind);
  }
  for (std::size_t m = 0; m < measures.size(); ++m) {
    const Measure& ms = measures[m];
    if (!ms.decides || IsCountKind(ms.kind) || ms.only_without_service) continue;
    if (has_critical ? !ms.critical : ms.kind == MeasureKind::kDramEff) continue;
    out.push_back(m);
  }
  return out;
}

bool VerdictTracker::RequiredMeasuresPass() const {
  const std::vector<std::size_t> required = RequiredMeasures();
  for (const std::size_t m : required) {
    const Comparison* whole = measures_.Whole(m);
    if (whole == nullptr || whole->decision != stats::Decision::kNotWorse) return false;
  }
  return !required.empty();
}

bool VerdictTracker::CanaryHealthy() const {
  int canary = 0;
  int healthy = 0;
  for (const GpuState& g : fleet_.gpus()) {
    if (g.role != Role::kCanary) continue;
    ++canary;
    healthy += !g.excluded;
  }
  return canary != 0 && 2 * healthy >= canary;
}

// The decision was completed by the last required measure's block.
std::int64_t VerdictTracker::PassDecidedAt(std::int64_t t) const {
  std::int64_t at = t;
  std::int64_t latest = 0;
  const bool without_service = JudgedWithoutService();
  for (std::size_t m = 0; m < measures_.list().size(); ++m) {
    const Comparison* whole = measures_.Whole(m);
    const Measure& ms = measures_.list()[m];
    if (ms.only_without_service && !without_service) continue;
    if (whole != nullptr && whole->decided_at && ms.decides) {
      latest = std::max(latest, *whole->decided_at);
    }
  }
  if (latest > 0) at = std::min(at, latest);
  return at;
}

}  // namespace gpucanary::analysis::judge_internal
