// The correlation, step by step (correlate.h gives the method): series,
// episodes, groups of episodes, and each group attributed to the releases
// that explain it. The steps themselves live in the files
// correlate_internal.h lists.

#include "analysis/correlate/correlate.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate_internal.h"
#include "analysis/correlate/series.h"
#include "analysis/stats/normal.h"
#include "core/time_format.h"

namespace gpucanary::analysis::correlate {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The family-wise error rate of the release effects reported.
constexpr double kAlpha = 0.01;
// A change keeps a release as suspect when that release's pooled effect on
// the change's headline reaches this z.
constexpr double kSupportZ = 2;

Status CheckOptions(const CorrelateOptions& options) {
  if (options.resolution_s < 0 || options.max_lag_s <= kPromptLagS || options.min_score < 0 ||
      options.min_score > 1 || options.group_window_s < 0 || options.warmup_s < 0) {
    return Status(StatusCode::kInvalidArgument,
                  "correlate options out of range (resolution >= 0, max lag > 120 s, "
                  "0 <= min score <= 1)");
  }
  if (options.from_s && options.to_s && *options.from_s >= *options.to_s) {
    return Status(StatusCode::kInvalidArgument, "empty time range: from must be before to");
  }
  return Status::Ok();
}

// The releases considered, with where and when each arrived, for the report.
std::vector<ReleaseReach> DescribeReaches(const std::vector<Reach>& reaches,
                                          const FleetSeries& fleet) {
  std::vector<ReleaseReach> out;
  for (const Reach& r : reaches) {
    ReleaseReach rr;
    rr.release = r.release->id;
    rr.started_at = r.release->started_at;
    for (int n : r.nodes) {
      rr.arrivals.push_back(
          {fleet.nodes[static_cast<std::size_t>(n)].host, r.arrival.at(n), r.observed.at(n)});
    }
    out.push_back(std::move(rr));
  }
  return out;
}

// Each release's pooled effects on the measures users care about, in the
// metric's unit, with 99% intervals (two-sided, 2.576 standard errors).
void DescribeEffects(const EffectsFit& effects, std::vector<ReleaseReach>& releases) {
  constexpr double kZ99 = 2.5758293035489004;
  for (const ReleaseEffect& re : effects.releases) {
    if (re.reach >= releases.size()) continue;
    for (const MeasureEffect& me : re.measures) {
      const MetricDef& def = Metrics()[static_cast<std::size_t>(me.metric)];
      if (!me.identified || !CanHeadRegression(def.name) || !std::isfinite(me.se)) continue;
      const auto unit = [&](double beta) { return def.relative ? std::expm1(beta) : beta; };
      releases[re.reach].effects.push_back({std::string(def.name), unit(me.effect),
                                            unit(me.effect - kZ99 * me.se),
                                            unit(me.effect + kZ99 * me.se), me.z, def.relative});
    }
  }
}

// Where a mechanism ranks when episodes of several kinds are one
// regression: the order NameMechanism tests them in (a hardware signature
// before what it causes), no kind last.
int Precedence(std::optional<vocab::CauseKind> kind) {
  using K = vocab::CauseKind;
  static constexpr K kOrder[] = {K::kPowerBrake,   K::kThermalThrottle,   K::kHwSlowdown,
                                 K::kPowerCap,     K::kPcieDowntrain,     K::kPcieErrors,
                                 K::kXidErrors,    K::kEccErrors,         K::kMemoryThrash,
                                 K::kLowOccupancy, K::kSoftwareRegression};
  if (!kind) return static_cast<int>(std::size(kOrder));
  for (std::size_t i = 0; i < std::size(kOrder); ++i) {
    if (kOrder[i] == *kind) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kOrder));
}

