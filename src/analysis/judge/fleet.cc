#include "analysis/judge/fleet.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <utility>

namespace gpucanary::analysis::judge_internal {
namespace {

constexpr double kSwitchGraceSeconds = 60;  // serving on without a restart: a hot switch

}  // namespace

Fleet::Fleet(const Policy& policy, const Timeline& time) : policy_(policy), time_(time) {
  for (std::string_view name : kGpuSlotNames) gpu_slot_names_.emplace_back(name);
  NodeSlot tokens{std::string(kTokensMeasure), {}};
  for (const vocab::ServiceMetric& row : vocab::ServiceMetrics()) {
    if (row.measure == vocab::ServiceMeasure::kGeneratedTokens) {
      tokens.sources.push_back({std::string(row.metric), row.scale});
    }
  }
  node_slot_names_.push_back(std::move(tokens));
  tokens_slot_ = 0;
}

int Fleet::GpuSlotFor(const std::string& name) {
  for (std::size_t i = 0; i < gpu_slot_names_.size(); ++i) {
    if (gpu_slot_names_[i] == name) return static_cast<int>(i);
  }
  gpu_slot_names_.push_back(name);
  slots_ = gpu_slot_names_.size();
  return static_cast<int>(gpu_slot_names_.size() - 1);
}

int Fleet::NodeSlotFor(const std::string& name) { return NodeSlotFor(name, {{name, 1}}); }

int Fleet::NodeSlotFor(const std::string& key, std::vector<SlotSource> sources) {
  for (std::size_t i = 0; i < node_slot_names_.size(); ++i) {
    if (node_slot_names_[i].key == key) return static_cast<int>(i);
  }
  node_slot_names_.push_back({key, std::move(sources)});
  node_slots_ = node_slot_names_.size();
  return static_cast<int>(node_slot_names_.size() - 1);
}

// ---------------------------------------------------------------------------
// The catalog

void Fleet::Sync(const Catalog& catalog) {
  catalog_ = catalog;
  SyncMetrics(*catalog.metrics);
  SyncNodes(*catalog.nodes);
  SyncGpus(*catalog.gpus);
  gv_.assign(gpus_.size() * slots_, kNaN);
  gi_.assign(gpus_.size() * slots_, kNaN);
  nv_.assign(nodes_.size() * node_slots_, kNaN);
  ni_.assign(nodes_.size() * node_slots_, kNaN);
  gpu_has_data_.assign(gpus_.size(), false);
  node_has_data_.assign(nodes_.size(), false);
}

void Fleet::SyncMetrics(const std::vector<MetricInfo>& metrics) {
  for (; metrics_synced_ < metrics.size(); ++metrics_synced_) {
    const std::string& name = metrics[metrics_synced_].name;
    int gs = -1;
    std::vector<NodeTarget> ns;
    for (std::size_t i = 0; i < gpu_slot_names_.size(); ++i) {
      if (gpu_slot_names_[i] == name) gs = static_cast<int>(i);
    }
    for (std::size_t i = 0; i < node_slot_names_.size(); ++i) {
      for (const SlotSource& src : node_slot_names_[i].sources) {
        if (src.name == name) ns.push_back({static_cast<int>(i), src.scale});
      }
    }
    metric_gpu_slot_.push_back(gs);
    metric_node_slot_.push_back(std::move(ns));
  }
}

void Fleet::SyncNodes(const std::vector<NodeInfo>& nodes) {
  if (nodes_.size() < nodes.size()) nodes_.resize(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    NodeState& n = nodes_[i];
    if (!n.seen) {
      n.seen = true;
      n.role = nodes[i].role;
      if (!time_.release_start && n.role == Role::kCanary) n.since = time_.first_tick.value_or(0);
    }
    n.gpu_count = static_cast<int>(nodes[i].gpus.size());
  }
}

void Fleet::SyncGpus(const std::vector<GpuInfo>& gpus) {
  if (gpus_.size() < gpus.size()) gpus_.resize(gpus.size());
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    GpuState& g = gpus_[i];
    if (g.seen) continue;
    g.seen = true;
    g.role = gpus[i].role;
    g.node = gpus[i].node;
    auto [it, inserted] = groups_.emplace(gpus[i].model_name, static_cast<int>(groups_.size()));
    if (inserted) {
      group_canary_.push_back(0);
      group_baseline_.push_back(0);
    }
    g.group = it->second;
    (g.role == Role::kCanary ? group_canary_
                             : group_baseline_)[static_cast<std::size_t>(g.group)]++;
  }
}

// ---------------------------------------------------------------------------
// Per tick

void Fleet::Read(const Tick& tick) {
  for (const Point& p : tick.gpu_points) {
    const int slot = metric_gpu_slot_[static_cast<std::size_t>(p.metric)];
    gpu_has_data_[static_cast<std::size_t>(p.entity)] = true;
    if (slot < 0) continue;
    const std::size_t at =
        static_cast<std::size_t>(p.entity) * slots_ + static_cast<std::size_t>(slot);
    gv_[at] = p.value;
    if (p.increase) gi_[at] = *p.increase;
  }
  for (const Point& p : tick.node_points) {
    node_has_data_[static_cast<std::size_t>(p.entity)] = true;
    const std::vector<NodeTarget>& targets = metric_node_slot_[static_cast<std::size_t>(p.metric)];
    service_seen_ |= !targets.empty();
    for (const NodeTarget& target : targets) {
      const std::size_t at =
          static_cast<std::size_t>(p.entity) * node_slots_ + static_cast<std::size_t>(target.slot);
      nv_[at] = p.value * target.scale;
      if (p.increase) ni_[at] = *p.increase * target.scale;
    }
  }
  for (const HistogramPoint& h : tick.histograms) {
    if (h.gpu < 0) node_has_data_[static_cast<std::size_t>(h.node)] = true;
  }
}

