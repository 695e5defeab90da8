#include "analysis/correlate/correlate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "analysis/correlate/series.h"
#include "analysis/cpd/cpd.h"
#include "analysis/judge/diagnose.h"
#include "core/time_format.h"
#include "dcgm/xid.h"
#include "store/matcher.h"

namespace gpucanary::analysis::correlate {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A change must hold at least this long to count (a burst that went away
// does not), and a step the segmentation cut into pieces shorter than this
// is one change.
constexpr std::int64_t kPersistS = 90;
// A step may take this long to complete (a GPU heating up after its
// cooling worsened); a slope taking longer (diurnal load) is not a step.
constexpr std::int64_t kRampS = 60;
// Present buckets compared on each side of a change to tell a step from a
// slope.
constexpr std::size_t kLocalBuckets = 2;
// The step just around the change must carry at least this share of the
// change between the two segments' levels (diurnal load is a slope).
constexpr double kAbruptShare = 0.5;
// One GPU's changes whose onsets are this close are one episode.
constexpr std::int64_t kEpisodeLinkS = 120;
// Onsets up to this long after a release's arrival count fully on time.
constexpr std::int64_t kPromptLagS = 120;
// A release's nodes are reached within this long of its start (a staged
// rollout takes longer: announce each stage).
constexpr std::int64_t kRolloutS = 1800;

// One lasting, material change of one series.
struct Change {
  int metric = 0;
  std::size_t bucket = 0;  // the first bucket of the new level
  double before = 0;       // levels in the metric's own unit
  double after = 0;
  double change = 0;  // relative or absolute, per the metric
  bool harmful = false;
};

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  }
  return m;
}

// Present values of `x` in [from, to).
std::vector<double> Present(const std::vector<double>& x, std::size_t from, std::size_t to) {
  std::vector<double> out;
  for (std::size_t i = from; i < to && i < x.size(); ++i) {
    if (std::isfinite(x[i])) out.push_back(x[i]);
  }
  return out;
}

// The last (first) `k` present values before (from) index `at`.
std::vector<double> PresentBefore(const std::vector<double>& x, std::size_t at, std::size_t k) {
  std::vector<double> out;
  for (std::size_t i = at; i-- > 0 && out.size() < k;) {
    if (std::isfinite(x[i])) out.push_back(x[i]);
  }
  return out;
}
std::vector<double> PresentFrom(const std::vector<double>& x, std::size_t at, std::size_t k) {
  std::vector<double> out;
  for (std::size_t i = at; i < x.size() && out.size() < k; ++i) {
    if (std::isfinite(x[i])) out.push_back(x[i]);
  }
  return out;
}