// One regression is one report, however many metrics moved: groups of
// different mechanisms that share a node and overlap in time (within
// group_window_s) are merged, the highest-ranked mechanism's episode first
// (it names the regression).
std::vector<Group> MergeOverlapping(std::vector<Group> groups, const FleetSeries& fleet,
                                    const CorrelateOptions& options) {
  const double window = static_cast<double>(options.group_window_s);
  const auto span = [&](const Group& g) {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    for (const Episode* e : g.episodes) {
      lo = std::min(lo, fleet.BucketStart(e->bucket));
      hi = std::max(hi, fleet.BucketStart(e->bucket));
    }
    return std::make_pair(lo, hi);
  };
  const auto nodes = [](const Group& g) {
    std::set<int> out;
    for (const Episode* e : g.episodes) out.insert(e->node);
    return out;
  };
  bool merged = true;
  while (merged) {
    merged = false;
    for (std::size_t i = 0; i < groups.size() && !merged; ++i) {
      for (std::size_t j = i + 1; j < groups.size() && !merged; ++j) {
        const auto [ilo, ihi] = span(groups[i]);
        const auto [jlo, jhi] = span(groups[j]);
        if (jlo > ihi + window || ilo > jhi + window) continue;
        const std::set<int> a = nodes(groups[i]);
        const std::set<int> b = nodes(groups[j]);
        if (std::none_of(a.begin(), a.end(), [&](int n) { return b.contains(n); })) continue;
        groups[i].episodes.insert(groups[i].episodes.end(), groups[j].episodes.begin(),
                                  groups[j].episodes.end());
        groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(j));
        merged = true;
      }
    }
  }
  for (Group& g : groups) {
    std::stable_sort(g.episodes.begin(), g.episodes.end(), [](const Episode* x, const Episode* y) {
      return std::make_pair(Precedence(x->kind), x->bucket) <
             std::make_pair(Precedence(y->kind), y->bucket);
    });
  }
  return groups;
}

// Groups episodes by mechanism (or headline, when none) and time: an
// episode joins its key's last group when it began within group_window_s
// of that group's last episode. REQUIRES: `episodes` sorted by onset; they
// outlive the groups.
std::vector<Group> GroupEpisodes(const std::vector<Episode>& episodes, const FleetSeries& fleet,
                                 const CorrelateOptions& options) {
  std::map<std::string, std::vector<Group>> by_key;
  const double window = static_cast<double>(options.group_window_s);
  for (const Episode& e : episodes) {
    // Keyed by the kind's name: the groups' order, and so the order of
    // regressions that tie on onset and metric, stays the names' order.
    const std::string key = e.kind ? std::string(vocab::Name(*e.kind)) : "metric:" + e.headline;
    std::vector<Group>& list = by_key[key];
    const double t = fleet.BucketStart(e.bucket);
    if (!list.empty() && t - fleet.BucketStart(list.back().episodes.back()->bucket) <= window) {
      list.back().episodes.push_back(&e);
    } else {
      list.push_back(Group{{&e}, {}});
    }
  }
  std::vector<Group> groups;
  for (auto& [key, list] : by_key) std::move(list.begin(), list.end(), std::back_inserter(groups));
  return MergeOverlapping(std::move(groups), fleet, options);
}

void IndexNodes(Group& g, const FleetSeries& fleet) {
  g.node_onset.clear();
  for (const Episode* e : g.episodes) {
    const double t = fleet.BucketStart(e->bucket);
    auto [it, inserted] = g.node_onset.emplace(e->node, t);
    if (!inserted) it->second = std::min(it->second, t);
  }
}

// The nodes the best-scoring release explains, when it is a suspect and
// explains some but not all of `g`'s changed nodes; else null.
const std::set<int>* PartlyExplained(const Group& g, const Scored& scored,
                                     const CorrelateOptions& options) {
  double best = -1;
  const std::set<int>* best_nodes = nullptr;
  for (std::size_t i = 0; i < scored.suspects.size(); ++i) {
    if (scored.suspects[i].score > best) {
      best = scored.suspects[i].score;
      best_nodes = &scored.explained[i];
    }
  }
  // With no release, best_nodes stays null (and best -1, below any valid
  // min_score).
  if (best_nodes != nullptr && best >= options.min_score && !best_nodes->empty() &&
      best_nodes->size() < g.node_onset.size()) {
    return best_nodes;
  }
  return nullptr;
}

