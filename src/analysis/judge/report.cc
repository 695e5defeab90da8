#include "analysis/judge/report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "analysis/judge/diagnose.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis::judge_internal {
namespace {

// Findings of one cause: its kind, release or node, and for a node its
// hosts ("node-2,node-5,").
using GroupKey = std::tuple<vocab::CauseKind, vocab::Scope, std::string>;

class ReportWriter {
 public:
  explicit ReportWriter(const ReportSources& in)
      : in_(in),
        gpu_info_(in.fleet.catalog() ? in.fleet.catalog()->gpus : nullptr),
        node_info_(in.fleet.catalog() ? in.fleet.catalog()->nodes : nullptr) {}

  Report Build() const;

 private:
  void AddHeader(Report& report) const;
  MetricResult ResultFor(std::size_t m) const;
  void CountResult(std::size_t m, MetricResult& r) const;
  void BlockResult(std::size_t m, MetricResult& r) const;
  std::vector<MetricFinding> NamedFindings() const;
  GroupKey GroupOf(const MetricFinding& f) const;
  // What a cause's findings name, merged.
  struct CauseParts {
    std::set<int> gpu_ids;
    std::set<std::string> gpus;   // GPU keys
    std::set<std::string> nodes;  // hosts
    std::string detail;           // the findings' details, unique, in order
    bool history = false;         // one was there before the release
  };

  Cause CauseOf(const GroupKey& key, const std::vector<const MetricFinding*>& fs) const;
  CauseParts MergeFindings(const std::vector<const MetricFinding*>& fs, bool any_rule,
                           Cause& c) const;
  void AddRuleEvidence(Cause& c, const std::set<int>& gpu_ids, double* seconds) const;
  void AddMetricEvidence(Cause& c, const MetricFinding& first_metric) const;
  void AddVerdict(Report& report) const;
  void AddNotes(Report& report) const;
  void AddLoadNote(Report& report) const;
  void AddModelNotes(Report& report) const;
  void AddWithoutServiceNote(Report& report) const;
  void AddNextSteps(Report& report) const;
  // Whether measure `name` left blocks out because the canary was handed
  // more requests than the baseline (p99 measures).
  bool NotComparedForLoad(const std::string& name) const {
    for (std::size_t m = 0; m < in_.measures.list().size(); ++m) {
      if (in_.measures.list()[m].name == name && in_.measures.tail_load(m).skipped > 0) return true;
    }
    return false;
  }