// The lasting, material, abrupt changes of one series.
std::vector<Change> DetectChanges(const EntitySeries& series, std::int64_t resolution_s) {
  const MetricDef& def = Metrics()[static_cast<std::size_t>(series.metric)];
  const std::vector<double>& raw = series.values;
  // Rates and fractions of rare events (XIDs, ECC errors, replays) are
  // mostly zero: their level is the mean, where a median would see none.
  const bool events = def.reduce == Reduce::kRate || def.reduce == Reduce::kNonZeroFraction ||
                      def.reduce == Reduce::kBitFraction;
  const auto center = [events](const std::vector<double>& v) {
    if (!events || v.empty()) return Median(v);
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  // Relative metrics are segmented on the log scale, where a 10% step is the
  // same size at any level.
  std::vector<double> y(raw.size(), kNaN);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!std::isfinite(raw[i])) continue;
    if (def.relative) {
      if (raw[i] > 0) y[i] = std::log(raw[i]);
    } else {
      y[i] = raw[i];
    }
  }
  // Levels against the sample-to-sample noise: every lasting shift is a
  // candidate, and the floors, the persistence and the step test below keep
  // the ones that matter (docs/analysis-method.md, "Correlation").
  cpd::SegmentOptions segment;
  segment.model = cpd::SegmentOptions::Model::kLevel;
  segment.min_segment = 2;
  const std::vector<std::size_t> cps = cpd::Segment(y, segment);
  if (cps.empty()) return {};

  std::vector<std::size_t> bounds;  // segment starts, then the end
  bounds.push_back(0);
  bounds.insert(bounds.end(), cps.begin(), cps.end());
  bounds.push_back(y.size());
  const auto persist = static_cast<std::size_t>((kPersistS + resolution_s - 1) / resolution_s);
  const auto ramp = static_cast<std::size_t>(kRampS / resolution_s);
  const auto level = [&](std::size_t a, std::size_t b) { return center(Present(y, a, b)); };

  std::size_t first_present = 0;
  while (first_present < y.size() && !std::isfinite(y[first_present])) ++first_present;
  std::vector<Change> out;
  std::size_t i = 1;
  while (i + 1 < bounds.size()) {
    // A step the segmentation cut into short pieces of one direction (a
    // ramp: a GPU heating up) is one change, from the level before its
    // first piece to the level after its last.
    const std::size_t first = i;
    const double dir = level(bounds[i], bounds[i + 1]) - level(bounds[i - 1], bounds[i]);
    std::size_t last = i;
    while (last + 2 < bounds.size() && bounds[last + 1] - bounds[last] < persist) {
      const double next =
          level(bounds[last + 1], bounds[last + 2]) - level(bounds[last], bounds[last + 1]);
      if (!(next * dir > 0)) break;
      ++last;
    }
    i = last + 1;
    // The onset: the first piece that carries a fair share of the whole step
    // (a small wobble the segmentation cut just before it is not the start).
    const double total =
        level(bounds[last], bounds[last + 1]) - level(bounds[first - 1], bounds[first]);
    std::size_t onset = first;
    for (std::size_t k = first; k <= last; ++k) {
      const double piece = level(bounds[k], bounds[k + 1]) - level(bounds[k - 1], bounds[k]);
      if (piece * total > 0 && std::fabs(piece) >= 0.25 * std::fabs(total)) {
        onset = k;
        break;
      }
    }
    const std::size_t at = bounds[onset];
    const std::size_t after_from = bounds[last];
    // The levels are the medians over kPersistS before the step and
    // kPersistS from its end: the new one must hold (not a burst that went
    // away), and there must be that much before it (not the first seconds
    // of a recording, GPUs warming up from idle). Small steps inside either
    // window do not matter.
    if (at < first_present + persist || after_from + persist > y.size()) continue;
    // Before: the last kPersistS worth of present buckets, looking back past
    // masked restarts (a node that took two releases in a row) but not past
    // the previous segment's start or 3 x kPersistS.
    const std::size_t lookback =
        std::max(bounds[first - 1], at > 3 * persist ? at - 3 * persist : 0);
    const std::vector<double> before_v =
        PresentBefore(y, at, std::min(persist, Present(y, lookback, at).size()));
    const std::vector<double> after_v = Present(y, after_from, after_from + persist);
    if (before_v.size() < 3 || after_v.size() < 3) continue;
    const double delta = center(after_v) - center(before_v);
    // A step, not a slope: most of the change happens within kRampS of its
    // start (a GPU heats up in about a minute; diurnal load takes hours).
    const double level_before = center(PresentBefore(y, at, kLocalBuckets));
    double local = 0;
    for (std::size_t r = 0; r <= ramp && after_from + r < y.size(); ++r) {
      const double step = center(PresentFrom(y, after_from + r, kLocalBuckets)) - level_before;
      if (step * delta > local * delta) local = step;
    }
    if (!(local * delta > 0) || std::fabs(local) < kAbruptShare * std::fabs(delta)) continue;
    // Dated by the first present bucket that has moved a quarter of the way:
    // a segment the segmentation opened a little early (it may start just
    // before a masked restart) does not date the change.
    std::size_t onset_bucket = at;
    for (std::size_t k = at; k < after_from + persist && k < y.size(); ++k) {
      if (std::isfinite(y[k]) && (y[k] - center(before_v)) * delta >= 0.25 * delta * delta) {
        onset_bucket = k;
        break;
      }
    }
    Change c;
    c.metric = series.metric;
    c.bucket = onset_bucket;
    c.before = def.relative ? std::exp(center(before_v)) : center(before_v);
    c.after = def.relative ? std::exp(center(after_v)) : center(after_v);
    c.change = def.relative ? std::exp(delta) - 1 : delta;
    if (std::fabs(c.change) < def.floor) continue;
    c.harmful =
        (def.better == Better::kHigher && delta < 0) || (def.better == Better::kLower && delta > 0);
    out.push_back(c);
  }
  return out;
}

// One GPU's co-occurring changes, with the mechanism they point to.
struct Episode {
  int gpu = 0;
  int node = 0;
  std::size_t bucket = 0;  // onset
  std::vector<Change> changes;
  std::string kind;    // cause vocabulary, "" when none fits
  std::string detail;  // XID code, reasons
  std::string headline;
};

const Change* FindChange(const Episode& e, std::string_view metric, int sign) {
  for (const Change& c : e.changes) {
    if (Metrics()[static_cast<std::size_t>(c.metric)].name != metric) continue;
    if (sign == 0 || (sign > 0 && c.change > 0) || (sign < 0 && c.change < 0)) return &c;
  }
  return nullptr;
}