// Attributes each group; where the best release explains only some nodes,
// splits the rest off and attributes them on their own.
std::vector<Regression> Attribute(std::vector<Group> work, const std::vector<Reach>& reaches,
                                  const FleetSeries& fleet, const CorrelateOptions& options) {
  std::vector<Regression> out;
  while (!work.empty()) {
    Group g = std::move(work.back());
    work.pop_back();
    IndexNodes(g, fleet);
    Scored scored = ScoreReleases(g, reaches, fleet, options);
    if (const std::set<int>* explained = PartlyExplained(g, scored, options)) {
      Group in;
      Group rest;
      for (const Episode* e : g.episodes) {
        (explained->contains(e->node) ? in : rest).episodes.push_back(e);
      }
      work.push_back(std::move(rest));
      IndexNodes(in, fleet);
      out.push_back(
          MakeRegression(in, ScoreReleases(in, reaches, fleet, options).suspects, fleet, options));
      continue;
    }
    out.push_back(MakeRegression(g, std::move(scored.suspects), fleet, options));
  }
  std::sort(out.begin(), out.end(), [](const Regression& a, const Regression& b) {
    return std::tie(a.at, a.metric) < std::tie(b.at, b.metric);
  });
  return out;
}

// The one-sided z a release effect must reach: alpha 0.01 over every
// (release, heading measure) tested (Bonferroni).
double CriticalZ(const EffectsFit& effects) {
  int tests = 0;
  for (const ReleaseEffect& re : effects.releases) {
    for (const MeasureEffect& me : re.measures) {
      if (me.identified && CanHeadRegression(Metrics()[static_cast<std::size_t>(me.metric)].name)) {
        ++tests;
      }
    }
  }
  return stats::NormalQuantile(1 - kAlpha / std::max(1, tests));
}

// Each node's per-token latency read at its own mean load: times
// (load / mean load)^-slope, bucket by bucket (no change where the slope or
// the load is unknown).
void AdjustLatencyForLoad(double slope, FleetSeries& fleet) {
  if (!std::isfinite(slope)) return;
  const int itl = MetricIndex("vllm:time_per_output_token_seconds");
  const int running = MetricIndex("vllm:num_requests_running");
  for (std::vector<EntitySeries>& node : fleet.node_series) {
    const EntitySeries* load = nullptr;
    EntitySeries* latency = nullptr;
    for (EntitySeries& s : node) {
      if (s.metric == running) load = &s;
      if (s.metric == itl) latency = &s;
    }
    if (load == nullptr || latency == nullptr) continue;
    double sum = 0;
    double n = 0;
    for (double v : load->values) {
      if (std::isfinite(v) && v > 0) {
        sum += std::log(v);
        n += 1;
      }
    }
    if (n == 0) continue;
    const double mean = sum / n;
    for (std::size_t b = 0; b < latency->values.size() && b < load->values.size(); ++b) {
      const double x = load->values[b];
      if (!std::isfinite(latency->values[b])) continue;
      if (!(std::isfinite(x) && x > 0)) continue;
      latency->values[b] *= std::exp(-slope * (std::log(x) - mean));
    }
  }
}

// A change of the service alone (no throttle, link, XID or ECC signature)
// on part of the fleet: per-token latency that moved with the load the
// balancer gave a few nodes, or with nothing the telemetry shows. Reported
// only when a release explains it (its pooled effect), or when (nearly)
// the whole fleet moved at once.
bool ServiceOnlyOnAFewNodes(const Regression& c, const FleetSeries& fleet) {
  using K = vocab::CauseKind;
  const std::optional<K> kind = c.causes.empty() ? std::nullopt : c.causes.front().kind;
  const bool hardware = kind && *kind != K::kSoftwareRegression && *kind != K::kMemoryThrash &&
                        *kind != K::kLowOccupancy;
  if (hardware || !c.suspects.empty()) return false;
  if (!c.metric.starts_with("vllm:")) return false;
  return !FleetWide(c.nodes.size(), fleet.nodes.size());
}