  const ReportSources& in_;
  const std::vector<GpuInfo>* gpu_info_;
  const std::vector<NodeInfo>* node_info_;
};

Report ReportWriter::Build() const {
  Report report;
  AddHeader(report);
  // Causes: findings grouped by kind and scope, node faults per node.
  const std::vector<MetricFinding> findings = NamedFindings();
  std::map<GroupKey, std::vector<const MetricFinding*>> groups;
  std::vector<GroupKey> order;
  for (const MetricFinding& f : findings) {
    const GroupKey key = GroupOf(f);
    if (groups.find(key) == groups.end()) order.push_back(key);
    groups[key].push_back(&f);
  }
  for (const GroupKey& key : order) report.causes.push_back(CauseOf(key, groups[key]));
  // Failing causes first, then by time.
  std::stable_sort(report.causes.begin(), report.causes.end(), [](const Cause& a, const Cause& b) {
    if (a.failing != b.failing) return a.failing;
    return a.decided_at < b.decided_at;
  });
  AddVerdict(report);
  AddNotes(report);
  return report;
}

void ReportWriter::AddHeader(Report& report) const {
  const Timeline& time = in_.time;
  if (time.release_start) report.release_start = static_cast<double>(*time.release_start);
  if (time.first_tick) report.first_tick = static_cast<double>(*time.first_tick);
  if (time.last_tick) report.last_tick = static_cast<double>(*time.last_tick);
  for (const GpuState& g : in_.fleet.gpus()) {
    (g.role == Role::kCanary ? report.canary_gpus : report.baseline_gpus)++;
  }
  report.service_metrics_seen = in_.fleet.service_seen();
  // The without_service-only measures are listed when they are what decides.
  const bool without_service = in_.verdict.JudgedWithoutService();
  for (std::size_t m = 0; m < in_.measures.list().size(); ++m) {
    const Measure& ms = in_.measures.list()[m];
    if (!ms.decides || (ms.only_without_service && !without_service)) continue;
    report.metrics.push_back(ResultFor(m));
  }
}

// ---------------------------------------------------------------------------
// Metrics

MetricResult ReportWriter::ResultFor(std::size_t m) const {
  const Measure& ms = in_.measures.list()[m];
  MetricResult r;
  r.name = ms.name;
  r.kind = ms.policy_kind ? std::string(MetricKindName(*ms.policy_kind)) : "ratio";
  r.better = ms.better == MetricPolicy::Better::kHigher ? "higher" : "lower";
  r.margin = ms.margin;
  // Critical: required for a pass. Without service metrics, the
  // without_service measures and the DRAM efficiency rule are.
  r.critical = in_.verdict.JudgedWithoutService()
                   ? ms.without_service || ms.kind == MeasureKind::kDramEff
                   : ms.critical;
  r.baseline = r.canary = r.change = kNaN;
  r.interval_lo = r.interval_hi = kNaN;
  r.detectable_effect = kNaN;
  r.result = "no_data";
  if (IsCountKind(ms.kind)) {
    CountResult(m, r);
  } else {
    BlockResult(m, r);
  }
  return r;
}

void ReportWriter::CountResult(std::size_t m, MetricResult& r) const {
  const CountComparison* cc = in_.measures.WholeCount(m);
  if (cc == nullptr || cc->canary_exposure <= 0) return;
  r.canary = static_cast<double>(cc->test.canary_events()) / cc->canary_exposure;
  r.baseline = static_cast<double>(cc->test.baseline_events()) / cc->baseline_exposure;
  r.change = cc->rate_ratio() - 1;
  r.blocks = cc->test.canary_events() + cc->test.baseline_events();
  r.result = cc->rejected ? "high" : "inconclusive";
  if (cc->decided_at) r.decided_at = static_cast<double>(*cc->decided_at);
}

void ReportWriter::BlockResult(std::size_t m, MetricResult& r) const {
  const Comparison* cmp = in_.measures.Whole(m);
  if (cmp == nullptr || cmp->observations() == 0) return;
  const Measure& ms = in_.measures.list()[m];
  r.blocks = cmp->observations();
  r.canary = cmp->canary_mean();
  r.baseline = cmp->baseline_mean();
  // The change the interval is about: the ratio of the arms' sums (per
  // second), the geometric mean of the block ratios (p99).
  if (cmp->per_second) {
    r.change = cmp->change();
  } else {
    r.change = cmp->cs.n() > 0 ? std::expm1(cmp->cs.mean()) : kNaN;
  }
  // An interval once the comparison may decide (its minimum of blocks or
  // seconds): the running intersection is set from then on.
  // A pass shows the interval it was decided on (at pass_alpha); anything
  // else the one a failure is decided on.
  const bool passed = cmp->decision == stats::Decision::kNotWorse;
  if (std::isfinite(cmp->lo) || std::isfinite(cmp->hi)) {
    const stats::Bounds rel = stats::RelativeChange(
        passed ? stats::Bounds{cmp->pass_lo, cmp->pass_hi} : stats::Bounds{cmp->lo, cmp->hi});
    r.interval_lo = rel.lo;
    r.interval_hi = rel.hi;
    r.detectable_effect = stats::DetectableEffect(rel);
  } else {
    r.interval_lo = -kInf;
    r.interval_hi = kInf;
  }
  switch (cmp->decision) {
    case stats::Decision::kWorse:
      r.result = ms.better == MetricPolicy::Better::kHigher ? "low" : "high";
      break;
    case stats::Decision::kNotWorse:
      r.result = "pass";
      break;
    case stats::Decision::kUndecided:
      r.result = "inconclusive";
      break;
  }
  if (cmp->decided_at) r.decided_at = static_cast<double>(*cmp->decided_at);
}

// ---------------------------------------------------------------------------
// Causes

// Metric findings are named now, from the signature as it stands: a
// mechanism the rules found for the release explains a slower service.
std::vector<MetricFinding> ReportWriter::NamedFindings() const {
  std::vector<MetricFinding> findings = in_.findings;
  std::optional<vocab::CauseKind> release_rule_kind;
  for (const MetricFinding& f : findings) {
    if (f.measure < 0 && f.scope == FindingScope::kRelease && !release_rule_kind) {
      release_rule_kind = f.kind;
    }
  }
  const Signature signature = in_.verdict.CurrentSignature();
  for (MetricFinding& f : findings) {
    if (f.measure < 0) continue;
    const Measure& ms = in_.measures.list()[static_cast<std::size_t>(f.measure)];
    if (ms.kind == MeasureKind::kDramEff) {
      f.kind = f.scope == FindingScope::kRelease && release_rule_kind
                   ? *release_rule_kind
                   : ClassifyDramEfficiencyFailure(signature);
    } else if (f.scope == FindingScope::kRelease && release_rule_kind) {
      f.kind = *release_rule_kind;
    } else if (const std::optional<vocab::CauseKind> rule = in_.verdict.RuleKindOn(f);
               rule && f.scope != FindingScope::kRelease) {
      f.kind = *rule;
    } else {
      f.kind = ClassifyMetricFailure(ms.name, !IsNodeLevel(ms.kind), signature);
    }
  }
  return findings;
}

GroupKey ReportWriter::GroupOf(const MetricFinding& f) const {
  std::string where;
  if (f.scope != FindingScope::kRelease && node_info_ != nullptr && gpu_info_ != nullptr) {
    std::set<std::string> hosts;
    for (int u : f.units) {
      hosts.insert(f.unit_is_gpu ? (*gpu_info_)[static_cast<std::size_t>(u)].host
                                 : (*node_info_)[static_cast<std::size_t>(u)].host);
    }
    for (const std::string& h : hosts) where += h + ",";
  }
  return {f.kind, ReportedScope(f.scope), where};
}

Cause ReportWriter::CauseOf(const GroupKey& key,
                            const std::vector<const MetricFinding*>& fs) const {
  Cause c;
  c.kind = std::get<0>(key);
  c.scope = std::get<1>(key);
  const bool any_rule =
      std::any_of(fs.begin(), fs.end(), [](const MetricFinding* f) { return f->measure < 0; });
  CauseParts parts = MergeFindings(fs, any_rule, c);
  for (int g : parts.gpu_ids) {
    if (gpu_info_ == nullptr) break;
    parts.gpus.insert((*gpu_info_)[static_cast<std::size_t>(g)].key);
    parts.nodes.insert((*gpu_info_)[static_cast<std::size_t>(g)].host);
  }
  c.gpus.assign(parts.gpus.begin(), parts.gpus.end());
  c.nodes.assign(parts.nodes.begin(), parts.nodes.end());

  // Evidence: rule windows for rule findings, comparisons for metric ones.
  double seconds = 0;
  if (any_rule) AddRuleEvidence(c, parts.gpu_ids, &seconds);
  const auto first_metric =
      std::find_if(fs.begin(), fs.end(), [](const MetricFinding* f) { return f->measure >= 0; });
  if (first_metric != fs.end()) {
    AddMetricEvidence(c, **first_metric);
    const std::optional<std::int64_t>& last_tick = in_.time.last_tick;
    if (last_tick && !any_rule) seconds = static_cast<double>(*last_tick) - c.since + 1;
  }
  // One line per metric: the rule window's (with its unit) wins.
  std::vector<Evidence> unique;
  for (Evidence& e : c.evidence) {
    if (std::none_of(unique.begin(), unique.end(),
                     [&](const Evidence& u) { return u.metric == e.metric; })) {
      unique.push_back(std::move(e));
    }
  }
  c.evidence = std::move(unique);
  if (parts.history) {
    parts.detail +=
        parts.detail.empty() ? "already before the release" : "; already before the release";
  }
  c.summary = SummarizeCause(c, parts.detail, seconds);
  return c;
}

// The cause's times (since: of its rule findings when it has any), whether it
// fails, its origin (the first finding's), and what its findings name: GPUs
// (a node's GPUs for a node finding), details, history.
ReportWriter::CauseParts ReportWriter::MergeFindings(const std::vector<const MetricFinding*>& fs,
                                                     bool any_rule, Cause& c) const {
  CauseParts parts;
  std::set<std::string> details;
  c.since = kInf;
  c.decided_at = kInf;
  for (const MetricFinding* f : fs) {
    for (int u : f->units) {
      if (f->unit_is_gpu) {
        parts.gpu_ids.insert(u);
      } else if (node_info_ != nullptr) {
        for (int g : (*node_info_)[static_cast<std::size_t>(u)].gpus) parts.gpu_ids.insert(g);
        parts.nodes.insert((*node_info_)[static_cast<std::size_t>(u)].host);
      }
    }
    if (!any_rule || f->measure < 0) c.since = std::min(c.since, static_cast<double>(f->since));
    c.decided_at = std::min(c.decided_at, static_cast<double>(f->decided_at));
    c.failing |= f->failing;
    if (c.origin.empty()) c.origin = f->origin;
    if (!f->detail.empty() && details.insert(f->detail).second) {
      parts.detail += (parts.detail.empty() ? "" : ", ") + f->detail;
    }
    parts.history |= f->history;
  }
  return parts;
}

// The GPUs' evidence windows, averaged per GPU then over the GPUs: the fields
// that show the cause's mechanism, canary against baseline; `seconds`, the
// longest window.
void ReportWriter::AddRuleEvidence(Cause& c, const std::set<int>& gpu_ids, double* seconds) const {
  std::array<double, kFixedGpuSlots> cs{}, bs{}, ns{};
  for (int g : gpu_ids) {
    const EvidenceWindow& w = in_.rules.window(g);
    for (std::size_t k = 0; k < kFixedGpuSlots; ++k) {
      if (w.n[k] <= 0) continue;
      cs[k] += w.canary[k] / w.n[k];
      bs[k] += w.baseline[k] / w.n[k];
      ns[k] += 1;
    }
    *seconds = std::max(*seconds, static_cast<double>(w.last - w.start + 1));
  }
  const auto evidence = [&](int slot, std::string unit) {
    const auto k = static_cast<std::size_t>(slot);
    if (ns[k] <= 0) return;
    c.evidence.push_back(
        {std::string(kGpuSlotNames[k]), bs[k] / ns[k], cs[k] / ns[k], std::move(unit)});
  };
  using vocab::CauseKind;
  if (c.kind == CauseKind::kPowerBrake || c.kind == CauseKind::kHwSlowdown ||
      c.kind == CauseKind::kThermalThrottle || c.kind == CauseKind::kPowerCap) {
    evidence(kClock, "MHz");
    if (c.kind == CauseKind::kThermalThrottle) evidence(kTemp, "C");
    if (c.kind == CauseKind::kPowerCap) {
      evidence(kPower, "W");
      evidence(kPowerLimit, "W");
    }
  } else if (c.kind == CauseKind::kPcieDowntrain) {
    evidence(kWidth, "lanes");
    evidence(kGen, "gen");
    evidence(kPcieRx, "B/s");
  } else if (c.kind == CauseKind::kEccErrors || c.kind == CauseKind::kXidErrors) {
    evidence(kClock, "MHz");
  }
}

// The failing metric on the whole canary, then the signature: the other
// metrics that moved.
void ReportWriter::AddMetricEvidence(Cause& c, const MetricFinding& first_metric) const {
  const MetricResult r = ResultFor(static_cast<std::size_t>(first_metric.measure));
  c.evidence.push_back({r.name, r.baseline, r.canary, ""});
  const std::vector<Measure>& measures = in_.measures.list();
  for (int slot : {kClock, kOccupancy, kSmActive, kTensor, kDram}) {
    for (std::size_t k = 0; k < measures.size(); ++k) {
      const Measure& ms = measures[k];
      if (ms.kind != MeasureKind::kGpuGauge || ms.gpu_slot != slot || ms.name == r.name) continue;
      const Comparison* cmp = in_.measures.Whole(k);
      if (cmp == nullptr || cmp->observations() == 0) continue;
      c.evidence.push_back({ms.name, cmp->baseline_mean(), cmp->canary_mean(), ""});
      break;
    }
  }
  // A clock cause found from the metrics has no reason bits: the power
  // against its limit and the temperature say which it is.
  using vocab::CauseKind;
  if (c.kind != CauseKind::kPowerCap && c.kind != CauseKind::kHwSlowdown &&
      c.kind != CauseKind::kThermalThrottle) {
    return;
  }
  for (int slot : {kPower, kTemp}) {
    for (std::size_t k = 0; k < measures.size(); ++k) {
      const Measure& ms = measures[k];
      if (ms.kind != MeasureKind::kGpuGauge || ms.gpu_slot != slot) continue;
      const Comparison* cmp = in_.measures.Whole(k);
      if (cmp == nullptr || cmp->observations() == 0) continue;
      c.evidence.push_back(
          {ms.name, cmp->baseline_mean(), cmp->canary_mean(), slot == kPower ? "W" : "C"});
      break;
    }
  }
  const Signature sig = in_.verdict.CurrentSignature();
  if (!std::isnan(sig.power_limit_w)) {
    c.evidence.push_back({std::string(kGpuSlotNames[kPowerLimit]), kNaN, sig.power_limit_w,
                          sig.limit_from_model ? "W (the model's default)" : "W"});
  }
}

// ---------------------------------------------------------------------------
// Verdict and notes

void ReportWriter::AddVerdict(Report& report) const {
  const VerdictTracker& verdict = in_.verdict;
  if (verdict.failed_at()) {
    report.verdict = Verdict::kFail;
    report.decided_at = static_cast<double>(*verdict.failed_at());
    report.score = verdict.FailScore();
  } else if (verdict.pass_since()) {
    report.verdict = Verdict::kPass;
    report.decided_at = static_cast<double>(*verdict.pass_since());
    report.score = verdict.PassScore();
  } else {
    report.verdict = Verdict::kInconclusive;
  }
}

// GPUs are compared only within one model (the modelName label): a canary
// model without a baseline of its own is named and left out; GPUs without the
// label form one "unknown" model, compared as one when both arms have them.
void ReportWriter::AddModelNotes(Report& report) const {
  const Fleet& fleet = in_.fleet;
  for (const auto& [name, id] : fleet.groups()) {
    const int canary = fleet.group_canary(id);
    const int baseline = fleet.group_baseline(id);
    if (canary == 0) continue;
    const std::string model =
        name.empty() ? "of unknown model (no modelName label)" : "of model '" + name + "'";
    if (baseline == 0) {
      report.notes.push_back(std::to_string(canary) + " canary GPU(s) " + model +
                             " have no baseline GPU of the same model: not compared");
    } else if (name.empty()) {
      report.notes.push_back(std::to_string(canary) + " canary and " + std::to_string(baseline) +
                             " baseline GPU(s) carry no modelName label: compared as one model "
                             "(give an imported log its model with `gpucanary import --model`)");
    }
  }
}

// A canary judged from GPU telemetry alone: say so, and on what.
void ReportWriter::AddWithoutServiceNote(Report& report) const {
  std::string with_data;
  std::string without_data;
  for (const MetricResult& r : report.metrics) {
    if (!r.critical) continue;
    std::string& list = r.result == "no_data" ? without_data : with_data;
    list += (list.empty() ? "" : ", ") + r.name;
  }
  std::string note =
      "no service metrics seen (neither arm exposes an inference server's metrics): judged from "
      "GPU telemetry alone; a pass needs ";
  note += with_data.empty() ? "a GPU measure with data, and none has any" : with_data;
  note += " shown not worse";
  if (!without_data.empty()) note += " (no data: " + without_data + ")";
  report.notes.push_back(std::move(note));
}

void ReportWriter::AddNotes(Report& report) const {
  const Fleet& fleet = in_.fleet;
  report.notes = fleet.notes();
  if (report.canary_gpus == 0) report.notes.emplace_back("no canary GPU in the data");
  if (report.baseline_gpus == 0) report.notes.emplace_back("no baseline GPU in the data");
  AddModelNotes(report);
  if (in_.ignored_ticks > 0) {
    report.notes.push_back(std::to_string(in_.ignored_ticks) +
                           " tick(s) out of time order ignored");
  }
  if (in_.verdict.JudgedWithoutService()) {
    AddWithoutServiceNote(report);
  } else {
    for (const MetricResult& r : report.metrics) {
      if (r.critical && r.result == "no_data" && !NotComparedForLoad(r.name)) {
        report.notes.push_back(
            r.name +
            ": critical and no data in the recordings: the judge cannot pass "
            "the release (change the policy if this service does not expose it)");
      }
    }
  }
  AddLoadNote(report);
  std::set<std::string> fleet_kinds;
  for (const Cause& c : report.causes) {
    if (c.scope == vocab::Scope::kFleet) fleet_kinds.insert(std::string(vocab::Name(c.kind)));
  }
  if (!fleet_kinds.empty()) {
    std::string kinds;
    for (const std::string& k : fleet_kinds) kinds += (kinds.empty() ? "" : ", ") + k;
    report.notes.push_back("a fleet-wide event (" + kinds +
                           ") was seen on the baseline too: not blamed on the release, which is "
                           "judged on its second-by-second comparison with the baseline");
  }
  if (report.verdict != Verdict::kInconclusive) return;
  for (const MetricResult& r : report.metrics) {
    if (r.result != "inconclusive" || std::isnan(r.detectable_effect)) continue;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "%s: undecided; the data could detect a change of %.1f%% (margin %.1f%%)",
                  r.name.c_str(), 100 * r.detectable_effect, 100 * r.margin);
    report.notes.emplace_back(buf);
  }
  AddNextSteps(report);
}

