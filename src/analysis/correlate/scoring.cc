// A release scored on a group of episodes (docs/analysis-method.md,
// "Attribution"): space (the changed nodes are its nodes, and its nodes
// changed), time (each node changed soon after the release got there), dose
// (the number of changed nodes rose as it reached more of them) and
// mechanism (one a release can cause), and the reason in words.
//
//   score = space x (0.25 + 0.75 time) x (0.5 + 0.5 dose) x mechanism

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate_internal.h"
#include "dcgm/xid.h"

namespace gpucanary::analysis::correlate {
namespace {

using vocab::CauseKind;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

double MechanismPlausibility(std::optional<CauseKind> kind, std::uint32_t xid) {
  if (!kind) return 0.6;
  switch (*kind) {
    case CauseKind::kPowerBrake:
    case CauseKind::kPowerCap:
    case CauseKind::kMemoryThrash:
    case CauseKind::kLowOccupancy:
    case CauseKind::kSoftwareRegression:
    case CauseKind::kPcieDowntrain:
      return 1.0;
    case CauseKind::kThermalThrottle:
      return 0.9;
    case CauseKind::kXidErrors: {
      const dcgm::XidInfo* info = dcgm::FindXid(xid);
      if (info == nullptr) return 0.7;
      switch (info->likely_source) {
        case dcgm::XidSource::kSoftware:
          return 1.0;
        case dcgm::XidSource::kDriverFirmware:
          return 0.8;
        case dcgm::XidSource::kHardware:
          return 0.4;
      }
      return 0.6;
    }
    case CauseKind::kHwSlowdown:
      return 0.6;
    case CauseKind::kPcieErrors:
      return 0.5;
    case CauseKind::kEccErrors:
      return 0.4;
  }
  return 0.6;
}

namespace {

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (x.size() < 2) return kNaN;
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0;
  double sxx = 0;
  double syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return kNaN;
  return sxy / std::sqrt(sxx * syy);
}

// Time score of one node's onset `lag` seconds after the release arrived.
double LagScore(double lag, double resolution_s, double max_lag_s) {
  if (lag < -(resolution_s + 5)) return 0;  // it began before the release got there
  if (lag <= kPromptLagS + resolution_s) return 1;
  if (lag >= max_lag_s) return 0;
  return 1 - (lag - kPromptLagS - resolution_s) / (max_lag_s - kPromptLagS - resolution_s);
}

std::string FormatDuration(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f s", s);
  return buf;
}

// What Score measured of one release on one group: its parts come from
// these, and so does its reason in words.
struct Measured {
  std::vector<std::pair<int, double>> lags;  // changed nodes it ran on: node, onset - arrival
  int reachable = 0;                         // its nodes that ran it long enough to tell
  int shared_reachable = 0;                  // of those, the changed ones
  int on_time = 0;                           // lags with a time score above 0
  double corr = kNaN;                        // dose: nodes reached against nodes changed
};

// The changed nodes where the release still ran when the change began (once
// the next release has replaced it on a node, a change there is not its),
// each with its onset's lag after the release's arrival.
std::vector<std::pair<int, double>> Lags(const Group& g, const Reach& r, double res) {
  std::vector<std::pair<int, double>> lags;  // node, lag
  for (const auto& [node, onset] : g.node_onset) {
    if (auto it = r.arrival.find(node);
        it != r.arrival.end() && onset < r.replaced.at(node) + res) {
      lags.emplace_back(node, onset - it->second);
    }
  }
  return lags;
}

// Whether node `n` has data after the release arrived there (its service),
// or any data at all (its GPUs).
bool HasData(const Reach& r, int n, const FleetSeries& fleet, double res) {
  for (const EntitySeries& es : fleet.node_series[static_cast<std::size_t>(n)]) {
    const double from = r.arrival.at(n);
    const std::size_t b0 = from <= fleet.BucketStart(0)
                               ? 0
                               : static_cast<std::size_t>((from - fleet.BucketStart(0)) / res);
    for (std::size_t b = b0; b < es.values.size(); ++b) {
      if (std::isfinite(es.values[b])) return true;
    }
  }
  for (int gi : fleet.nodes[static_cast<std::size_t>(n)].gpus) {
    for (const EntitySeries& es : fleet.gpu_series[static_cast<std::size_t>(gi)]) {
      for (double v : es.values) {
        if (std::isfinite(v)) return true;
      }
    }
  }
  return false;
}

// The release's nodes that could show it: those with data after it
// arrived, where it ran long enough to be judged before the next release.
void CountReachable(const Group& g, const Reach& r, const FleetSeries& fleet,
                    const CorrelateOptions& options, double res, Measured& m) {
  const double judged_s = static_cast<double>(options.warmup_s + kPersistS) + res;
  for (int n : r.nodes) {
    if (r.replaced.at(n) - r.arrival.at(n) < judged_s) continue;
    if (HasData(r, n, fleet, res)) {
      ++m.reachable;
      m.shared_reachable += g.node_onset.contains(n) ? 1 : 0;
    }
  }
}

// Space: are the changed nodes the release's, and did its nodes change?
double SpaceScore(const Group& g, const Measured& m) {
  const double changed = static_cast<double>(g.node_onset.size());
  const double shared = static_cast<double>(m.lags.size());
  const double precision = changed > 0 ? shared / changed : 0;
  const double recall = m.reachable > 0 ? static_cast<double>(m.shared_reachable) / m.reachable : 0;
  return precision * recall;
}

// Time: did each node change soon after the release got there? Counts the
// nodes on time in `m` and adds them to `explained` (when not null).
double TimeScore(double res, const CorrelateOptions& options, Measured& m,
                 std::set<int>* explained) {
  double time_sum = 0;
  for (const auto& [node, lag] : m.lags) {
    const double f = LagScore(lag, res, static_cast<double>(options.max_lag_s));
    time_sum += f;
    if (f > 0) {
      ++m.on_time;
      if (explained != nullptr) explained->insert(node);
    }
  }
  return m.lags.empty() ? 0 : time_sum / static_cast<double>(m.lags.size());
}

// Dose: the correlation, over the buckets around the events, of the number
// of nodes the release had reached and the number of changed nodes (NaN
// when either is constant).
double DoseCorrelation(const Group& g, const Reach& r, double res) {
  double t0 = std::numeric_limits<double>::infinity();
  double t1 = -t0;
  for (const auto& [n, at] : r.arrival) t0 = std::min(t0, at), t1 = std::max(t1, at);
  for (const auto& [n, onset] : g.node_onset) t0 = std::min(t0, onset), t1 = std::max(t1, onset);
  std::vector<double> reached;
  std::vector<double> hit;
  const auto steps = static_cast<std::int64_t>((t1 - t0) / res) + 6;
  for (std::int64_t k = 0; k <= steps; ++k) {
    const double t = t0 + static_cast<double>(k - 3) * res;
    double a = 0;
    double b = 0;
    for (const auto& [n, at] : r.arrival) a += at <= t ? 1 : 0;
    for (const auto& [n, onset] : g.node_onset) b += onset <= t ? 1 : 0;
    reached.push_back(a);
    hit.push_back(b);
  }
  return Pearson(reached, hit);
}

// "changed on 3 of its 4 nodes (node-3 +25 s after it arrived, ...)".
std::string NodesPhrase(const Measured& m, const Reach& r, const FleetSeries& fleet) {
  const double shared = static_cast<double>(m.lags.size());
  std::string why;
  why += "changed on " + std::to_string(static_cast<int>(shared)) + " of its " +
         std::to_string(r.nodes.size()) + " node" + (r.nodes.size() == 1 ? "" : "s");
  if (m.reachable < static_cast<int>(r.nodes.size())) {
    why += " (" + std::to_string(m.reachable) + " ran it long enough to tell)";
  }
  if (!m.lags.empty()) {
    why += " (";
    std::vector<std::pair<int, double>> by_arrival = m.lags;
    std::sort(by_arrival.begin(), by_arrival.end(), [&](const auto& a, const auto& b) {
      return r.arrival.at(a.first) < r.arrival.at(b.first);
    });
    for (std::size_t i = 0; i < by_arrival.size() && i < 4; ++i) {
      if (i > 0) why += ", ";
      why += fleet.nodes[static_cast<std::size_t>(by_arrival[i].first)].host + " " +
             FormatDuration(by_arrival[i].second) + " after it arrived";
    }
    if (by_arrival.size() > 4) why += ", ...";
    why += ")";
  }
  return why;
}

// The suspect's reason, in words, for an SRE.
std::string Reason(const Group& g, const Reach& r, const FleetSeries& fleet, const Measured& m,
                   std::optional<CauseKind> kind, double mechanism) {
  const double changed = static_cast<double>(g.node_onset.size());
  const double shared = static_cast<double>(m.lags.size());
  std::string why = NodesPhrase(m, r, fleet);
  const int outside = static_cast<int>(changed - shared);
  why += outside == 0 ? "; no node without it changed"
                      : "; " + std::to_string(outside) + " changed node" +
                            (outside == 1 ? "" : "s") + " without it";
  if (m.on_time < static_cast<int>(shared)) {
    why += "; " + std::to_string(static_cast<int>(shared) - m.on_time) +
           " changed before it arrived or too long after";
  }
  char dose[64];
  std::snprintf(dose, sizeof dose, "; dose r=%.2f", std::isnan(m.corr) ? 0.0 : m.corr);
  why += dose;
  if (kind) {
    const std::string name(vocab::Name(*kind));
    why += mechanism >= 0.9 ? "; " + name + " is a mechanism a release can cause"
                            : "; " + name + " points more to hardware";
  }
  return why;
}

// Release `r` scored on `g`; the nodes it explains (on its nodes, on time)
// go to `explained` when not null.
Suspect Score(const Group& g, const Reach& r, const FleetSeries& fleet,
              const CorrelateOptions& options, std::optional<CauseKind> kind, std::uint32_t xid,
              std::set<int>* explained) {
  Suspect s;
  s.release = r.release->id;
  const auto res = static_cast<double>(fleet.resolution_s);
  Measured m;
  m.lags = Lags(g, r, res);
  CountReachable(g, r, fleet, options, res, m);
  s.space = SpaceScore(g, m);
  s.time = TimeScore(res, options, m, explained);
  m.corr = DoseCorrelation(g, r, res);
  s.dose = std::isnan(m.corr) ? 0.5 : std::max(0.0, m.corr);
  s.mechanism = MechanismPlausibility(kind, xid);
  s.score = s.space * (0.25 + 0.75 * s.time) * (0.5 + 0.5 * s.dose) * s.mechanism;
  s.reason = Reason(g, r, fleet, m, kind, s.mechanism);
  return s;
}

}  // namespace

Scored ScoreReleases(const Group& g, const std::vector<Reach>& reaches, const FleetSeries& fleet,
                     const CorrelateOptions& options) {
  const Episode& first = *g.episodes.front();
  const std::uint32_t xid = first.kind == CauseKind::kXidErrors
                                ? fleet.xid_codes[static_cast<std::size_t>(first.gpu)]
                                : 0;
  Scored out;
  out.explained.resize(reaches.size());
  for (std::size_t i = 0; i < reaches.size(); ++i) {
    out.suspects.push_back(
        Score(g, reaches[i], fleet, options, first.kind, xid, &out.explained[i]));
  }
  return out;
}

}  // namespace gpucanary::analysis::correlate