// The judge's vocabulary, read from which metrics moved together.
void Classify(Episode& e, std::uint32_t xid_code) {
  const auto up = [&](std::string_view m) { return FindChange(e, m, +1) != nullptr; };
  const auto down = [&](std::string_view m) { return FindChange(e, m, -1) != nullptr; };
  const bool service =
      up("vllm:time_per_output_token_seconds") || up("vllm:e2e_request_latency_seconds:p99");
  if (up("throttle:power_brake")) {
    e.kind = "power_brake";
  } else if (up("throttle:thermal")) {
    e.kind = "thermal_throttle";
  } else if (up("throttle:hw_slowdown")) {
    e.kind = "hw_slowdown";
  } else if (up("throttle:sw_power_cap")) {
    e.kind = "power_cap";
  } else if (down("DCGM_FI_DEV_PCIE_LINK_WIDTH") || down("DCGM_FI_DEV_PCIE_LINK_GEN")) {
    e.kind = "pcie_downtrain";
  } else if (up("DCGM_FI_DEV_PCIE_REPLAY_COUNTER")) {
    e.kind = "pcie_errors";
  } else if (up("DCGM_FI_DEV_XID_ERRORS")) {
    e.kind = "xid_errors";
    if (xid_code != 0) e.detail = "XID " + std::to_string(xid_code);
  } else if (up("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") || up("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")) {
    e.kind = "ecc_errors";
  } else if (up("DCGM_FI_PROF_DRAM_ACTIVE") &&
             (down("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") ||
              (service && !up("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")))) {
    // More DRAM traffic for the same or less tensor work (more load raises
    // both together).
    e.kind = "memory_thrash";
  } else if (down("DCGM_FI_PROF_SM_OCCUPANCY")) {
    e.kind = "low_occupancy";
  } else if (service) {
    e.kind = "software_regression";
  }
  // The headline: what the service lost when it lost something, else the
  // mechanism's own metric, else the largest harmful change.
  static constexpr std::string_view kService[] = {"vllm:time_per_output_token_seconds",
                                                  "vllm:e2e_request_latency_seconds:p99"};
  for (std::string_view m : kService) {
    if (up(m)) {
      e.headline = std::string(m);
      return;
    }
  }
  static const std::map<std::string, std::string, std::less<>> kPrimary = {
      {"power_brake", "DCGM_FI_DEV_SM_CLOCK"},
      {"thermal_throttle", "DCGM_FI_DEV_SM_CLOCK"},
      {"hw_slowdown", "DCGM_FI_DEV_SM_CLOCK"},
      {"power_cap", "DCGM_FI_DEV_SM_CLOCK"},
      {"pcie_downtrain", "DCGM_FI_DEV_PCIE_LINK_WIDTH"},
      {"pcie_errors", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"},
      {"xid_errors", "DCGM_FI_DEV_XID_ERRORS"},
      {"ecc_errors", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"},
      {"memory_thrash", "DCGM_FI_PROF_DRAM_ACTIVE"},
      {"low_occupancy", "DCGM_FI_PROF_SM_OCCUPANCY"},
  };
  if (auto it = kPrimary.find(e.kind); it != kPrimary.end()) {
    if (FindChange(e, it->second, 0) != nullptr) {
      e.headline = it->second;
      return;
    }
    if (it->second == "DCGM_FI_DEV_PCIE_LINK_WIDTH" &&
        FindChange(e, "DCGM_FI_DEV_PCIE_LINK_GEN", 0) != nullptr) {
      e.headline = "DCGM_FI_DEV_PCIE_LINK_GEN";
      return;
    }
  }
  double best = -1;
  for (const Change& c : e.changes) {
    const MetricDef& def = Metrics()[static_cast<std::size_t>(c.metric)];
    const double size = std::fabs(c.change) / def.floor;
    if (c.harmful && size > best) {
      best = size;
      e.headline = std::string(def.name);
    }
  }
}

// The metrics whose change names each mechanism.
const std::vector<std::string_view>& SignatureOf(std::string_view kind) {
  static const std::map<std::string_view, std::vector<std::string_view>, std::less<>> kSignature = {
      {"power_brake", {"throttle:power_brake"}},
      {"thermal_throttle", {"throttle:thermal"}},
      {"hw_slowdown", {"throttle:hw_slowdown"}},
      {"power_cap", {"throttle:sw_power_cap"}},
      {"pcie_downtrain", {"DCGM_FI_DEV_PCIE_LINK_WIDTH", "DCGM_FI_DEV_PCIE_LINK_GEN"}},
      {"pcie_errors", {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER"}},
      {"xid_errors", {"DCGM_FI_DEV_XID_ERRORS"}},
      {"ecc_errors", {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}},
      {"memory_thrash", {"DCGM_FI_PROF_DRAM_ACTIVE"}},
      {"low_occupancy", {"DCGM_FI_PROF_SM_OCCUPANCY"}},
      {"software_regression",
       {"vllm:time_per_output_token_seconds", "vllm:e2e_request_latency_seconds:p99"}},
  };
  static const std::vector<std::string_view> kNone;
  auto it = kSignature.find(kind);
  return it == kSignature.end() ? kNone : it->second;
}

// An episode begins when its mechanism's own metric moved: a change of load
// a little earlier that it absorbed does not date it.
void DateBySignature(Episode& e) {
  std::optional<std::size_t> first;
  for (const Change& c : e.changes) {
    const std::string_view name = Metrics()[static_cast<std::size_t>(c.metric)].name;
    for (std::string_view m : SignatureOf(e.kind)) {
      if (m == name && (!first || c.bucket < *first)) first = c.bucket;
    }
  }
  if (first) e.bucket = *first;
}

// Episodes per GPU: each harmful change opens one, unless it falls within
// kEpisodeLinkS of the open one; changes of neutral metrics (power, DRAM,
// tokens/s) around an onset join it as evidence.
std::vector<Episode> FindEpisodes(const FleetSeries& fleet) {
  const std::int64_t res = fleet.resolution_s;
  const auto link = static_cast<std::size_t>((kEpisodeLinkS + res - 1) / res);
  std::vector<std::vector<Change>> node_changes(fleet.node_series.size());
  for (std::size_t n = 0; n < fleet.node_series.size(); ++n) {
    for (const EntitySeries& s : fleet.node_series[n]) {
      std::vector<Change> c = DetectChanges(s, res);
      node_changes[n].insert(node_changes[n].end(), c.begin(), c.end());
    }
  }
  std::vector<Episode> episodes;
  for (std::size_t g = 0; g < fleet.gpu_series.size() && g < fleet.gpus.size(); ++g) {
    const int node = fleet.gpus[g].node;
    std::vector<Change> all;
    for (const EntitySeries& s : fleet.gpu_series[g]) {
      std::vector<Change> c = DetectChanges(s, res);
      all.insert(all.end(), c.begin(), c.end());
    }
    if (static_cast<std::size_t>(node) < node_changes.size()) {
      const std::vector<Change>& nc = node_changes[static_cast<std::size_t>(node)];
      all.insert(all.end(), nc.begin(), nc.end());
    }
    std::sort(all.begin(), all.end(),
              [](const Change& a, const Change& b) { return a.bucket < b.bucket; });
    std::vector<Episode> mine;
    for (const Change& c : all) {
      if (!c.harmful) continue;
      if (!mine.empty() && c.bucket <= mine.back().bucket + link) continue;
      Episode e;
      e.gpu = static_cast<int>(g);
      e.node = node;
      e.bucket = c.bucket;
      mine.push_back(std::move(e));
    }
    for (Episode& e : mine) {
      // One change per metric: a harmful one before a harmless one, then the
      // closest to the onset (the episode's own change, never a metric's
      // earlier move the other way).
      std::vector<const Change*> near;
      for (const Change& c : all) {
        const std::size_t lo = e.bucket > link ? e.bucket - link : 0;
        if (c.bucket >= lo && c.bucket <= e.bucket + link) near.push_back(&c);
      }
      const auto distance = [&](const Change* c) {
        return c->bucket > e.bucket ? c->bucket - e.bucket : e.bucket - c->bucket;
      };
      std::stable_sort(near.begin(), near.end(), [&](const Change* a, const Change* b) {
        return std::make_pair(!a->harmful, distance(a)) < std::make_pair(!b->harmful, distance(b));
      });
      for (const Change* c : near) {
        bool same = false;
        for (const Change& have : e.changes) same |= have.metric == c->metric;
        if (!same) e.changes.push_back(*c);
      }
      Classify(e, g < fleet.xid_codes.size() ? fleet.xid_codes[g] : 0);
      DateBySignature(e);
      episodes.push_back(std::move(e));
    }
  }
  return episodes;
}

// --- Releases -----------------------------------------------------------

struct Reach {
  const releases::Release* release = nullptr;
  std::vector<int> nodes;         // fleet node indices, in arrival order
  std::map<int, double> arrival;  // node -> Unix seconds
  std::map<int, bool> observed;
  std::map<int, double> replaced;  // node -> when the next release there started (inf: never)
};

// The nodes a release names: its targets, else the nodes its selector's
// host matchers accept, else every node.
std::vector<int> ReleaseNodes(const releases::Release& r, const FleetSeries& fleet) {
  std::vector<int> out;
  if (!r.targets.empty()) {
    for (const std::string& t : r.targets) {
      for (std::size_t n = 0; n < fleet.nodes.size(); ++n) {
        if (fleet.nodes[n].host == t) out.push_back(static_cast<int>(n));
      }
    }
    return out;
  }
  std::vector<store::Matcher> host_matchers;
  if (!r.selector.empty()) {
    if (Result<std::vector<store::Matcher>> m = store::ParseSelector(r.selector)) {
      for (const store::Matcher& x : *m) {
        if (x.name() == "Hostname" || x.name() == "hostname") host_matchers.push_back(x);
      }
    }
  }
  for (std::size_t n = 0; n < fleet.nodes.size(); ++n) {
    bool ok = true;
    for (const store::Matcher& m : host_matchers) ok &= m.Matches(fleet.nodes[n].host);
    if (ok) out.push_back(static_cast<int>(n));
  }
  return out;
}

// When each release reached each of its nodes: the end of the first
// model-server restart there after it started (and before the next release
// that names the node started), else its start.
std::vector<Reach> ResolveReaches(const std::vector<releases::Release>& releases,
                                  const FleetSeries& fleet) {
  std::vector<const releases::Release*> order;
  order.reserve(releases.size());
  for (const releases::Release& r : releases) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->started_at < b->started_at; });
  std::vector<Reach> out;
  std::vector<std::vector<int>> nodes_of;
  nodes_of.reserve(order.size());
  for (const releases::Release* r : order) nodes_of.push_back(ReleaseNodes(*r, fleet));
  for (std::size_t i = 0; i < order.size(); ++i) {
    Reach reach;
    reach.release = order[i];
    const double start = order[i]->started_at;
    for (int n : nodes_of[i]) {
      double replaced = std::numeric_limits<double>::infinity();
      for (std::size_t j = i + 1; j < order.size(); ++j) {
        if (order[j]->started_at > start &&
            std::find(nodes_of[j].begin(), nodes_of[j].end(), n) != nodes_of[j].end()) {
          replaced = order[j]->started_at;
          break;
        }
      }
      const double until = std::min(start + kRolloutS, replaced);
      double at = start;
      bool seen = false;
      if (static_cast<std::size_t>(n) < fleet.restarts.size()) {
        for (const Restart& rs : fleet.restarts[static_cast<std::size_t>(n)]) {
          if (static_cast<double>(rs.to_s) >= start - 5 && static_cast<double>(rs.from_s) < until) {
            at = static_cast<double>(rs.to_s);
            seen = true;
            break;
          }
        }
      }
      reach.arrival[n] = at;
      reach.observed[n] = seen;
      reach.replaced[n] = replaced;
      reach.nodes.push_back(n);
    }
    std::stable_sort(reach.nodes.begin(), reach.nodes.end(),
                     [&](int a, int b) { return reach.arrival[a] < reach.arrival[b]; });
    out.push_back(std::move(reach));
  }
  return out;
}

// --- Attribution --------------------------------------------------------

// How plausible it is that a release (rather than hardware) causes `kind`.
double MechanismPlausibility(std::string_view kind, std::uint32_t xid) {
  if (kind == "power_brake" || kind == "power_cap" || kind == "memory_thrash" ||
      kind == "low_occupancy" || kind == "software_regression" || kind == "pcie_downtrain") {
    return 1.0;
  }
  if (kind == "thermal_throttle") return 0.9;
  if (kind == "xid_errors") {
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
  }
  if (kind == "hw_slowdown") return 0.6;
  if (kind == "pcie_errors") return 0.5;
  if (kind == "ecc_errors") return 0.4;
  return 0.6;
}

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

struct Group {
  std::vector<const Episode*> episodes;
  std::map<int, double> node_onset;  // node -> earliest onset (Unix seconds)
};

void IndexNodes(Group& g, const FleetSeries& fleet) {
  g.node_onset.clear();
  for (const Episode* e : g.episodes) {
    const double t = fleet.BucketStart(e->bucket);
    auto [it, inserted] = g.node_onset.emplace(e->node, t);
    if (!inserted) it->second = std::min(it->second, t);
  }
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

Suspect Score(const Group& g, const Reach& r, const FleetSeries& fleet,
              const CorrelateOptions& options, std::string_view kind, std::uint32_t xid,
              std::set<int>* explained) {
  Suspect s;
  s.release = r.release->id;
  const auto res = static_cast<double>(fleet.resolution_s);
  // Space: are the changed nodes the release's, and did its nodes change?
  std::vector<std::pair<int, double>> lags;  // node, lag
  for (const auto& [node, onset] : g.node_onset) {
    // Only where the release still ran when the change began: once the
    // next release has replaced it on a node, a change there is not its.
    if (auto it = r.arrival.find(node);
        it != r.arrival.end() && onset < r.replaced.at(node) + res) {
      lags.emplace_back(node, onset - it->second);
    }
  }
  // The release's nodes that could show it: those with data after it
  // arrived, where it ran long enough to be judged before the next release.
  const double judged_s = static_cast<double>(options.warmup_s + kPersistS) + res;
  int reachable = 0;
  int shared_reachable = 0;
  for (int n : r.nodes) {
    if (r.replaced.at(n) - r.arrival.at(n) < judged_s) continue;
    bool data = false;
    for (const EntitySeries& es : fleet.node_series[static_cast<std::size_t>(n)]) {
      const double from = r.arrival.at(n);
      const std::size_t b0 = from <= fleet.BucketStart(0)
                                 ? 0
                                 : static_cast<std::size_t>((from - fleet.BucketStart(0)) / res);
      for (std::size_t b = b0; b < es.values.size() && !data; ++b)
        data = std::isfinite(es.values[b]);
    }
    if (!data) {
      for (int gi : fleet.nodes[static_cast<std::size_t>(n)].gpus) {
        for (const EntitySeries& es : fleet.gpu_series[static_cast<std::size_t>(gi)]) {
          for (double v : es.values) data |= std::isfinite(v);
        }
      }
    }
    if (data) {
      ++reachable;
      shared_reachable += g.node_onset.contains(n) ? 1 : 0;
    }
  }
  const double changed = static_cast<double>(g.node_onset.size());
  const double shared = static_cast<double>(lags.size());
  const double precision = changed > 0 ? shared / changed : 0;
  const double recall = reachable > 0 ? static_cast<double>(shared_reachable) / reachable : 0;
  s.space = precision * recall;
  // Time: did each node change soon after the release got there?
  double time_sum = 0;
  int on_time = 0;
  for (const auto& [node, lag] : lags) {
    const double f = LagScore(lag, res, static_cast<double>(options.max_lag_s));
    time_sum += f;
    if (f > 0) {
      ++on_time;
      if (explained != nullptr) explained->insert(node);
    }
  }
  s.time = lags.empty() ? 0 : time_sum / static_cast<double>(lags.size());
  // Dose: the number of changed nodes rising as the release reached more.
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
  const double corr = Pearson(reached, hit);
  s.dose = std::isnan(corr) ? 0.5 : std::max(0.0, corr);
  s.mechanism = MechanismPlausibility(kind, xid);
  s.score = s.space * (0.25 + 0.75 * s.time) * (0.5 + 0.5 * s.dose) * s.mechanism;

  // In words.
  std::string why;
  why += "changed on " + std::to_string(static_cast<int>(shared)) + " of its " +
         std::to_string(r.nodes.size()) + " node" + (r.nodes.size() == 1 ? "" : "s");
  if (reachable < static_cast<int>(r.nodes.size())) {
    why += " (" + std::to_string(reachable) + " ran it long enough to tell)";
  }
  if (!lags.empty()) {
    why += " (";
    std::vector<std::pair<int, double>> by_arrival = lags;
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
  const int outside = static_cast<int>(changed - shared);
  why += outside == 0 ? "; no node without it changed"
                      : "; " + std::to_string(outside) + " changed node" +
                            (outside == 1 ? "" : "s") + " without it";
  if (on_time < static_cast<int>(shared)) {
    why += "; " + std::to_string(static_cast<int>(shared) - on_time) +
           " changed before it arrived or too long after";
  }
  char dose[64];
  std::snprintf(dose, sizeof dose, "; dose r=%.2f", std::isnan(corr) ? 0.0 : corr);
  why += dose;
  if (!kind.empty()) {
    why += s.mechanism >= 0.9 ? "; " + std::string(kind) + " is a mechanism a release can cause"
                              : "; " + std::string(kind) + " points more to hardware";
  }
  s.reason = why;
  return s;
}

std::vector<std::string> GpuKeys(const Group& g, const FleetSeries& fleet) {
  std::set<std::string> keys;
  for (const Episode* e : g.episodes) keys.insert(fleet.gpus[static_cast<std::size_t>(e->gpu)].key);
  return {keys.begin(), keys.end()};
}

// Every release scored on `g`, in `reaches` order; `explained[i]` receives
// the nodes release i explains (on its nodes, on time).
struct Scored {
  std::vector<Suspect> suspects;
  std::vector<std::set<int>> explained;
};

Scored ScoreReleases(const Group& g, const std::vector<Reach>& reaches, const FleetSeries& fleet,
                     const CorrelateOptions& options) {
  const Episode& first = *g.episodes.front();
  const std::uint32_t xid =
      first.kind == "xid_errors" ? fleet.xid_codes[static_cast<std::size_t>(first.gpu)] : 0;
  Scored out;
  out.explained.resize(reaches.size());
  for (std::size_t i = 0; i < reaches.size(); ++i) {
    out.suspects.push_back(
        Score(g, reaches[i], fleet, options, first.kind, xid, &out.explained[i]));
  }
  return out;
}

// Builds the regression of `g` (evidence, headline, causes, suspects) from
// its releases' scores.
Regression MakeRegression(const Group& g, std::vector<Suspect> scored, const FleetSeries& fleet,
                          const CorrelateOptions& options) {
  Regression out;
  const Episode& first = *g.episodes.front();
  std::string kind = first.kind;
  std::string detail = first.detail;
  // The headline is the one most of its episodes carry.
  std::map<std::string, int> votes;
  for (const Episode* e : g.episodes) ++votes[e->headline];
  out.metric = std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
                 return a.second < b.second;
               })->first;
  out.at = std::numeric_limits<double>::infinity();
  for (const Episode* e : g.episodes) out.at = std::min(out.at, fleet.BucketStart(e->bucket));
  out.gpus = GpuKeys(g, fleet);
  for (const auto& [node, onset] : g.node_onset) {
    out.nodes.push_back(fleet.nodes[static_cast<std::size_t>(node)].host);
  }
  std::sort(out.nodes.begin(), out.nodes.end());

  // Evidence: per metric, medians over the episodes that moved it (a
  // node-level change counts once per node).
  std::map<int, std::vector<const Change*>> by_metric;
  std::set<std::pair<int, int>> node_seen;  // (metric, node)
  for (const Episode* e : g.episodes) {
    for (const Change& c : e->changes) {
      const MetricDef& def = Metrics()[static_cast<std::size_t>(c.metric)];
      if (def.level == Level::kNode && !node_seen.emplace(c.metric, e->node).second) continue;
      by_metric[c.metric].push_back(&c);
    }
  }
  for (const auto& [metric, changes] : by_metric) {
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
    if (mc.metric == out.metric) {
      out.change = mc.change;
      out.change_relative = mc.relative;
    }
    out.evidence.push_back(std::move(mc));
  }
  std::stable_sort(out.evidence.begin(), out.evidence.end(),
                   [&](const MetricChange& x, const MetricChange& y) {
                     return (x.metric == out.metric) > (y.metric == out.metric);
                   });

  for (Suspect& s : scored) {
    if (s.score > 0.05) out.candidates.push_back(std::move(s));
  }
  std::stable_sort(out.candidates.begin(), out.candidates.end(),
                   [](const Suspect& a, const Suspect& b) { return a.score > b.score; });
  for (const Suspect& s : out.candidates) {
    if (s.score >= options.min_score) out.suspects.push_back(s);
  }
  // Scope: the release's, when one explains it; the fleet's when (nearly)
  // every node changed at once; else the nodes'.
  std::string scope = "node";
  if (!out.suspects.empty()) {
    scope = "release";
  } else if (g.node_onset.size() >= 3 && static_cast<double>(g.node_onset.size()) >=
                                             0.8 * static_cast<double>(fleet.nodes.size())) {
    scope = "fleet";
  }
  out.causes.push_back({kind, scope, detail});

  // The sentence.
  char change[64] = "";
  if (std::isfinite(out.change)) {
    if (out.change_relative) {
      std::snprintf(change, sizeof change, "%+.0f%%", 100 * out.change);
    } else {
      std::snprintf(change, sizeof change, "%+.3g", out.change);
    }
  }
  std::string sentence =
      (kind.empty() ? std::string("change") : kind) + " on " + DescribeGpus(out.gpus) + " from " +
      FormatUtcMillis(static_cast<std::int64_t>(out.at * 1000)) + ": " + out.metric + " " + change;
  if (!out.suspects.empty()) {
    char score[32];
    std::snprintf(score, sizeof score, "%.2f", out.suspects.front().score);
    sentence += "; suspect " + out.suspects.front().release + " (score " + score + ")";
  } else {
    sentence += scope == "fleet" ? "; no release explains this (fleet-wide, at once)"
                                 : "; no release explains this";
  }
  out.summary = sentence;
  return out;
}

}  // namespace

Result<CorrelateReport> Correlate(Replay& replay, const std::vector<releases::Release>& releases,
                                  const CorrelateOptions& options) {
  if (options.resolution_s < 0 || options.max_lag_s <= kPromptLagS || options.min_score < 0 ||
      options.min_score > 1 || options.group_window_s < 0 || options.warmup_s < 0) {
    return Error(StatusCode::kInvalidArgument,
                 "correlate options out of range (resolution >= 0, max lag > 120 s, "
                 "0 <= min score <= 1)");
  }
  if (options.from_s && options.to_s && *options.from_s >= *options.to_s) {
    return Error(StatusCode::kInvalidArgument, "empty time range: from must be before to");
  }
  Result<FleetSeries> built =
      BuildSeries(replay, options.resolution_s, options.from_s, options.to_s, options.warmup_s,
                  CorrelateOptions::kMaxBuckets);
  if (!built) return Error(built.error());
  const FleetSeries& fleet = *built;

  CorrelateReport report;
  report.resolution_s = fleet.resolution_s;
  report.gpus = static_cast<int>(fleet.gpus.size());
  report.nodes = static_cast<int>(fleet.nodes.size());
  const std::vector<Reach> reaches = ResolveReaches(releases, fleet);
  for (const Reach& r : reaches) {
    ReleaseReach rr;
    rr.release = r.release->id;
    rr.started_at = r.release->started_at;
    for (int n : r.nodes) {
      rr.arrivals.push_back(
          {fleet.nodes[static_cast<std::size_t>(n)].host, r.arrival.at(n), r.observed.at(n)});
    }
    report.releases.push_back(std::move(rr));
  }
  // No data in range: the releases considered, the range asked for, nothing
  // else (missing telemetry is no regression, not a zero).
  if (fleet.buckets == 0) {
    report.from = static_cast<double>(options.from_s.value_or(0));
    report.to = static_cast<double>(options.to_s.value_or(0));
    return report;
  }
  report.from = static_cast<double>(fleet.first_tick);
  report.to = static_cast<double>(fleet.last_tick + 1);

  // Group episodes by mechanism (or headline, when none) and time.
  std::vector<Episode> episodes = FindEpisodes(fleet);
  std::sort(episodes.begin(), episodes.end(), [](const Episode& a, const Episode& b) {
    return std::tie(a.bucket, a.gpu) < std::tie(b.bucket, b.gpu);
  });
  std::map<std::string, std::vector<Group>> by_key;
  const double window = static_cast<double>(options.group_window_s);
  for (const Episode& e : episodes) {
    const std::string key = e.kind.empty() ? "metric:" + e.headline : e.kind;
    std::vector<Group>& list = by_key[key];
    const double t = fleet.BucketStart(e.bucket);
    if (!list.empty() && t - fleet.BucketStart(list.back().episodes.back()->bucket) <= window) {
      list.back().episodes.push_back(&e);
    } else {
      list.push_back(Group{{&e}, {}});
    }
  }
  std::vector<Group> work;
  for (auto& [key, list] : by_key) std::move(list.begin(), list.end(), std::back_inserter(work));

  // Attribute; where the best release explains only some nodes, split the
  // rest off and attribute them on their own.
  while (!work.empty()) {
    Group g = std::move(work.back());
    work.pop_back();
    IndexNodes(g, fleet);
    Scored scored = ScoreReleases(g, reaches, fleet, options);
    double best = -1;
    const std::set<int>* best_nodes = nullptr;
    for (std::size_t i = 0; i < reaches.size(); ++i) {
      if (scored.suspects[i].score > best) {
        best = scored.suspects[i].score;
        best_nodes = &scored.explained[i];
      }
    }
    if (best >= options.min_score && !best_nodes->empty() &&
        best_nodes->size() < g.node_onset.size()) {
      Group in;
      Group rest;
      for (const Episode* e : g.episodes) {
        (best_nodes->contains(e->node) ? in : rest).episodes.push_back(e);
      }
      work.push_back(std::move(rest));
      IndexNodes(in, fleet);
      report.regressions.push_back(
          MakeRegression(in, ScoreReleases(in, reaches, fleet, options).suspects, fleet, options));
      continue;
    }
    report.regressions.push_back(MakeRegression(g, std::move(scored.suspects), fleet, options));
  }
  std::sort(report.regressions.begin(), report.regressions.end(),
            [](const Regression& a, const Regression& b) {
              return std::tie(a.at, a.metric) < std::tie(b.at, b.metric);
            });
  return report;
}

}  // namespace gpucanary::analysis::correlate