// A measure read at equal load says so, with the loads and the baseline's
// line it was read on: one note per kind (per-token latency, tokens/s,
// tokens per DRAM activity; the policy's measure, else the diagnostic of
// the same data).
void ReportWriter::AddLoadNote(Report& report) const {
  std::set<MeasureKind> noted;
  for (std::size_t m = 0; m < in_.measures.list().size(); ++m) {
    const LoadFit& fit = in_.measures.load_fit(m);
    const std::optional<double> canary = fit.canary_load();
    const Measure& ms = in_.measures.list()[m];
    if (!fit.active() || !canary || !noted.insert(ms.kind).second) continue;
    // The fit's units: latency in s (shown in ms), or the measure's own.
    const bool latency = ms.kind != MeasureKind::kNodeRate && ms.kind != MeasureKind::kDramEff;
    const char* unit = ms.kind == MeasureKind::kNodeRate  ? "tokens/s per GPU"
                       : ms.kind == MeasureKind::kDramEff ? "tokens per DRAM-active second"
                                                          : "ms";
    const double scale = latency ? 1e3 : 1;
    const int mean_digits = latency ? 3 : 4;
    const double base = fit.reference();
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "%s: compared at equal load: the canary ran %.1f requests per GPU, the baseline "
                  "%.1f (x%.2f)",
                  ms.name.c_str(), *canary, base, *canary / base);
    std::string note = buf;
    if (const std::optional<double> slope = fit.slope()) {
      std::snprintf(buf, sizeof buf,
                    "; on the baseline each request per GPU adds %.3g %s to a mean %.*g %s (%lld "
                    "node-seconds)",
                    scale * *slope, unit, mean_digits, scale * fit.mean(), unit,
                    static_cast<long long>(fit.seconds()));
      note += buf;
    }
    const std::int64_t skipped = fit.canary_seconds() - fit.canary_compared();
    if (skipped > 0) {
      std::snprintf(buf, sizeof buf,
                    "; %lld of %lld canary node-seconds ran at a load no baseline node ran at and "
                    "are not compared",
                    static_cast<long long>(skipped), static_cast<long long>(fit.canary_seconds()));
      note += buf;
      // A failed release may have raised its own load (slower steps grow the
      // batch): the next step is for a canary still to be decided.
      if (report.verdict != Verdict::kFail) {
        note += " (next: balance the traffic, or a baseline node at the canary's load)";
      }
    }
    report.notes.push_back(std::move(note));
  }
  // Tails: blocks where the canary was handed more requests than the
  // baseline are not compared (they queue more at the same speed).
  for (std::size_t m = 0; m < in_.measures.list().size(); ++m) {
    const Measures::TailLoad& tl = in_.measures.tail_load(m);
    if (tl.skipped == 0) continue;
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "%s: %lld of %lld blocks not compared: the canary completed %.2fx the "
                  "baseline's requests per GPU there (a tail includes queueing; more requests "
                  "queue more at the same speed)%s",
                  in_.measures.list()[m].name.c_str(), static_cast<long long>(tl.skipped),
                  static_cast<long long>(tl.blocks), tl.ratio_sum / static_cast<double>(tl.skipped),
                  report.verdict == Verdict::kFail ? "" : "; next: balance the traffic");
    report.notes.emplace_back(buf);
  }
}