// The GPU gauges that follow the work are no data in a bucket where the
// node's server generated no token (a deploy's GPUs idle at 345 MHz while
// no server gap shows): as in the pooled test, an idle GPU is not a slower
// one. Buckets without a token sample are left as they are.
void MaskIdle(FleetSeries& fleet) {
  const int tokens = MetricIndex("vllm:generation_tokens_per_s");
  for (std::size_t n = 0; n < fleet.node_series.size() && n < fleet.nodes.size(); ++n) {
    const EntitySeries* served = nullptr;
    for (const EntitySeries& s : fleet.node_series[n]) {
      if (s.metric == tokens) served = &s;
    }
    if (served == nullptr) continue;
    for (int g : fleet.nodes[n].gpus) {
      if (static_cast<std::size_t>(g) >= fleet.gpu_series.size()) continue;
      for (EntitySeries& s : fleet.gpu_series[static_cast<std::size_t>(g)]) {
        if (!FollowsWork(Metrics()[static_cast<std::size_t>(s.metric)].name)) continue;
        for (std::size_t b = 0; b < s.values.size() && b < served->values.size(); ++b) {
          if (served->values[b] == 0) s.values[b] = std::numeric_limits<double>::quiet_NaN();
        }
      }
    }
  }
}

// The regressions to report: every release's, then the changes no release's
// regression already covers (one on its nodes from its arrival on, within
// max_lag_s). A change keeps a release as suspect only when that release's
// pooled effect on the change's headline is harmful beyond z 2 (time and
// space alone are not enough: two releases on one node line up with any
// fault there).
std::vector<Regression> Combine(std::vector<Regression> released, std::vector<Regression> changed,
                                const EffectsFit& effects, const std::vector<Reach>& reaches,
                                const FleetSeries& fleet, const CorrelateOptions& options) {
  const auto effect_on = [&](const std::string& release, const std::string& metric) {
    for (const ReleaseEffect& re : effects.releases) {
      if (reaches[re.reach].release->id != release) continue;
      for (const MeasureEffect& me : re.measures) {
        if (Metrics()[static_cast<std::size_t>(me.metric)].name == metric) return me.z;
      }
    }
    return 0.0;
  };
  // A change is the same event as a release's regression when all its
  // nodes are that regression's and it began between the release's start
  // (less kPersistS: a change next to a masked restart may be dated into
  // it) and max_lag_s after it reached the last of them.
  const auto covered = [&](const Regression& c) {
    for (const Regression& r : released) {
      const std::string& id = r.suspects.front().release;
      for (const Reach& reach : reaches) {
        if (reach.release->id != id) continue;
        double last = reach.release->started_at;
        for (const auto& [node, at] : reach.arrival) last = std::max(last, at);
        const bool subset = !c.nodes.empty() &&
                            std::all_of(c.nodes.begin(), c.nodes.end(), [&](const std::string& h) {
                              return std::find(r.nodes.begin(), r.nodes.end(), h) != r.nodes.end();
                            });
        if (subset && c.at >= reach.release->started_at - static_cast<double>(kPersistS) &&
            c.at <= last + static_cast<double>(options.max_lag_s)) {
          return true;
        }
      }
    }
    return false;
  };
  std::vector<Regression> out = released;
  for (Regression& c : changed) {
    if (covered(c)) continue;
    if (ServiceOnlyOnAFewNodes(c, fleet)) continue;
    // A fleet-wide latency move no release is suspected of, along the
    // fleet's own latency-load curve: load, not a regression.
    if (c.suspects.empty() && FleetLoadExplains(c.metric, c.at, c.nodes, fleet)) continue;
    std::erase_if(c.suspects,
                  [&](const Suspect& s) { return effect_on(s.release, c.metric) < kSupportZ; });
    if (c.suspects.empty() && !c.causes.empty() &&
        c.causes.front().scope == vocab::Scope::kRelease) {
      c.causes.front().scope = FleetWide(c.nodes.size(), fleet.nodes.size()) ? vocab::Scope::kFleet
                                                                             : vocab::Scope::kNode;
      const std::size_t cut = c.summary.find("; suspect ");
      if (cut != std::string::npos) {
        c.summary =
            c.summary.substr(0, cut) + (c.causes.front().scope == vocab::Scope::kFleet
                                            ? "; no release explains this (fleet-wide, at once)"
                                            : "; no release explains this");
      }
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const Regression& a, const Regression& b) {
    return std::tie(a.at, a.metric) < std::tie(b.at, b.metric);
  });
  return out;
}

}  // namespace

