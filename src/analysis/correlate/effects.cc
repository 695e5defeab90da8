// Each release's effect on every measure, pooled over its nodes and its
// time (docs/analysis-method.md, "Release effects"): per measure, one
// two-way fixed-effects panel of the fleet's nodes (stats/panel.h), each
// release active on the nodes it reached from its arrival until one that
// supersedes it arrived (reach.cc); releases of different components stack.
// Per-token
// latency is read at equal load (the running batch as a covariate, by
// Frisch-Waugh-Lovell), GPU gauges only while the node served.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate_internal.h"
#include "analysis/stats/panel.h"

namespace gpucanary::analysis::correlate {
namespace {

// The standard error (relative to the effect's size) of a noise-free step.
constexpr double kExactSe = 1e-9;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// After a release reaches a node, this long is left out of its effect (the
// batch refills, the GPUs warm up to their new level).
constexpr double kTransitionS = 60;

// The series of `metric` on node `n` (node-level), or the mean over its
// GPUs of theirs (GPU-level); NaN where none has data.
std::vector<double> NodeValues(const FleetSeries& fleet, std::size_t n, int metric) {
  std::vector<double> out(fleet.buckets, kNaN);
  const MetricDef& def = Metrics()[static_cast<std::size_t>(metric)];
  if (def.level == Level::kNode) {
    if (n >= fleet.node_series.size()) return out;
    for (const EntitySeries& s : fleet.node_series[n]) {
      if (s.metric == metric) return s.values;
    }
    return out;
  }
  std::vector<double> sum(fleet.buckets, 0);
  std::vector<int> cnt(fleet.buckets, 0);
  for (int g : fleet.nodes[n].gpus) {
    if (static_cast<std::size_t>(g) >= fleet.gpu_series.size()) continue;
    for (const EntitySeries& s : fleet.gpu_series[static_cast<std::size_t>(g)]) {
      if (s.metric != metric) continue;
      for (std::size_t b = 0; b < fleet.buckets && b < s.values.size(); ++b) {
        if (!std::isfinite(s.values[b])) continue;
        sum[b] += s.values[b];
        cnt[b] += 1;
      }
    }
  }
  for (std::size_t b = 0; b < fleet.buckets; ++b) {
    if (cnt[b] > 0) out[b] = sum[b] / cnt[b];
  }
  return out;
}

// The buckets [from, to) that lie wholly in [t0, t1) seconds.
std::pair<std::size_t, std::size_t> BucketsWithin(const FleetSeries& fleet, double t0, double t1) {
  const double res = static_cast<double>(fleet.resolution_s);
  const double start = static_cast<double>(fleet.start_s);
  const double lo = std::ceil((t0 - start) / res);
  const double hi = std::floor((t1 - start) / res);
  const auto clamp = [&](double v) {
    return static_cast<std::size_t>(std::clamp(v, 0.0, static_cast<double>(fleet.buckets)));
  };
  return {clamp(lo), clamp(std::max(lo, hi))};
}

// Each release's effect on each node it reached: active from its arrival
// plus kTransitionS until a release that supersedes it arrives there; the
// transition itself (the batch refilling, the GPUs settling) left out. A
// release already on a node when the data begins is that node's reference.
void LayOut(const FleetSeries& fleet, const std::vector<Reach>& reaches, stats::Panel& panel) {
  const double res = static_cast<double>(fleet.resolution_s);
  for (std::size_t i = 0; i < reaches.size(); ++i) {
    const Reach& r = reaches[i];
    for (int n : r.nodes) {
      const double at = r.arrival.at(n);
      const double until = r.replaced.at(n);
      // Already there when the data begins: it is what the node is compared
      // against (the reference), not an effect to estimate.
      if (at <= static_cast<double>(fleet.first_tick) + kTransitionS) continue;
      const auto [from, to] = BucketsWithin(fleet, at + kTransitionS, until);
      panel.AddEffect(static_cast<std::size_t>(n), i, from, to);
      const auto [x0, x1] = BucketsWithin(fleet, at - res, at + kTransitionS + res);
      panel.Exclude(static_cast<std::size_t>(n), x0 > 0 ? x0 - 1 : 0, x1);
    }
  }
}

}  // namespace

bool FollowsWork(std::string_view name) {
  return name == "DCGM_FI_DEV_SM_CLOCK" || name == "DCGM_FI_DEV_POWER_USAGE" ||
         name == "DCGM_FI_DEV_GPU_TEMP" || name.starts_with("throttle:") ||
         name.starts_with("DCGM_FI_PROF_");
}

bool CanHeadRegression(std::string_view metric) {
  return metric == "vllm:time_per_output_token_seconds" || metric == "DCGM_FI_DEV_SM_CLOCK" ||
         metric.starts_with("throttle:") || metric == "DCGM_FI_DEV_PCIE_LINK_WIDTH" ||
         metric == "DCGM_FI_DEV_PCIE_LINK_GEN" || metric == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" ||
         metric == "DCGM_FI_DEV_XID_ERRORS" || metric == "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL" ||
         metric == "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL";
}

EffectsFit EstimateReleaseEffects(const FleetSeries& fleet, const std::vector<Reach>& reaches) {
  EffectsFit out;
  const std::size_t nn = fleet.nodes.size();
  const std::size_t nb = fleet.buckets;
  const std::size_t nk = reaches.size();
  out.releases.resize(nk);
  for (std::size_t i = 0; i < nk; ++i) out.releases[i].reach = i;
  if (nn == 0 || nb == 0 || nk == 0) return out;
  // The layout every measure's panel shares: which release is active where.
  stats::Panel layout(nn, nb, nk);
  LayOut(fleet, reaches, layout);

  // The node served in a bucket: tokens generated (when the fleet's servers
  // are scraped at all).
  const int tokens = MetricIndex("vllm:generation_tokens_per_s");
  const int running = MetricIndex("vllm:num_requests_running");
  const int itl = MetricIndex("vllm:time_per_output_token_seconds");
  std::vector<double> served(nn * nb, kNaN);
  bool any_service = false;
  for (std::size_t n = 0; n < nn; ++n) {
    const std::vector<double> v = NodeValues(fleet, n, tokens);
    for (std::size_t b = 0; b < nb; ++b) {
      served[n * nb + b] = v[b];
      any_service |= std::isfinite(v[b]);
    }
  }

  // Log of the running batch, the latency's covariate.
  std::vector<double> load(nn * nb, kNaN);
  std::size_t load_cells = 0;
  for (std::size_t n = 0; n < nn; ++n) {
    const std::vector<double> v = NodeValues(fleet, n, running);
    for (std::size_t b = 0; b < nb; ++b) {
      if (std::isfinite(v[b]) && v[b] > 0) {
        load[n * nb + b] = std::log(v[b]);
        ++load_cells;
      }
    }
  }

  const auto early_cells =
      static_cast<std::size_t>(std::ceil(kEarlyS / static_cast<double>(fleet.resolution_s)));
  const std::vector<MetricDef>& defs = Metrics();
  for (std::size_t m = 0; m < defs.size(); ++m) {
    const MetricDef& def = defs[m];
    if (def.name == "vllm:generation_tokens_per_s" || def.name == "vllm:num_requests_running") {
      continue;  // they follow the load routed to a node
    }
    const bool busy_only = FollowsWork(def.name) && any_service;
    const bool with_load = static_cast<int>(m) == itl && load_cells > 0;
    stats::Panel panel = layout;
    stats::Panel x_panel = layout;
    std::vector<double> raw(nn * nb, kNaN);
    std::size_t cells = 0;
    for (std::size_t n = 0; n < nn; ++n) {
      const std::vector<double> v = NodeValues(fleet, n, static_cast<int>(m));
      for (std::size_t b = 0; b < nb; ++b) {
        const std::size_t i = n * nb + b;
        double y = v[b];
        if (!std::isfinite(y)) continue;
        if (busy_only && !(served[i] > 0)) continue;
        if (with_load && !std::isfinite(load[i])) continue;
        raw[i] = y;
        if (def.relative) {
          if (!(y > 0)) continue;
          y = std::log(y);
        }
        panel.Set(n, b, y);
        if (with_load) x_panel.Set(n, b, load[i]);
        if (panel.used(n, b)) ++cells;
      }
    }
    if (cells == 0) continue;
    if (with_load) {
      // Frisch-Waugh-Lovell: the slope of y on the load within nodes, buckets
      // and releases, then the panel of y less the load's part.
      const stats::PanelFit fy = stats::FitPanel(panel);
      const stats::PanelFit fx = stats::FitPanel(x_panel);
      double sxy = 0;
      double sxx = 0;
      for (std::size_t i = 0; i < fy.residual.size(); ++i) {
        if (!std::isfinite(fy.residual[i]) || !std::isfinite(fx.residual[i])) continue;
        sxy += fx.residual[i] * fy.residual[i];
        sxx += fx.residual[i] * fx.residual[i];
      }
      if (sxx > 0) {
        out.load_slope = sxy / sxx;
        for (std::size_t n = 0; n < nn; ++n) {
          for (std::size_t b = 0; b < nb; ++b) {
            if (panel.used(n, b))
              panel.Set(n, b, panel.y(n, b) - out.load_slope * load[n * nb + b]);
          }
        }
      }
    }
    const stats::PanelFit fit = stats::FitPanel(panel);
    const double sign = def.better == Better::kHigher ? -1 : 1;
    for (std::size_t k = 0; k < nk; ++k) {
      const stats::EffectEstimate& re = fit.effects[k];
      MeasureEffect me;
      me.metric = static_cast<int>(m);
      me.identified = re.identified;
      me.effect = re.effect;
      me.se = re.se;
      // A step with no noise at all (a throttle flag 0 everywhere before, 1
      // on the release's nodes after: the exact solve leaves no residual)
      // has no standard error; its z is as large as z gets, not 0.
      const double se = re.se > 0 ? re.se : kExactSe * std::max(1.0, std::fabs(re.effect));
      me.z = re.identified ? sign * re.effect / se : 0;
      // The raw level on the release's nodes before it got there.
      double out_sum = 0;
      double out_n = 0;
      double early_sum = 0;
      double early_nodes = 0;
      for (const stats::EntityEffect& ee : re.per_entity) {
        me.per_node.emplace_back(static_cast<int>(ee.entity), ee.effect);
        if (sign * ee.effect > 0) ++me.nodes_harmed;
        const double arrival = reaches[k].arrival.at(static_cast<int>(ee.entity));
        // The node's own effect over its first early_cells under the release.
        double first = 0;
        double first_n = 0;
        double rest = 0;
        double rest_n = 0;
        for (std::size_t b = 0; b < nb; ++b) {
          const std::size_t c = ee.entity * nb + b;
          if (!panel.used(ee.entity, b)) continue;
          const bool on = panel.active(ee.entity, b, k);
          if (on) {
            if (first_n < static_cast<double>(early_cells)) {
              first += fit.residual[c];
              first_n += 1;
            }
          } else {
            rest += fit.residual[c];
            rest_n += 1;
          }
          if (!std::isfinite(raw[c])) continue;
          if (!on && fleet.BucketStart(b) < arrival) {
            out_sum += raw[c];
            out_n += 1;
          }
        }
        if (first_n > 0 && rest_n > 0) {
          early_sum += re.effect + first / first_n - rest / rest_n;
          early_nodes += 1;
        }
      }
      if (early_nodes > 0) me.early = early_sum / early_nodes;
      me.before = out_n > 0 ? out_sum / out_n : kNaN;
      // Leave one node out: the pooled effect from the others' own effects
      // (weights as in the pooled one), its standard error scaled by the
      // weight left.
      me.robust_z = me.z;
      me.robust_effect = me.effect;
      if (re.identified && re.per_entity.size() >= 2) {
        double w_all = 0;
        for (const stats::EntityEffect& ee : re.per_entity) w_all += ee.weight;
        for (const stats::EntityEffect& ee : re.per_entity) {
          const double w_rest = w_all - ee.weight;
          if (!(w_rest > 0)) continue;
          const double effect = (re.effect * w_all - ee.effect * ee.weight) / w_rest;
          const double se_rest = std::max(re.se * std::sqrt(w_all / w_rest),
                                          kExactSe * std::max(1.0, std::fabs(effect)));
          const double z = sign * effect / se_rest;
          if (z < me.robust_z) {
            me.robust_z = z;
            me.robust_effect = effect;
          }
        }
      }
      out.releases[k].measures.push_back(std::move(me));
    }
  }
  return out;
}

}  // namespace gpucanary::analysis::correlate