// Why an inconclusive canary is inconclusive, and what would decide it:
// more time (how much, at the rate the interval narrows), another node, a
// missing metric, or the end of a fleet-wide event.
void ReportWriter::AddNextSteps(Report& report) const {
  const VerdictTracker& verdict = in_.verdict;
  if (!verdict.CanaryHealthy()) {
    std::string nodes;
    for (const Cause& c : report.causes) {
      if (c.scope != vocab::Scope::kNode) continue;
      for (const std::string& n : c.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
    }
    report.notes.push_back("inconclusive: no judgeable canary node is left (node faults" +
                           (nodes.empty() ? std::string() : " on " + nodes) +
                           "); next: re-run the canary on another node");
    return;
  }
  const bool fleet_event =
      std::any_of(report.causes.begin(), report.causes.end(),
                  [](const Cause& c) { return c.scope == vocab::Scope::kFleet; });
  for (std::size_t m : verdict.RequiredMeasures()) {
    const MetricResult r = ResultFor(m);
    std::string line = "inconclusive: " + r.name;
    if (r.result == "no_data" && NotComparedForLoad(r.name)) {
      line +=
          " was not compared: the canary was handed more requests per GPU than the baseline "
          "in every block; next: balance the traffic";
    } else if (r.result == "no_data") {
      line += " has no data; next: a missing metric (scrape it, or change the policy)";
    } else if (r.result == "low" || r.result == "high") {
      line += fleet_event ? " is worse than its margin during a fleet-wide event seen on the "
                            "baseline too, not blamed on the release; next: extend the canary "
                            "past the event, or re-run it"
                          : " is worse than its margin on a unit not blamed on the release; "
                            "next: re-run the canary on another node";
    } else if (r.result == "inconclusive" && r.canary == 0 && r.baseline == 0) {
      // Zero work on both arms (a model loaded, no traffic): no ratio to
      // compare, however long it is watched.
      line +=
          " has nothing to compare: neither arm did any work (zero on canary and baseline, "
          "both idle); next: judge the canary while it serves (traffic on the canary and the "
          "baseline)";
    } else if (r.result == "inconclusive") {
      const double room = r.margin - std::fabs(r.change);
      const Comparison* cmp = in_.measures.Whole(m);
      // A pass is decided on the interval at pass_alpha: its half-width.
      const double half =
          cmp == nullptr
              ? kNaN
              : stats::DetectableEffect(stats::RelativeChange({cmp->pass_lo, cmp->pass_hi}));
      if (cmp != nullptr && room > 0 && std::isfinite(half) && half > 0) {
        // The half-width shrinks about as 1/sqrt(n).
        const double n = static_cast<double>(cmp->observations());
        const double more = n * (std::pow(half / room, 2) - 1);
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      " is still undecided; next: more time (about %.0f more %s at this noise)",
                      std::max(more, 1.0), cmp->per_second ? "seconds" : "blocks");
        line += buf;
      } else {
        line +=
            " is still undecided, its change near the margin; next: more time, or accept a "
            "larger margin in the policy";
      }
    } else {
      continue;
    }
    report.notes.push_back(std::move(line));
  }
}

}  // namespace

Report BuildReport(const ReportSources& sources) { return ReportWriter(sources).Build(); }

}  // namespace gpucanary::analysis::judge_internal
