// Episodes: one GPU's harmful changes close in time (its node's service
// changes belong to each of its GPUs), named by their mechanism in the
// judge's vocabulary from which metrics moved together
// (docs/analysis-method.md, "Episodes, mechanisms, regressions").

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate_internal.h"

namespace gpucanary::analysis::correlate {
namespace {

using vocab::CauseKind;

// One GPU's changes whose onsets are this close are one episode.
constexpr std::int64_t kEpisodeLinkS = 120;

const Change* FindChange(const Episode& e, std::string_view metric, int sign) {
  for (const Change& c : e.changes) {
    if (Metrics()[static_cast<std::size_t>(c.metric)].name != metric) continue;
    if (sign == 0 || (sign > 0 && c.change > 0) || (sign < 0 && c.change < 0)) return &c;
  }
  return nullptr;
}

// The judge's vocabulary, read from which metrics moved together: sets the
// episode's kind (none when nothing fits) and detail.
void NameMechanism(Episode& e, std::uint32_t xid_code) {
  const auto up = [&](std::string_view m) { return FindChange(e, m, +1) != nullptr; };
  const auto down = [&](std::string_view m) { return FindChange(e, m, -1) != nullptr; };
  const bool service =
      up("vllm:time_per_output_token_seconds") || up("vllm:e2e_request_latency_seconds:p99");
  if (up("throttle:power_brake")) {
    e.kind = CauseKind::kPowerBrake;
  } else if (up("throttle:thermal")) {
    e.kind = CauseKind::kThermalThrottle;
  } else if (up("throttle:hw_slowdown")) {
    e.kind = CauseKind::kHwSlowdown;
  } else if (up("throttle:sw_power_cap")) {
    e.kind = CauseKind::kPowerCap;
  } else if (down("DCGM_FI_DEV_PCIE_LINK_WIDTH") || down("DCGM_FI_DEV_PCIE_LINK_GEN")) {
    e.kind = CauseKind::kPcieDowntrain;
  } else if (up("DCGM_FI_DEV_PCIE_REPLAY_COUNTER")) {
    e.kind = CauseKind::kPcieErrors;
  } else if (up("DCGM_FI_DEV_XID_ERRORS")) {
    e.kind = CauseKind::kXidErrors;
    if (xid_code != 0) e.detail = "XID " + std::to_string(xid_code);
  } else if (up("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") || up("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")) {
    e.kind = CauseKind::kEccErrors;
  } else if (up("DCGM_FI_PROF_DRAM_ACTIVE") &&
             (down("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") ||
              (service && !up("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")))) {
    // More DRAM traffic for the same or less tensor work (more load raises
    // both together).
    e.kind = CauseKind::kMemoryThrash;
  } else if (down("DCGM_FI_PROF_SM_OCCUPANCY")) {
    e.kind = CauseKind::kLowOccupancy;
  } else if (service) {
    e.kind = CauseKind::kSoftwareRegression;
  }
}

// The mechanism's own metric, when it moved in the episode.
std::optional<std::string> MechanismMetric(const Episode& e) {
  static const std::map<CauseKind, std::string> kPrimary = {
      {CauseKind::kPowerBrake, "DCGM_FI_DEV_SM_CLOCK"},
      {CauseKind::kThermalThrottle, "DCGM_FI_DEV_SM_CLOCK"},
      {CauseKind::kHwSlowdown, "DCGM_FI_DEV_SM_CLOCK"},
      {CauseKind::kPowerCap, "DCGM_FI_DEV_SM_CLOCK"},
      {CauseKind::kPcieDowntrain, "DCGM_FI_DEV_PCIE_LINK_WIDTH"},
      {CauseKind::kPcieErrors, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"},
      {CauseKind::kXidErrors, "DCGM_FI_DEV_XID_ERRORS"},
      {CauseKind::kEccErrors, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"},
      {CauseKind::kMemoryThrash, "DCGM_FI_PROF_DRAM_ACTIVE"},
      {CauseKind::kLowOccupancy, "DCGM_FI_PROF_SM_OCCUPANCY"},
  };
  if (!e.kind) return std::nullopt;
  auto it = kPrimary.find(*e.kind);
  if (it == kPrimary.end()) return std::nullopt;
  if (FindChange(e, it->second, 0) != nullptr) return it->second;
  if (it->second == "DCGM_FI_DEV_PCIE_LINK_WIDTH" &&
      FindChange(e, "DCGM_FI_DEV_PCIE_LINK_GEN", 0) != nullptr) {
    return "DCGM_FI_DEV_PCIE_LINK_GEN";
  }
  return std::nullopt;
}

// The headline: the per-token latency when the service lost it, else the
// mechanism's own metric when users care about it, else the largest
// harmful change of such a measure ("" if none). Tails (p99) corroborate
// but never head.
std::string Headline(const Episode& e) {
  if (FindChange(e, "vllm:time_per_output_token_seconds", +1) != nullptr) {
    return "vllm:time_per_output_token_seconds";
  }
  // The mechanism's own metric heads only when it got worse here: a HW
  // slowdown episode whose clock change nearby is the clock coming back
  // (+79%) is not headed by that recovery.
  if (std::optional<std::string> own = MechanismMetric(e); own && CanHeadRegression(*own)) {
    for (const Change& c : e.changes) {
      if (Metrics()[static_cast<std::size_t>(c.metric)].name == *own && c.harmful) return *own;
    }
  }
  std::string headline;
  double best = -1;
  for (const Change& c : e.changes) {
    const MetricDef& def = Metrics()[static_cast<std::size_t>(c.metric)];
    const double size = std::fabs(c.change) / def.floor;
    if (c.harmful && CanHeadRegression(def.name) && size > best) {
      best = size;
      headline = std::string(def.name);
    }
  }
  return headline;
}

// The metrics whose change names each mechanism.
const std::vector<std::string_view>& SignatureOf(std::optional<CauseKind> kind) {
  static const std::map<CauseKind, std::vector<std::string_view>> kSignature = {
      {CauseKind::kPowerBrake, {"throttle:power_brake"}},
      {CauseKind::kThermalThrottle, {"throttle:thermal"}},
      {CauseKind::kHwSlowdown, {"throttle:hw_slowdown"}},
      {CauseKind::kPowerCap, {"throttle:sw_power_cap"}},
      {CauseKind::kPcieDowntrain, {"DCGM_FI_DEV_PCIE_LINK_WIDTH", "DCGM_FI_DEV_PCIE_LINK_GEN"}},
      {CauseKind::kPcieErrors, {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER"}},
      {CauseKind::kXidErrors, {"DCGM_FI_DEV_XID_ERRORS"}},
      {CauseKind::kEccErrors, {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}},
      {CauseKind::kMemoryThrash, {"DCGM_FI_PROF_DRAM_ACTIVE"}},
      {CauseKind::kLowOccupancy, {"DCGM_FI_PROF_SM_OCCUPANCY"}},
      {CauseKind::kSoftwareRegression,
       {"vllm:time_per_output_token_seconds", "vllm:e2e_request_latency_seconds:p99"}},
  };
  static const std::vector<std::string_view> kNone;
  if (!kind) return kNone;
  auto it = kSignature.find(*kind);
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

// The changes of every series in `series`, series by series.
std::vector<Change> ChangesOf(const std::vector<EntitySeries>& series, std::int64_t resolution_s) {
  std::vector<Change> out;
  for (const EntitySeries& s : series) {
    std::vector<Change> c = DetectChanges(s, resolution_s);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

// GPU `g`'s own changes and its node's, by onset.
std::vector<Change> GpuChanges(const FleetSeries& fleet, std::size_t g,
                               const std::vector<std::vector<Change>>& node_changes) {
  const int node = fleet.gpus[g].node;
  std::vector<Change> all = ChangesOf(fleet.gpu_series[g], fleet.resolution_s);
  if (static_cast<std::size_t>(node) < node_changes.size()) {
    const std::vector<Change>& nc = node_changes[static_cast<std::size_t>(node)];
    all.insert(all.end(), nc.begin(), nc.end());
  }
  std::sort(all.begin(), all.end(),
            [](const Change& a, const Change& b) { return a.bucket < b.bucket; });
  return all;
}

// Each harmful change opens an episode, unless it falls within `link`
// buckets of the open one.
std::vector<Episode> OpenEpisodes(const std::vector<Change>& all, int gpu, int node,
                                  std::size_t link) {
  std::vector<Episode> mine;
  for (const Change& c : all) {
    // Only a measure users care about opens one (per-token latency, clocks,
    // throttle and error states, the link); tails, temperature, occupancy and
    // activities are evidence of what caused it.
    if (!c.harmful || !CanHeadRegression(Metrics()[static_cast<std::size_t>(c.metric)].name)) {
      continue;
    }
    if (!mine.empty() && c.bucket <= mine.back().bucket + link) continue;
    Episode e;
    e.gpu = gpu;
    e.node = node;
    e.bucket = c.bucket;
    mine.push_back(std::move(e));
  }
  return mine;
}

// The changes within `link` buckets of the episode's onset join it (changes
// of neutral metrics, power, DRAM, tokens/s, as evidence). One change per
// metric: a harmful one before a harmless one, then the closest to the
// onset (the episode's own change, never a metric's earlier move the other
// way).
void JoinNearChanges(Episode& e, const std::vector<Change>& all, std::size_t link) {
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
}

}  // namespace

// Episodes per GPU: each harmful change opens one, unless it falls within
// kEpisodeLinkS of the open one; changes of neutral metrics (power, DRAM,
// tokens/s) around an onset join it as evidence.
std::vector<Episode> FindEpisodes(const FleetSeries& fleet) {
  const std::int64_t res = fleet.resolution_s;
  const auto link = static_cast<std::size_t>((kEpisodeLinkS + res - 1) / res);
  // Only a harmful change of a measure that can head a regression opens an
  // episode, so the evidence series (power, activities, tokens/s, p99) of
  // a GPU and node are segmented only where one opened: on a day of 1,000
  // GPUs most of them have none, and PELT is the correlation's largest cost.
  const auto opens = [&](const std::vector<EntitySeries>& series) {
    for (const EntitySeries& s : series) {
      if (!CanHeadRegression(Metrics()[static_cast<std::size_t>(s.metric)].name)) continue;
      for (const Change& c : DetectChanges(s, res)) {
        if (c.harmful) return true;
      }
    }
    return false;
  };
  std::vector<char> node_opens(fleet.node_series.size(), 0);
  for (std::size_t n = 0; n < fleet.node_series.size(); ++n) {
    node_opens[n] = opens(fleet.node_series[n]) ? 1 : 0;
  }
  std::vector<std::vector<Change>> node_changes(fleet.node_series.size());
  std::vector<char> node_done(fleet.node_series.size(), 0);
  std::vector<Episode> episodes;
  for (std::size_t g = 0; g < fleet.gpu_series.size() && g < fleet.gpus.size(); ++g) {
    const auto node = static_cast<std::size_t>(fleet.gpus[g].node);
    const bool node_known = node < fleet.node_series.size();
    if (!(node_known && node_opens[node]) && !opens(fleet.gpu_series[g])) continue;
    if (node_known && !node_done[node]) {
      node_changes[node] = ChangesOf(fleet.node_series[node], res);
      node_done[node] = 1;
    }
    const std::vector<Change> all = GpuChanges(fleet, g, node_changes);
    for (Episode& e : OpenEpisodes(all, static_cast<int>(g), fleet.gpus[g].node, link)) {
      JoinNearChanges(e, all, link);
      NameMechanism(e, g < fleet.xid_codes.size() ? fleet.xid_codes[g] : 0);
      e.headline = Headline(e);
      DateBySignature(e);
      episodes.push_back(std::move(e));
    }
  }
  return episodes;
}

}  // namespace gpucanary::analysis::correlate