// One node's own fault is one report, however often it flares: a GPU
// that thermal-throttles every few minutes for hours gives an episode per
// flare (they are more than group_window_s apart), and a day of it gave
// 16 reports. Regressions no release is suspected of, of one mechanism, on
// the same nodes and not fleet-wide, become the first of them, with the
// GPUs of all and "recurred N times until T" in the summary; so does a
// change of the same measure there with no mechanism named, within
// kRecurSpanS of the last flare.
std::vector<Regression> MergeRecurring(std::vector<Regression> regressions,
                                       const FleetSeries& fleet) {
  const auto kind_of = [](const Regression& r) {
    return r.causes.empty() ? std::optional<vocab::CauseKind>() : r.causes.front().kind;
  };
  std::vector<Regression> out;
  std::vector<int> recurred;
  std::vector<double> last;
  for (Regression& r : regressions) {
    const bool own = r.suspects.empty() && !FleetWide(r.nodes.size(), fleet.nodes.size());
    std::size_t into = out.size();
    if (own) {
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (!out[i].suspects.empty() || out[i].nodes != r.nodes || !kind_of(out[i])) continue;
        // The same mechanism again; or a change of the same measure with no
        // mechanism of its own while that fault keeps flaring (a flare
        // whose buckets missed the throttle flag).
        const bool same_kind = kind_of(r) == kind_of(out[i]);
        const bool unnamed_flare = !kind_of(r) && r.metric == out[i].metric &&
                                   r.at <= last[i] + static_cast<double>(kRecurSpanS);
        if (same_kind || unnamed_flare) {
          into = i;
          break;
        }
      }
    }
    if (into == out.size()) {
      out.push_back(std::move(r));
      recurred.push_back(0);
      last.push_back(out.back().at);
      continue;
    }
    Regression& first = out[into];
    std::vector<std::string> gpus;
    std::set_union(first.gpus.begin(), first.gpus.end(), r.gpus.begin(), r.gpus.end(),
                   std::back_inserter(gpus));
    first.gpus = std::move(gpus);
    ++recurred[into];
    last[into] = std::max(last[into], r.at);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (recurred[i] == 0) continue;
    out[i].summary += "; recurred " + std::to_string(recurred[i]) + " times until " +
                      FormatUtcMillis(static_cast<std::int64_t>(last[i] * 1000));
  }
  return out;
}

