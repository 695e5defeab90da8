// A group of episodes as a Regression (docs/analysis-method.md, "Episodes,
// mechanisms, regressions" and "Attribution"): its headline metric, when and
// where it began, the evidence of every metric that moved, the releases
// scored on it, its scope and the sentence that sums it up.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate_internal.h"
#include "analysis/judge/diagnose.h"
#include "core/time_format.h"

namespace gpucanary::analysis::correlate {
namespace {

// The headline is the one most of its episodes carry.
std::string HeadlineMetric(const Group& g) {
  std::map<std::string, int> votes;
  for (const Episode* e : g.episodes) ++votes[e->headline];
  return std::max_element(votes.begin(), votes.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

std::vector<std::string> GpuKeys(const Group& g, const FleetSeries& fleet) {
  std::set<std::string> keys;
  for (const Episode* e : g.episodes) keys.insert(fleet.gpus[static_cast<std::size_t>(e->gpu)].key);
  return {keys.begin(), keys.end()};
}

std::vector<std::string> NodeHosts(const Group& g, const FleetSeries& fleet) {
  std::vector<std::string> nodes;
  for (const auto& [node, onset] : g.node_onset) {
    nodes.push_back(fleet.nodes[static_cast<std::size_t>(node)].host);
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

// One metric's changes summed up: medians of its levels and changes.
MetricChange Summarize(int metric, const std::vector<const Change*>& changes) {
  const MetricDef& def = Metrics()[static_cast<std::size_t>(metric)];
  MetricChange mc;
  mc.metric = std::string(def.name);
  mc.unit = std::string(def.unit);
  mc.relative = def.relative;
  std::vector<double> b;
  std::vector<double> a;
  std::vector<double> c;
  for (const Change* ch : changes) {
    b.push_back(ch->before);
    a.push_back(ch->after);
    c.push_back(ch->change);
  }
  mc.before = Median(b);
  mc.after = Median(a);
  mc.change = Median(c);
  mc.entities = static_cast<int>(changes.size());
  return mc;
}

// Evidence: per metric, medians over the episodes that moved it (a
// node-level change counts once per node), by metric.
std::vector<MetricChange> Evidence(const Group& g) {
  std::map<int, std::vector<const Change*>> by_metric;
  std::set<std::pair<int, int>> node_seen;  // (metric, node)
  for (const Episode* e : g.episodes) {
    for (const Change& c : e->changes) {
      const MetricDef& def = Metrics()[static_cast<std::size_t>(c.metric)];
      if (def.level == Level::kNode && !node_seen.emplace(c.metric, e->node).second) continue;
      by_metric[c.metric].push_back(&c);
    }
  }
  std::vector<MetricChange> out;
  out.reserve(by_metric.size());
  for (const auto& [metric, changes] : by_metric) out.push_back(Summarize(metric, changes));
  return out;
}

// The evidence, headline metric first; the regression's change is the
// headline's.
void AddEvidence(const Group& g, Regression& out) {
  out.evidence = Evidence(g);
  for (const MetricChange& mc : out.evidence) {
    if (mc.metric == out.metric) {
      out.change = mc.change;
      out.change_relative = mc.relative;
    }
  }
  std::stable_sort(out.evidence.begin(), out.evidence.end(),
                   [&](const MetricChange& x, const MetricChange& y) {
                     return (x.metric == out.metric) > (y.metric == out.metric);
                   });
}

// Candidates: every release scoring above 0.05, best first; suspects: those
// reaching min_score.
void RankReleases(std::vector<Suspect> scored, const CorrelateOptions& options, Regression& out) {
  for (Suspect& s : scored) {
    if (s.score > 0.05) out.candidates.push_back(std::move(s));
  }
  std::stable_sort(out.candidates.begin(), out.candidates.end(),
                   [](const Suspect& a, const Suspect& b) { return a.score > b.score; });
  for (const Suspect& s : out.candidates) {
    if (s.score >= options.min_score) out.suspects.push_back(s);
  }
}

// Scope: the release's, when one explains it; the fleet's when (nearly)
// every node changed at once; else the nodes'.
vocab::Scope ScopeOf(const Group& g, const Regression& out, const FleetSeries& fleet) {
  if (!out.suspects.empty()) return vocab::Scope::kRelease;
  if (FleetWide(g.node_onset.size(), fleet.nodes.size())) return vocab::Scope::kFleet;
  return vocab::Scope::kNode;
}

// The sentence.
std::string Sentence(const Regression& out, std::optional<vocab::CauseKind> kind,
                     vocab::Scope scope) {
  char change[64] = "";
  if (std::isfinite(out.change)) {
    if (out.change_relative) {
      // One decimal below 10%: a release 0.6% slower is not "+1%".
      std::snprintf(change, sizeof change, std::fabs(out.change) < 0.095 ? "%+.1f%%" : "%+.0f%%",
                    100 * out.change);
    } else {
      std::snprintf(change, sizeof change, "%+.3g", out.change);
    }
  }
  std::string sentence = std::string(kind ? vocab::Name(*kind) : "change") + " on " +
                         DescribeGpus(out.gpus) + " from " +
                         FormatUtcMillis(static_cast<std::int64_t>(out.at * 1000)) + ": " +
                         out.metric + " " + change;
  if (!out.suspects.empty()) {
    char score[32];
    std::snprintf(score, sizeof score, "%.2f", out.suspects.front().score);
    sentence += "; suspect " + out.suspects.front().release + " (score " + score + ")";
  } else {
    sentence += scope == vocab::Scope::kFleet ? "; no release explains this (fleet-wide, at once)"
                                              : "; no release explains this";
  }
  return sentence;
}

}  // namespace

// Builds the regression of `g` (evidence, headline, causes, suspects) from
// its releases' scores.
Regression MakeRegression(const Group& g, std::vector<Suspect> scored, const FleetSeries& fleet,
                          const CorrelateOptions& options) {
  Regression out;
  const Episode& first = *g.episodes.front();
  const std::optional<vocab::CauseKind> kind = first.kind;
  std::string detail = first.detail;
  out.metric = HeadlineMetric(g);
  out.at = std::numeric_limits<double>::infinity();
  for (const Episode* e : g.episodes) out.at = std::min(out.at, fleet.BucketStart(e->bucket));
  out.gpus = GpuKeys(g, fleet);
  out.nodes = NodeHosts(g, fleet);
  AddEvidence(g, out);
  RankReleases(std::move(scored), options, out);
  const vocab::Scope scope = ScopeOf(g, out, fleet);
  out.causes.push_back({kind, scope, detail});
  out.summary = Sentence(out, kind, scope);
  return out;
}

}  // namespace gpucanary::analysis::correlate

namespace gpucanary::analysis::correlate {
namespace {

using vocab::CauseKind;

// The smallest release effect worth a report, per heading measure, in the
// panel's units (a log ratio, or the metric's own difference); +inf for a
// measure that cannot head one.
double PanelFloor(std::string_view metric) {
  if (metric == "vllm:time_per_output_token_seconds" || metric == "DCGM_FI_DEV_SM_CLOCK") {
    return std::log(1.005);
  }
  if (metric.starts_with("throttle:")) return 0.05;
  if (metric == "DCGM_FI_DEV_XID_ERRORS") return 0.01;
  if (metric == "DCGM_FI_DEV_PCIE_LINK_WIDTH") return 0.5;
  if (metric == "DCGM_FI_DEV_PCIE_LINK_GEN") return 0.25;
  if (metric == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER") return 0.1;
  if (metric == "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL") return 0.01;
  if (metric == "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") return 0.005;
  return std::numeric_limits<double>::infinity();
}

// Evidence measures move "materially" past 2% (relative) or their floor.
double EvidenceFloor(const MetricDef& def) {
  return def.relative ? std::log(1.02) : PanelFloor(def.name);
}

// A significant evidence move (z at least this, either way) names a
// mechanism and joins the evidence.
constexpr double kEvidenceZ = 3;

const MeasureEffect* Find(const ReleaseEffect& re, std::string_view metric) {
  for (const MeasureEffect& me : re.measures) {
    if (Metrics()[static_cast<std::size_t>(me.metric)].name == metric) return &me;
  }
  return nullptr;
}

// The measure moved in its harmful direction (neutral: up), significantly
// and materially.
bool Worse(const MeasureEffect* me, double z) {
  if (me == nullptr || !me->identified || me->z < z) return false;
  const MetricDef& def = Metrics()[static_cast<std::size_t>(me->metric)];
  const double floor = CanHeadRegression(def.name) ? PanelFloor(def.name) : EvidenceFloor(def);
  return std::fabs(me->effect) >= floor;
}

// The change in the metric's own terms: a ratio less one, or a difference.
double AsChange(const MeasureEffect& me) {
  return Metrics()[static_cast<std::size_t>(me.metric)].relative ? std::expm1(me.effect)
                                                                 : me.effect;
}

// The mechanism the release's effects show, in the judge's vocabulary.
std::optional<CauseKind> ReleaseMechanism(const ReleaseEffect& re) {
  const auto up = [&](std::string_view m) { return Worse(Find(re, m), kEvidenceZ); };
  const bool slower = up("vllm:time_per_output_token_seconds");
  if (up("throttle:power_brake")) return CauseKind::kPowerBrake;
  if (up("throttle:thermal")) return CauseKind::kThermalThrottle;
  if (up("throttle:hw_slowdown")) return CauseKind::kHwSlowdown;
  if (up("throttle:sw_power_cap")) return CauseKind::kPowerCap;
  if (up("DCGM_FI_DEV_PCIE_LINK_WIDTH") || up("DCGM_FI_DEV_PCIE_LINK_GEN")) {
    return CauseKind::kPcieDowntrain;
  }
  if (up("DCGM_FI_DEV_PCIE_REPLAY_COUNTER")) return CauseKind::kPcieErrors;
  if (up("DCGM_FI_DEV_XID_ERRORS")) return CauseKind::kXidErrors;
  if (up("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL") || up("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")) {
    return CauseKind::kEccErrors;
  }
  if (slower && up("DCGM_FI_PROF_DRAM_ACTIVE") && !up("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")) {
    return CauseKind::kMemoryThrash;
  }
  if (slower && up("DCGM_FI_PROF_SM_OCCUPANCY")) return CauseKind::kLowOccupancy;
  if (slower) return CauseKind::kSoftwareRegression;
  return std::nullopt;
}

// A release's score on its headline: z / (z + z_crit), so that 0.5 is the
// bound a suspect must reach.
double ScoreOf(double z, double z_crit) { return z > 0 ? z / (z + z_crit) : 0; }

std::string Percent(double change, bool relative) {
  char buf[48];
  if (relative) {
    std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * change);
  } else {
    std::snprintf(buf, sizeof buf, "%+.3g", change);
  }
  return buf;
}

// A candidate release on the headline metric, with its reason in words.
Suspect CandidateOf(const ReleaseEffect& re, const MeasureEffect& me,
                    const std::vector<Reach>& reaches, double z_crit, std::optional<CauseKind> kind,
                    std::uint32_t xid) {
  const MetricDef& def = Metrics()[static_cast<std::size_t>(me.metric)];
  const Reach& reach = reaches[re.reach];
  Suspect s;
  s.release = reach.release->id;
  s.score = ScoreOf(me.z, z_crit);
  s.space = me.per_node.empty()
                ? 0
                : static_cast<double>(me.nodes_harmed) / static_cast<double>(me.per_node.size());
  s.time =
      std::isfinite(me.early) && me.effect != 0 ? std::clamp(me.early / me.effect, 0.0, 1.0) : 0;
  s.dose = 0.5;  // not measured: each node is compared with itself
  s.mechanism = MechanismPlausibility(kind, xid);
  const double half = 2.576 * me.se;  // 99% two-sided
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "%s %s at equal conditions (99%% interval %s to %s, z = %.1f) on %d of its %zu "
      "nodes with data against themselves before it and the fleet meanwhile; over its "
      "first %.0f s: %s",
      std::string(def.name).c_str(), Percent(AsChange(me), def.relative).c_str(),
      Percent(def.relative ? std::expm1(me.effect - half) : me.effect - half, def.relative).c_str(),
      Percent(def.relative ? std::expm1(me.effect + half) : me.effect + half, def.relative).c_str(),
      me.z, me.nodes_harmed, me.per_node.size(), kEarlyS,
      std::isfinite(me.early)
          ? Percent(def.relative ? std::expm1(me.early) : me.early, def.relative).c_str()
          : "no data");
  s.reason = buf;
  return s;
}

}  // namespace

std::optional<Regression> MakeReleaseRegression(const ReleaseEffect& effect,
                                                const std::vector<ReleaseEffect>& others,
                                                const std::vector<Reach>& reaches,
                                                const FleetSeries& fleet, double z_crit) {
  // The headline: the per-token latency when it qualifies (what the
  // service lost), else the heading measure worse with the largest z; on
  // most of the release's nodes, and not one node's doing.
  const MeasureEffect* head = nullptr;
  bool head_is_service = false;
  for (const MeasureEffect& me : effect.measures) {
    const MetricDef& def = Metrics()[static_cast<std::size_t>(me.metric)];
    if (!CanHeadRegression(def.name) || !Worse(&me, z_crit)) continue;
    if (2 * me.nodes_harmed <= static_cast<int>(me.per_node.size())) continue;
    // Not one node's doing: still significant and material without any one.
    if (me.robust_z < z_crit || std::fabs(me.robust_effect) < PanelFloor(def.name)) continue;
    const bool service = def.name == "vllm:time_per_output_token_seconds";
    if (head == nullptr || (service && !head_is_service) ||
        (service == head_is_service && me.z > head->z)) {
      head = &me;
      head_is_service = service;
    }
  }
  if (head == nullptr) return std::nullopt;
  const MetricDef& def = Metrics()[static_cast<std::size_t>(head->metric)];
  const Reach& reach = reaches[effect.reach];
  const double sign = def.better == Better::kHigher ? -1 : 1;

  Regression out;
  out.metric = std::string(def.name);
  out.change = AsChange(*head);
  out.change_relative = def.relative;
  out.at = std::numeric_limits<double>::infinity();
  std::set<std::string> gpus;
  std::uint32_t xid = 0;
  for (const auto& [node, own] : head->per_node) {
    if (sign * own <= 0) continue;
    const NodeInfo& info = fleet.nodes[static_cast<std::size_t>(node)];
    out.nodes.push_back(info.host);
    out.at = std::min(out.at, reach.arrival.at(node));
    for (int g : info.gpus) {
      gpus.insert(fleet.gpus[static_cast<std::size_t>(g)].key);
      if (xid == 0 && static_cast<std::size_t>(g) < fleet.xid_codes.size()) {
        xid = fleet.xid_codes[static_cast<std::size_t>(g)];
      }
    }
  }
  std::sort(out.nodes.begin(), out.nodes.end());
  out.gpus.assign(gpus.begin(), gpus.end());

  const std::optional<CauseKind> kind = ReleaseMechanism(effect);
  std::string detail;
  if (kind == CauseKind::kXidErrors && xid != 0) detail = "XID " + std::to_string(xid);

  // Evidence: the headline, then every measure that moved significantly.
  for (const MeasureEffect& me : effect.measures) {
    const MetricDef& md = Metrics()[static_cast<std::size_t>(me.metric)];
    const bool moved = me.identified && std::fabs(me.effect) >= EvidenceFloor(md) &&
                       std::fabs(me.effect / me.se) >= kEvidenceZ;
    if (&me != head && !moved) continue;
    MetricChange mc;
    mc.metric = std::string(md.name);
    mc.unit = std::string(md.unit);
    mc.relative = md.relative;
    // Before: the release's nodes' mean before it; after: that level moved
    // by the pooled effect (at equal conditions), so the pair says what the
    // change says. The raw mean after it also carries the fleet's load and
    // the time of day: on a day's data a release 0.6% slower read 12%
    // faster raw, arriving as the load fell.
    mc.before = me.before;
    mc.change = AsChange(me);
    mc.after = md.relative ? me.before * (1 + mc.change) : me.before + mc.change;
    mc.entities = static_cast<int>(me.per_node.size());
    out.evidence.push_back(std::move(mc));
  }
  std::stable_sort(out.evidence.begin(), out.evidence.end(),
                   [&](const MetricChange& x, const MetricChange& y) {
                     return (x.metric == out.metric) > (y.metric == out.metric);
                   });

  // Candidates: every release with a harmful effect on the headline, best
  // first, three at most; the suspect is this one.
  std::vector<Suspect> candidates;
  for (const ReleaseEffect& other : others) {
    const MeasureEffect* me = Find(other, def.name);
    if (me == nullptr || !me->identified || me->z <= 0) continue;
    const std::optional<CauseKind> k = &other == &effect ? kind : ReleaseMechanism(other);
    candidates.push_back(CandidateOf(other, *me, reaches, z_crit, k, xid));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Suspect& a, const Suspect& b) { return a.score > b.score; });
  // The suspect is this release, whatever the others score on the
  // headline (one whose effect is larger is its own regression).
  for (const Suspect& s : candidates) {
    if (s.release == reach.release->id) out.suspects.push_back(s);
  }
  if (candidates.size() > 3) candidates.resize(3);
  if (std::none_of(candidates.begin(), candidates.end(),
                   [&](const Suspect& s) { return s.release == reach.release->id; })) {
    candidates.back() = out.suspects.front();
  }
  out.candidates = candidates;
  out.causes.push_back({kind, vocab::Scope::kRelease, detail});
  out.summary = Sentence(out, kind, vocab::Scope::kRelease);
  return out;
}

}  // namespace gpucanary::analysis::correlate