void Fleet::PoolBaseline() {
  const std::size_t groups = group_canary_.size();
  base_pool_.assign(groups * slots_, Pool{});
  reasons_holding_.assign(groups, std::array<int, 64>{});
  with_reasons_.assign(groups, 0);
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    const GpuState& s = gpus_[g];
    if (s.role != Role::kBaseline || s.excluded || !gpu_has_data_[g]) continue;
    const auto grp = static_cast<std::size_t>(s.group);
    for (std::size_t k = 0; k < slots_; ++k) {
      const double v = gv_[g * slots_ + k];
      if (!std::isnan(v)) base_pool_[grp * slots_ + k].Add(v);
    }
    if (const std::optional<double> r = GpuValue(static_cast<int>(g), kReasons)) {
      ++with_reasons_[grp];
      for (auto mask = static_cast<std::uint64_t>(*r); mask != 0; mask &= mask - 1) {
        ++reasons_holding_[grp][static_cast<std::size_t>(std::countr_zero(mask))];
      }
    }
  }
  SetBaselineMajorities();
}

// A reason bit is the group's baseline's when at least half of its baseline
// GPUs with reasons this tick hold it.
void Fleet::SetBaselineMajorities() {
  const std::size_t groups = group_canary_.size();
  group_majority_.assign(groups, 0);
  for (std::size_t grp = 0; grp < groups; ++grp) {
    for (int b = 0; b < 64; ++b) {
      if (with_reasons_[grp] > 0 &&
          2 * reasons_holding_[grp][static_cast<std::size_t>(b)] >= with_reasons_[grp]) {
        group_majority_[grp] |= std::uint64_t{1} << b;
      }
    }
  }
}

void Fleet::TrackRestarts(std::int64_t t) {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& n = nodes_[i];
    const std::optional<double> tokens = NodeValue(static_cast<int>(i), tokens_slot_);
    if (!tokens) continue;
    if (!std::isnan(n.restart_last_tokens) && *tokens < 0.5 * n.restart_last_tokens) {
      n.restarts.push_back(t);
    }
    n.restart_last_tokens = *tokens;
  }
}

int Fleet::RestartsSince(int node, std::int64_t from) const {
  const std::vector<std::int64_t>& r = nodes_[static_cast<std::size_t>(node)].restarts;
  return static_cast<int>(r.end() - std::lower_bound(r.begin(), r.end(), from));
}

// A canary node starts serving the release when its model server comes back
// from the deploy's restart: its service series vanish for a while and come
// back with the token counter restarted from 0 (a counter that runs on
// after a gap was lost scrapes), or the counter falls without a gap.
// Without service series, or when no restart is seen within the grace
// period, the release starts at --release-start.
bool Fleet::UpdateSwitch(int node, std::int64_t t) {
  const auto i = static_cast<std::size_t>(node);
  const std::int64_t start = *time_.release_start;
  NodeState& n = nodes_[i];
  if (n.role != Role::kCanary || n.since) return false;
  const std::optional<double> tokens = NodeValue(node, tokens_slot_);
  if (t < start) {
    if (node_has_data_[i]) n.had_service_before = true;
    if (tokens) n.last_tokens = *tokens;
    return false;
  }
  if (!n.had_service_before) {
    n.since = start;
    return false;
  }
  // While the server is down (a gap), wait however long it takes (a
  // large model loads for minutes); the release serves from its return.
  if (!node_has_data_[i]) {
    n.gap_seen = true;
    return false;
  }
  // Back after a gap: a restarted server's counter starts again from 0; one
  // that runs on from where it was lost scrapes, not a restart.
  const bool known = tokens && !std::isnan(n.last_tokens);
  const bool fell = known && *tokens < n.last_tokens;
  if (n.gap_seen && known && !fell) n.gap_seen = false;
  if (n.gap_seen || fell) {
    n.since = t;
    return true;
  }
  if (tokens) n.last_tokens = *tokens;
  // Serving on without a break: a switch without restart (hot reload).
  if (static_cast<double>(t - start) < kSwitchGraceSeconds) return false;
  n.since = start;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "%s served without a restart for %.0f s after the release start: "
                "judged from the release start",
                (*catalog_->nodes)[i].host.c_str(), kSwitchGraceSeconds);
  notes_.emplace_back(buf);
  return true;
}

int Fleet::CanaryNodeCount() const {
  int n = 0;
  for (const NodeState& node : nodes_) n += node.role == Role::kCanary && node.gpu_count > 0;
  return n;
}

void Fleet::ExcludeGpuAndItsNode(int gpu) {
  GpuState& s = gpus_[static_cast<std::size_t>(gpu)];
  s.excluded = true;
  nodes_[static_cast<std::size_t>(s.node)].excluded = true;
}

void Fleet::ExcludeNodeAndItsGpus(int node) {
  nodes_[static_cast<std::size_t>(node)].excluded = true;
  for (int g : (*catalog_->nodes)[static_cast<std::size_t>(node)].gpus) {
    gpus_[static_cast<std::size_t>(g)].excluded = true;
  }
}

}  // namespace gpucanary::analysis::judge_internal