namespace {

// How a fleet's latency moved at a change, against one measure of its load.
struct CurveStep {
  double residual = kNaN;  // the latency's step off its curve on the load (log)
  double load = kNaN;      // the load's own step (log)
};

// The changed nodes' mean log `metric` against their mean log `load`, per
// bucket; a quadratic fitted over the whole range; the steps, at bucket
// `t0`, of its residuals and of the load (medians over `w` buckets either
// side). NaN steps when there is too little to fit.
CurveStep StepOffCurve(int metric, int load, std::size_t t0, std::size_t w,
                       const std::vector<std::string>& nodes, const FleetSeries& fleet) {
  std::vector<const EntitySeries*> ys;
  std::vector<const EntitySeries*> xs;
  for (std::size_t n = 0; n < fleet.nodes.size() && n < fleet.node_series.size(); ++n) {
    if (!std::binary_search(nodes.begin(), nodes.end(), fleet.nodes[n].host)) continue;
    const EntitySeries* y = nullptr;
    const EntitySeries* x = nullptr;
    for (const EntitySeries& s : fleet.node_series[n]) {
      if (s.metric == metric) y = &s;
      if (s.metric == load) x = &s;
    }
    if (y != nullptr && x != nullptr) {
      ys.push_back(y);
      xs.push_back(x);
    }
  }
  if (ys.size() < 2) return {};
  std::vector<double> yb(fleet.buckets, kNaN);
  std::vector<double> xb(fleet.buckets, kNaN);
  for (std::size_t b = 0; b < fleet.buckets; ++b) {
    double sy = 0;
    double sx = 0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < ys.size(); ++i) {
      const double y = b < ys[i]->values.size() ? ys[i]->values[b] : kNaN;
      const double x = b < xs[i]->values.size() ? xs[i]->values[b] : kNaN;
      if (!(y > 0) || !(x > 0)) continue;
      sy += std::log(y);
      sx += std::log(x);
      ++n;
    }
    if (2 * n < ys.size()) continue;
    yb[b] = sy / static_cast<double>(n);
    xb[b] = sx / static_cast<double>(n);
  }
  // y = c0 + c1 x + c2 x^2 by least squares (x centred: well conditioned).
  double xm = 0;
  std::size_t m = 0;
  for (std::size_t b = 0; b < fleet.buckets; ++b) {
    if (std::isfinite(yb[b])) {
      xm += xb[b];
      ++m;
    }
  }
  if (m < 20) return {};
  xm /= static_cast<double>(m);
  double s[5] = {0, 0, 0, 0, 0};  // sums of x^0..x^4
  double t[3] = {0, 0, 0};        // sums of y x^0..x^2
  for (std::size_t b = 0; b < fleet.buckets; ++b) {
    if (!std::isfinite(yb[b])) continue;
    const double x = xb[b] - xm;
    double p = 1;
    for (int k = 0; k < 5; ++k) {
      s[k] += p;
      if (k < 3) t[k] += yb[b] * p;
      p *= x;
    }
  }
  // Cramer's rule on the 3x3 normal equations.
  const auto det3 = [](double a, double b, double c, double d, double e, double f, double g,
                       double h, double i) {
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g);
  };
  const double det = det3(s[0], s[1], s[2], s[1], s[2], s[3], s[2], s[3], s[4]);
  if (!(std::fabs(det) > 1e-12)) return {};
  const double c0 = det3(t[0], s[1], s[2], t[1], s[2], s[3], t[2], s[3], s[4]) / det;
  const double c1 = det3(s[0], t[0], s[2], s[1], t[1], s[3], s[2], t[2], s[4]) / det;
  const double c2 = det3(s[0], s[1], t[0], s[1], s[2], t[1], s[2], s[3], t[2]) / det;
  std::vector<double> before;
  std::vector<double> after;
  std::vector<double> load_before;
  std::vector<double> load_after;
  for (std::size_t b = t0 >= w ? t0 - w : 0; b < fleet.buckets && b < t0 + w; ++b) {
    if (!std::isfinite(yb[b])) continue;
    const double x = xb[b] - xm;
    (b < t0 ? before : after).push_back(yb[b] - (c0 + c1 * x + c2 * x * x));
    (b < t0 ? load_before : load_after).push_back(xb[b]);
  }
  if (before.size() < 3 || after.size() < 3) return {};
  return {Median(after) - Median(before), Median(load_after) - Median(load_before)};
}

}  // namespace

// A fleet-wide change of a service latency that the fleet's own load
// explains: the fleet moved along its latency-load curve (more requests, a
// bigger batch, each decode step reading more KV cache), not off it. Two
// readings of the load, each a curve fitted over the whole range
// (StepOffCurve): the fleet's throughput (tokens/s: what users send; a
// slower release does not move it below capacity), and its running batch
// (steeper near capacity, where the queue builds), the latter only when
// the throughput itself rose by its floor (5%) at the change: a slower
// fleet's batch grows too (Little's law), so the batch alone would hide a
// slowdown nobody announced. Explained when, on either reading, the
// latency's step off the curve stays below the metric's floor.
bool FleetLoadExplains(std::string_view metric_name, double at_s,
                       const std::vector<std::string>& nodes, const FleetSeries& fleet) {
  constexpr std::int64_t kLoadWindowS = 600;
  const int metric = MetricIndex(metric_name);
  const int tokens = MetricIndex("vllm:generation_tokens_per_s");
  const int running = MetricIndex("vllm:num_requests_running");
  if (metric < 0) return false;
  const MetricDef& def = Metrics()[static_cast<std::size_t>(metric)];
  if (def.level != Level::kNode || def.better != Better::kLower || !def.relative) return false;
  if (!FleetWide(nodes.size(), fleet.nodes.size())) return false;
  const auto at = static_cast<std::int64_t>(at_s) - fleet.start_s;
  if (at < 0) return false;
  const auto t0 = static_cast<std::size_t>(at / fleet.resolution_s);
  const auto w =
      static_cast<std::size_t>(std::max<std::int64_t>(3, kLoadWindowS / fleet.resolution_s));
  const double floor = std::log1p(def.floor);
  const CurveStep by_tokens = StepOffCurve(metric, tokens, t0, w, nodes, fleet);
  if (by_tokens.residual < floor) return true;
  const double tokens_floor = std::log1p(Metrics()[static_cast<std::size_t>(tokens)].floor);
  if (!(by_tokens.load >= tokens_floor)) return false;
  return StepOffCurve(metric, running, t0, w, nodes, fleet).residual < floor;
}

Result<CorrelateReport> Correlate(Replay& replay, const std::vector<releases::Release>& releases,
                                  const CorrelateOptions& options) {
  GC_RETURN_IF_ERROR(CheckOptions(options));
  Result<FleetSeries> built =
      BuildSeries(replay, options.resolution_s, options.from_s, options.to_s, options.warmup_s,
                  CorrelateOptions::kMaxBuckets);
  if (!built) return Error(built.error());
  FleetSeries& fleet = *built;

  CorrelateReport report;
  report.resolution_s = fleet.resolution_s;
  report.gpus = static_cast<int>(fleet.gpus.size());
  report.nodes = static_cast<int>(fleet.nodes.size());
  const std::vector<Reach> reaches = ResolveReaches(releases, fleet);
  report.releases = DescribeReaches(reaches, fleet);
  // No data in range: the releases considered, the range asked for, nothing
  // else (missing telemetry is no regression, not a zero).
  if (fleet.buckets == 0) {
    report.from = static_cast<double>(options.from_s.value_or(0));
    report.to = static_cast<double>(options.to_s.value_or(0));
    return report;
  }
  report.from = static_cast<double>(fleet.first_tick);
  report.to = static_cast<double>(fleet.last_tick + 1);

  // Release effects first: each release's pooled, load-adjusted effect on
  // every measure; a significant, material one on a measure users care
  // about is that release's regression.
  const EffectsFit effects = EstimateReleaseEffects(fleet, reaches);
  DescribeEffects(effects, report.releases);
  std::vector<Regression> released;
  const double z_crit = CriticalZ(effects);
  for (const ReleaseEffect& re : effects.releases) {
    std::optional<Regression> r =
        MakeReleaseRegression(re, effects.releases, reaches, fleet, z_crit);
    // min_score bounds these suspects too (their score is z / (z + z*)); a
    // release below it is left to the change points, unnamed.
    if (r && r->suspects.front().score >= options.min_score) released.push_back(std::move(*r));
  }

  // Then what no release explains: the change points of each GPU and node
  // (per-token latency read at equal load too; adjusted in place, since the
  // pooled effects above were the last to read the series as measured).
  AdjustLatencyForLoad(effects.load_slope, fleet);
  MaskIdle(fleet);
  std::vector<Episode> episodes = FindEpisodes(fleet);
  std::sort(episodes.begin(), episodes.end(), [](const Episode& a, const Episode& b) {
    return std::tie(a.bucket, a.gpu) < std::tie(b.bucket, b.gpu);
  });
  std::vector<Regression> changed =
      Attribute(GroupEpisodes(episodes, fleet, options), reaches, fleet, options);
  report.regressions = MergeRecurring(
      Combine(std::move(released), std::move(changed), effects, reaches, fleet, options), fleet);
  return report;
}

}  // namespace gpucanary::analysis::correlate
