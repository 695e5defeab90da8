#include "analysis/judge/judge.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "analysis/judge/diagnose.h"
#include "analysis/judge/internal.h"
#include "analysis/stats/histogram_quantile.h"
#include "core/status.h"

namespace gpucanary::analysis {

using internal::Comparison;
using internal::CountComparison;
using internal::GpuSlot;
using internal::kInf;
using internal::kNaN;
using internal::Measure;
using internal::MeasureKind;
using internal::RuleHit;

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kInconclusive:
      return "inconclusive";
  }
  return "inconclusive";
}

namespace {

constexpr double kWitnessSeconds = 30;  // a clean sibling this long on the release clears a node
constexpr double kSwitchGraceSeconds = 60;   // serving on without a restart: a hot switch
constexpr std::int64_t kMinScopeBlocks = 3;  // blocks a unit needs to count as affected or clean

bool Worse(MetricPolicy::Better better, double change, double margin) {
  if (std::isnan(change)) return false;
  return better == MetricPolicy::Better::kHigher ? change < -margin : change > margin;
}

stats::Decision Decide(MetricPolicy::Better better, stats::Bounds rel, double margin) {
  return better == MetricPolicy::Better::kHigher ? stats::DecideDrop(rel, margin)
                                                 : stats::DecideRise(rel, margin);
}

// Sum and count of values, NaN-free.
struct Pool {
  double sum = 0;
  double n = 0;
  void Add(double v) {
    sum += v;
    n += 1;
  }
  std::optional<double> Mean() const {
    if (n <= 0) return std::nullopt;
    return sum / n;
  }
};

// A ratio of two sums (tokens per DRAM activity, histogram sum per count).
struct RatioPool {
  double num = 0;
  double den = 0;
  bool any = false;
  void Add(double a, double b) {
    num += a;
    den += b;
    any = true;
  }
  std::optional<double> Value() const {
    if (!any || !(den > 0)) return std::nullopt;
    return num / den;
  }
};

}  // namespace

class Judge::Impl {
 public:
  explicit Impl(JudgeOptions options) : opt_(std::move(options)), policy_(opt_.policy) {
    BuildMeasures();
  }

  void Add(const Tick& tick, const Catalog& catalog);
  Report BuildReport(bool final) const;
  void FinishBlocks();
  void SetTap(Tap tap) { tap_ = std::move(tap); }

 private:
  struct GpuState {
    bool seen = false;
    Role role = Role::kBaseline;
    int node = -1;
    int group = -1;
    bool excluded = false;  // out of the pools: a node fault
    std::optional<ThrottleRule> throttle;
    std::optional<PcieLinkRule> pcie;
    EccDbeRule dbe;
    int last_xid = -1;  // -1: no XID sample yet
    std::set<std::string> history_kinds;
    // Evidence window: values while a rule streak is active or after a hit.
    bool window_open = false;
    bool hit = false;  // a rule fired on it
    std::array<double, internal::kFixedGpuSlots> win_canary{};
    std::array<double, internal::kFixedGpuSlots> win_base{};
    std::array<double, internal::kFixedGpuSlots> win_n{};
    std::int64_t win_start = 0;
    std::int64_t win_last = 0;
    std::uint64_t win_bits = 0;
    std::uint64_t win_base_bits = 0;
  };
  struct NodeState {
    bool seen = false;
    Role role = Role::kBaseline;
    std::optional<std::int64_t> since;  // the release serves here from this tick (canary)
    bool had_service_before = false;    // node-level data before the release started
    bool gap_seen = false;              // a tick without service data after the release started
    double last_tokens = kNaN;
    bool excluded = false;
    int gpu_count = 0;
  };
  enum class Phase : std::uint8_t { kHistory, kSwitching, kWarmup, kJudged };
  // A block of histogram observations (bucket bound -> cumulative increase)
  // per arm, for the p99 comparison.
  struct TailBlock {
    std::int64_t index = -1;
    std::map<double, double> canary, baseline;
    std::int64_t canary_seconds = 0, baseline_seconds = 0;
  };

  void BuildMeasures();
  void SyncCatalog(const Catalog& catalog);
  void ReadTick(const Tick& tick);
  void UpdateNodeSwitch(const Tick& tick);
  Phase PhaseOf(int node, std::int64_t t) const;
  void RunRules(std::int64_t t);
  void OnHit(RuleHit hit, std::int64_t t);
  std::string ScopeForRuleKind(const std::string& kind, const RuleHit& hit, std::int64_t t) const;
  void UpdateWindows(std::int64_t t);
  void ResolvePending(std::int64_t t, bool at_end);
  void ResolveSwitching(int node, std::int64_t t);
  void RunMeasures(std::int64_t t, const Tick& tick);
  void RunContinuous(std::size_t m, std::int64_t t);
  void RunCount(std::size_t m, std::int64_t t);
  void RunTail(std::size_t m, std::int64_t t, const Tick& tick);
  void CloseTail(std::size_t m, int unit, bool history, TailBlock& tb);
  void OnComparisonBlock(std::size_t m, int unit, const stats::Block& block, bool history);
  void OnMetricWorse(std::size_t m, int unit, std::int64_t t);
  std::string ScopeForMeasure(std::size_t m, int seed_unit, std::vector<int>* affected) const;
  Signature CurrentSignature() const;
  double MeasureChange(int gpu_slot) const;
  double FindingScore(const internal::MetricFinding& f) const;
  MetricResult ResultFor(std::size_t m) const;
  void UpdateVerdict(std::int64_t t);
  Comparison& ComparisonFor(std::size_t m, int unit);
  CountComparison& CountFor(std::size_t m, int unit);
  double UnitAlpha(std::size_t m) const;
  int CanaryNodeCount() const;
  std::optional<double> GpuValue(int gpu, int slot) const {
    const double v = gv_[static_cast<std::size_t>(gpu) * slots_ + static_cast<std::size_t>(slot)];
    if (std::isnan(v)) return std::nullopt;
    return v;
  }
  std::optional<double> GpuIncrease(int gpu, int slot) const {
    const double v = gi_[static_cast<std::size_t>(gpu) * slots_ + static_cast<std::size_t>(slot)];
    if (std::isnan(v)) return std::nullopt;
    return v;
  }
  std::optional<double> NodeValue(int node, int slot) const {
    const double v =
        nv_[static_cast<std::size_t>(node) * node_slots_ + static_cast<std::size_t>(slot)];
    if (std::isnan(v)) return std::nullopt;
    return v;
  }
  std::optional<double> NodeIncrease(int node, int slot) const {
    const double v =
        ni_[static_cast<std::size_t>(node) * node_slots_ + static_cast<std::size_t>(slot)];
    if (std::isnan(v)) return std::nullopt;
    return v;
  }
  std::int64_t BlockOrigin() const {
    return opt_.release_start_s
               ? *opt_.release_start_s + static_cast<std::int64_t>(policy_.warmup_s)
               : first_tick_.value_or(0);
  }

  JudgeOptions opt_;
  const Policy& policy_;
  Tap tap_;
  // A copy: the struct is three pointers into the caller's replay, which
  // outlives the judge; the Catalog itself is often a temporary.
  std::optional<Catalog> catalog_;

  // Measures: policy metrics, then the DRAM efficiency rule, then diagnostics.
  std::vector<Measure> measures_;
  std::vector<std::string> gpu_slot_names_;   // fixed slots then policy GPU metrics
  std::vector<std::string> node_slot_names_;  // tokens, then policy node metrics
  std::size_t slots_ = internal::kFixedGpuSlots;
  std::size_t node_slots_ = 1;
  int tokens_slot_ = 0;
  std::vector<int> metric_gpu_slot_;   // catalog metric -> GPU slot (-1)
  std::vector<int> metric_node_slot_;  // catalog metric -> node slot (-1)
  std::size_t metrics_synced_ = 0;

  std::vector<GpuState> gpus_;
  std::vector<NodeState> nodes_;
  std::map<std::string, int> groups_;  // matching key (model name) -> group
  std::vector<int> group_canary_;      // canary GPUs per group
  std::vector<int> group_baseline_;    // baseline GPUs per group

  // Current tick's values (NaN: no data).
  std::vector<double> gv_, gi_, nv_, ni_;
  std::vector<bool> gpu_has_data_;
  std::vector<bool> node_has_data_;
  std::vector<std::uint64_t> group_majority_;  // baseline majority reasons per group, this tick
  std::vector<Pool> base_pool_;                // per group x GPU slot, this tick

  // Comparisons: per measure, unit 0 = whole canary, unit k+1 = canary GPU or node k.
  std::vector<std::map<int, Comparison>> comparisons_;
  std::vector<std::vector<Comparison*>> comparison_index_;
  std::vector<std::vector<CountComparison*>> count_index_;
  std::vector<std::map<int, CountComparison>> counts_;
  // kNodeTail: per measure, per (unit, history) the open block's buckets.
  std::vector<std::map<std::pair<int, bool>, TailBlock>> tail_blocks_;

  std::vector<RuleHit> hits_;
  std::vector<RuleHit> pending_hits_;  // this tick's, before scoping
  std::vector<RuleHit> tick_hits_;     // this tick's, while scoping
  struct ScratchUnit {
    int unit;
    std::optional<double> value;
    Phase phase;
  };
  std::vector<ScratchUnit> scratch_units_;
  std::map<std::string, std::string> kind_scope_;  // rule kind -> "release" once proven
  std::vector<internal::MetricFinding> findings_;

  std::optional<std::int64_t> first_tick_;
  std::optional<std::int64_t> last_tick_;
  std::optional<std::int64_t> failed_at_;
  std::optional<std::int64_t> pass_since_;
  std::vector<std::string> notes_;
  std::int64_t ignored_ticks_ = 0;
  bool history_closed_ = false;
};

// ---------------------------------------------------------------------------
// Set-up

void Judge::Impl::BuildMeasures() {
  for (std::string_view name : internal::kGpuSlotNames) gpu_slot_names_.emplace_back(name);
  node_slot_names_.emplace_back(internal::kTokensMetric);
  tokens_slot_ = 0;
  const auto gpu_slot = [&](const std::string& name) {
    for (std::size_t i = 0; i < gpu_slot_names_.size(); ++i) {
      if (gpu_slot_names_[i] == name) return static_cast<int>(i);
    }
    gpu_slot_names_.push_back(name);
    return static_cast<int>(gpu_slot_names_.size() - 1);
  };
  const auto node_slot = [&](const std::string& name) {
    for (std::size_t i = 0; i < node_slot_names_.size(); ++i) {
      if (node_slot_names_[i] == name) return static_cast<int>(i);
    }
    node_slot_names_.push_back(name);
    return static_cast<int>(node_slot_names_.size() - 1);
  };

  // Error budget: alpha split evenly over the deciding comparisons (policy
  // metrics + the DRAM efficiency rule); each gets half for the whole canary
  // and half for its per-unit comparisons (split again over the units).
  const int deciding =
      static_cast<int>(policy_.metrics.size()) + (policy_.rules.dram_efficiency ? 1 : 0);
  const double alpha_metric = policy_.alpha / std::max(1, deciding);

  for (std::size_t i = 0; i < policy_.metrics.size(); ++i) {
    const MetricPolicy& mp = policy_.metrics[i];
    Measure m;
    m.name = mp.name;
    m.policy_index = static_cast<int>(i);
    m.decides = true;
    m.critical = mp.critical;
    m.better = mp.better;
    m.margin = mp.margin;
    m.alpha_whole = alpha_metric / 2;
    m.alpha_unit = alpha_metric / 2;
    // Service metrics are vLLM's (node level, by their prefix); the rest are
    // DCGM fields of a GPU.
    const bool node_level = mp.name.rfind("vllm:", 0) == 0;
    switch (mp.kind) {
      case MetricPolicy::Kind::kGauge:
        m.kind = node_level ? MeasureKind::kNodeRate : MeasureKind::kGpuGauge;
        if (node_level) {
          m.node_slot = node_slot(mp.name);
        } else {
          m.gpu_slot = gpu_slot(mp.name);
        }
        break;
      case MetricPolicy::Kind::kRate:
        m.kind = node_level ? MeasureKind::kNodeRate : MeasureKind::kGpuRate;
        if (node_level) {
          m.node_slot = node_slot(mp.name);
        } else {
          m.gpu_slot = gpu_slot(mp.name);
        }
        break;
      case MetricPolicy::Kind::kMean:
        m.kind = MeasureKind::kNodeMean;
        m.node_slot = node_slot(mp.name + "_sum");
        m.node_slot2 = node_slot(mp.name + "_count");
        break;
      case MetricPolicy::Kind::kP99:
        m.kind = MeasureKind::kNodeTail;
        m.family = mp.name;
        break;
      case MetricPolicy::Kind::kCount:
        // GPU events per GPU-second; service events (errors) per generated token.
        m.kind = node_level ? MeasureKind::kNodeCount : MeasureKind::kGpuCount;
        if (node_level) {
          m.node_slot = node_slot(mp.name);
        } else {
          m.gpu_slot = gpu_slot(mp.name);
        }
        break;
    }
    measures_.push_back(std::move(m));
  }
  if (policy_.rules.dram_efficiency) {
    Measure m;
    m.name = "tokens_per_dram_active";
    m.kind = MeasureKind::kDramEff;
    m.decides = true;
    m.better = MetricPolicy::Better::kHigher;
    m.margin = policy_.rules.dram_efficiency_max_drop;
    m.alpha_whole = alpha_metric / 2;
    m.alpha_unit = alpha_metric / 2;
    measures_.push_back(std::move(m));
  }
  // Diagnostics: compared on the whole canary for the signatures, never decide.
  const auto add_diag = [&](std::string_view name, MeasureKind kind, int slot, int slot2 = -1) {
    for (const Measure& existing : measures_) {
      if (existing.name == name && existing.kind == kind) return;
    }
    Measure m;
    m.name = std::string(name);
    m.kind = kind;
    m.gpu_slot = IsNodeLevel(kind) ? -1 : slot;
    m.node_slot = IsNodeLevel(kind) ? slot : -1;
    m.node_slot2 = slot2;
    m.alpha_whole = policy_.alpha;
    m.alpha_unit = policy_.alpha;
    measures_.push_back(std::move(m));
  };
  for (int s : {internal::kClock, internal::kSmActive, internal::kOccupancy, internal::kTensor,
                internal::kDram, internal::kPower, internal::kTemp, internal::kPcieRx}) {
    add_diag(internal::kGpuSlotNames[static_cast<std::size_t>(s)], MeasureKind::kGpuGauge, s);
  }
  add_diag(internal::kTokensMetric, MeasureKind::kNodeRate, tokens_slot_);
  const std::string tpot(internal::kTpotFamily);
  add_diag(tpot, MeasureKind::kNodeMean, node_slot(tpot + "_sum"), node_slot(tpot + "_count"));

  slots_ = gpu_slot_names_.size();
  node_slots_ = node_slot_names_.size();
  comparisons_.resize(measures_.size());
  comparison_index_.resize(measures_.size());
  count_index_.resize(measures_.size());
  counts_.resize(measures_.size());
  tail_blocks_.resize(measures_.size());
}

void Judge::Impl::SyncCatalog(const Catalog& catalog) {
  catalog_ = catalog;
  const std::vector<MetricInfo>& metrics = *catalog.metrics;
  for (; metrics_synced_ < metrics.size(); ++metrics_synced_) {
    const std::string& name = metrics[metrics_synced_].name;
    int gs = -1;
    int ns = -1;
    for (std::size_t i = 0; i < gpu_slot_names_.size(); ++i) {
      if (gpu_slot_names_[i] == name) gs = static_cast<int>(i);
    }
    for (std::size_t i = 0; i < node_slot_names_.size(); ++i) {
      if (node_slot_names_[i] == name) ns = static_cast<int>(i);
    }
    metric_gpu_slot_.push_back(gs);
    metric_node_slot_.push_back(ns);
    for (Measure& m : measures_) {
      if (m.kind == MeasureKind::kNodeTail && m.family == name) {
        m.family_metric = static_cast<int>(metrics_synced_);
      }
    }
  }
  const std::vector<NodeInfo>& nodes = *catalog.nodes;
  if (nodes_.size() < nodes.size()) nodes_.resize(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    NodeState& n = nodes_[i];
    if (!n.seen) {
      n.seen = true;
      n.role = nodes[i].role;
      if (!opt_.release_start_s && n.role == Role::kCanary) n.since = first_tick_.value_or(0);
    }
    n.gpu_count = static_cast<int>(nodes[i].gpus.size());
  }
  const std::vector<GpuInfo>& gpus = *catalog.gpus;
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
    if (policy_.rules.throttle.enabled) g.throttle.emplace(policy_.rules.throttle);
    if (policy_.rules.pcie_link) g.pcie.emplace(policy_.rules.pcie_seconds);
  }
  gv_.assign(gpus_.size() * slots_, kNaN);
  gi_.assign(gpus_.size() * slots_, kNaN);
  nv_.assign(nodes_.size() * node_slots_, kNaN);
  ni_.assign(nodes_.size() * node_slots_, kNaN);
  gpu_has_data_.assign(gpus_.size(), false);
  node_has_data_.assign(nodes_.size(), false);
}

// ---------------------------------------------------------------------------
// Per tick

void Judge::Impl::ReadTick(const Tick& tick) {
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
    const int slot = metric_node_slot_[static_cast<std::size_t>(p.metric)];
    node_has_data_[static_cast<std::size_t>(p.entity)] = true;
    if (slot < 0) continue;
    const std::size_t at =
        static_cast<std::size_t>(p.entity) * node_slots_ + static_cast<std::size_t>(slot);
    nv_[at] = p.value;
    if (p.increase) ni_[at] = *p.increase;
  }
  for (const HistogramPoint& h : tick.histograms) {
    if (h.gpu < 0) node_has_data_[static_cast<std::size_t>(h.node)] = true;
  }
}

// A canary node starts serving the release when its model server comes back
// from the deploy's restart: its service series vanish for a while (or its
// token counter restarts from 0). Without service series, or when no restart
// is seen within the grace period, the release starts at --release-start.
void Judge::Impl::UpdateNodeSwitch(const Tick& tick) {
  if (!opt_.release_start_s) return;
  const std::int64_t t = tick.time_s;
  const std::int64_t start = *opt_.release_start_s;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& n = nodes_[i];
    if (n.role != Role::kCanary || n.since) continue;
    const std::optional<double> tokens = NodeValue(static_cast<int>(i), tokens_slot_);
    if (t < start) {
      if (node_has_data_[i]) n.had_service_before = true;
      if (tokens) n.last_tokens = *tokens;
      continue;
    }
    if (!n.had_service_before) {
      n.since = start;
      continue;
    }
    // While the server is down (a gap), wait however long it takes (a
    // large model loads for minutes); the release serves from its return.
    if (!node_has_data_[i]) {
      n.gap_seen = true;
      continue;
    }
    if (n.gap_seen || (tokens && !std::isnan(n.last_tokens) && *tokens < n.last_tokens)) {
      n.since = t;
      ResolveSwitching(static_cast<int>(i), t);
      continue;
    }
    if (tokens) n.last_tokens = *tokens;
    // Serving on without a break: a switch without restart (hot reload).
    if (static_cast<double>(t - start) >= kSwitchGraceSeconds) {
      n.since = start;
      ResolveSwitching(static_cast<int>(i), t);
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "%s served without a restart for %.0f s after the release start: "
                    "judged from the release start",
                    (*catalog_->nodes)[i].host.c_str(), kSwitchGraceSeconds);
      notes_.emplace_back(buf);
    }
  }
}

Judge::Impl::Phase Judge::Impl::PhaseOf(int node, std::int64_t t) const {
  if (!opt_.release_start_s) return Phase::kJudged;
  const NodeState& n = nodes_[static_cast<std::size_t>(node)];
  if (t < *opt_.release_start_s) return Phase::kHistory;
  if (!n.since) return Phase::kSwitching;
  if (static_cast<double>(t - *n.since) < policy_.warmup_s) return Phase::kWarmup;
  return Phase::kJudged;
}

void Judge::Impl::Add(const Tick& tick, const Catalog& catalog) {
  if (last_tick_ && tick.time_s <= *last_tick_) {
    ++ignored_ticks_;
    return;
  }
  if (!first_tick_) first_tick_ = tick.time_s;
  last_tick_ = tick.time_s;
  SyncCatalog(catalog);
  ReadTick(tick);
  if (opt_.release_start_s && tick.time_s >= *opt_.release_start_s && !history_closed_) {
    // The history ends: close its last block.
    history_closed_ = true;
    for (std::size_t m = 0; m < measures_.size(); ++m) {
      for (auto& [key, tb] : tail_blocks_[m]) {
        if (key.second && tb.index >= 0) CloseTail(m, key.first, true, tb);
        if (key.second) tb = TailBlock{};
      }
      for (auto& [unit, cmp] : comparisons_[m]) {
        if (const std::optional<stats::Block> b = cmp.history.Flush()) {
          OnComparisonBlock(m, unit, *b, true);
        }
      }
    }
  }
  UpdateNodeSwitch(tick);
  RunRules(tick.time_s);
  UpdateWindows(tick.time_s);
  RunMeasures(tick.time_s, tick);
  UpdateVerdict(tick.time_s);
}

// ---------------------------------------------------------------------------
// Hard rules

void Judge::Impl::RunRules(std::int64_t t) {
  const std::size_t groups = group_canary_.size();
  // Baseline majority reasons and pools, per group.
  std::vector<std::array<int, 64>> holding(groups);
  std::vector<int> with_data(groups, 0);
  for (auto& h : holding) h.fill(0);
  base_pool_.assign(groups * slots_, Pool{});
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    const GpuState& s = gpus_[g];
    if (s.role != Role::kBaseline || s.excluded || !gpu_has_data_[g]) continue;
    const auto grp = static_cast<std::size_t>(s.group);
    for (std::size_t k = 0; k < slots_; ++k) {
      const double v = gv_[g * slots_ + k];
      if (!std::isnan(v)) base_pool_[grp * slots_ + k].Add(v);
    }
    if (const std::optional<double> r = GpuValue(static_cast<int>(g), internal::kReasons)) {
      ++with_data[grp];
      for (auto mask = static_cast<std::uint64_t>(*r); mask != 0; mask &= mask - 1) {
        ++holding[grp][static_cast<std::size_t>(std::countr_zero(mask))];
      }
    }
  }
  group_majority_.assign(groups, 0);
  for (std::size_t grp = 0; grp < groups; ++grp) {
    for (int b = 0; b < 64; ++b) {
      if (with_data[grp] > 0 && 2 * holding[grp][static_cast<std::size_t>(b)] >= with_data[grp]) {
        group_majority_[grp] |= std::uint64_t{1} << b;
      }
    }
  }

  pending_hits_.clear();
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    GpuState& s = gpus_[g];
    const int gi = static_cast<int>(g);
    const auto grp = static_cast<std::size_t>(s.group);
    if (s.throttle) {
      std::optional<std::uint64_t> mask;
      if (const std::optional<double> r = GpuValue(gi, internal::kReasons)) {
        mask = static_cast<std::uint64_t>(*r);
      }
      const std::optional<std::uint64_t> majority[1] = {group_majority_[grp]};
      const std::span<const std::optional<std::uint64_t>> base =
          with_data[grp] > 0 ? std::span<const std::optional<std::uint64_t>>(majority)
                             : std::span<const std::optional<std::uint64_t>>();
      if (s.throttle->Add(t, mask, base)) {
        RuleHit hit;
        hit.gpu = gi;
        hit.rule = "throttle";
        hit.bits = s.throttle->bits();
        hit.kind = std::string(ThrottleCause(hit.bits));
        hit.onset = s.throttle->streak().streak_start();
        hit.fired = t;
        hit.critical = policy_.rules.throttle.critical;
        char buf[48];
        std::snprintf(buf, sizeof buf, "reasons 0x%llx", static_cast<unsigned long long>(hit.bits));
        hit.detail = buf;
        pending_hits_.push_back(std::move(hit));
      }
    }
    if (s.pcie) {
      if (s.pcie->Add(t, GpuValue(gi, internal::kWidth), GpuValue(gi, internal::kMaxWidth),
                      GpuValue(gi, internal::kGen), GpuValue(gi, internal::kMaxGen))) {
        RuleHit hit;
        hit.gpu = gi;
        hit.rule = "pcie_link";
        hit.kind = "pcie_downtrain";
        hit.onset = s.pcie->streak().streak_start();
        hit.fired = t;
        hit.critical = policy_.rules.pcie_critical;
        hit.detail = s.pcie->detail();
        pending_hits_.push_back(std::move(hit));
      }
    }
    if (const std::optional<double> x = GpuValue(gi, internal::kXid)) {
      const int code = static_cast<int>(std::lround(*x));
      if (code != s.last_xid && code > 0) {
        RuleHit hit;
        hit.gpu = gi;
        hit.rule = "xid";
        hit.kind = "xid_errors";
        hit.onset = t;
        hit.fired = t;
        hit.critical = std::binary_search(policy_.rules.critical_xids.begin(),
                                          policy_.rules.critical_xids.end(), code);
        hit.detail = "XID " + std::to_string(code);
        s.last_xid = code;
        pending_hits_.push_back(std::move(hit));
      } else {
        s.last_xid = code;
      }
    }
    if (policy_.rules.ecc_dbe && s.dbe.Add(t, GpuValue(gi, internal::kDbe))) {
      RuleHit hit;
      hit.gpu = gi;
      hit.rule = "ecc_dbe";
      hit.kind = "ecc_errors";
      hit.onset = t;
      hit.fired = t;
      hit.critical = policy_.rules.ecc_dbe_critical;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.0f new uncorrectable (DBE) errors", s.dbe.new_errors());
      hit.detail = buf;
      pending_hits_.push_back(std::move(hit));
    }
  }
  // Every hit of this tick is known before any is scoped: GPUs of one node
  // that fire together are not each other's clean witnesses.
  std::vector<RuleHit> hits = std::move(pending_hits_);
  pending_hits_.clear();
  for (const RuleHit& h : hits) tick_hits_.push_back(h);
  for (RuleHit& h : hits) OnHit(std::move(h), t);
  tick_hits_.clear();
  ResolvePending(t, false);
}

int Judge::Impl::CanaryNodeCount() const {
  int n = 0;
  for (const NodeState& node : nodes_) n += node.role == Role::kCanary && node.gpu_count > 0;
  return n;
}

// Scope of a rule hit on a canary GPU during the release (docs/analysis-method.md,
// "Scope"): the release when the kind shows on enough canary nodes, or when no
// canary GPU that has run the release as long is clean; a node otherwise.
std::string Judge::Impl::ScopeForRuleKind(const std::string& kind, const RuleHit& hit,
                                          std::int64_t t) const {
  if (auto it = kind_scope_.find(kind); it != kind_scope_.end()) return it->second;
  std::set<int> affected_gpus;
  std::set<int> affected_nodes;
  for (const RuleHit& h : hits_) {
    const GpuState& s = gpus_[static_cast<std::size_t>(h.gpu)];
    if (h.kind != kind || h.history || s.role != Role::kCanary ||
        !nodes_[static_cast<std::size_t>(s.node)].since) {
      continue;
    }
    affected_gpus.insert(h.gpu);
    affected_nodes.insert(s.node);
  }
  for (const RuleHit& h : tick_hits_) {
    const GpuState& s = gpus_[static_cast<std::size_t>(h.gpu)];
    if (h.kind != kind || s.role != Role::kCanary || PhaseOf(s.node, t) == Phase::kHistory ||
        PhaseOf(s.node, t) == Phase::kSwitching || s.history_kinds.count(kind) != 0) {
      continue;
    }
    affected_gpus.insert(h.gpu);
    affected_nodes.insert(s.node);
  }
  affected_gpus.insert(hit.gpu);
  affected_nodes.insert(gpus_[static_cast<std::size_t>(hit.gpu)].node);
  const int canary_nodes = CanaryNodeCount();
  const int n_aff = static_cast<int>(affected_nodes.size());
  if (n_aff >= 2 && 2 * n_aff >= canary_nodes) return "release";
  const int hit_node = gpus_[static_cast<std::size_t>(hit.gpu)].node;
  const NodeState& hn = nodes_[static_cast<std::size_t>(hit_node)];
  const double exposure = hn.since ? static_cast<double>(hit.onset - *hn.since) : 0.0;
  // A clean GPU on another canary node that has run the release clearly
  // longer than this one had when it showed the fault: the release runs fine
  // there, so this is the node.
  const double need = std::min(std::max(exposure, 0.0), kWitnessSeconds) +
                      static_cast<double>(hit.fired - hit.onset) + kWitnessSeconds;
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    const GpuState& w = gpus_[g];
    if (w.role != Role::kCanary || w.excluded || w.node == hit_node ||
        affected_gpus.count(static_cast<int>(g)) != 0 || !gpu_has_data_[g]) {
      continue;
    }
    const NodeState& wn = nodes_[static_cast<std::size_t>(w.node)];
    if (!wn.since) continue;
    if (static_cast<double>(t - *wn.since) >= need) return "node";
  }
  // Fewer than half of the node's GPUs, the others running the same release
  // as long: wait kWitnessSeconds for them to show it too (the release) or
  // not (the node).
  int on_node = 0;
  for (int g : affected_gpus) on_node += gpus_[static_cast<std::size_t>(g)].node == hit_node;
  if (2 * on_node < std::max(1, hn.gpu_count)) return "pending";
  return "release";
}

// The node's switch is known: its rule hits while it switched were history
// (before the switch: the old release) or the release's (after).
void Judge::Impl::ResolveSwitching(int node, std::int64_t t) {
  const std::int64_t since = *nodes_[static_cast<std::size_t>(node)].since;
  for (std::size_t i = 0; i < findings_.size(); ++i) {
    internal::MetricFinding& f = findings_[i];
    if (f.scope != "switching") continue;
    GpuState& s = gpus_[static_cast<std::size_t>(f.units.front())];
    if (s.node != node) continue;
    RuleHit* hit = nullptr;
    for (RuleHit& h : hits_) {
      if (h.gpu == f.units.front() && h.kind == f.kind && h.fired == f.decided_at) hit = &h;
    }
    if (f.since < since) {
      f.scope = "node";
      f.history = true;
      if (hit != nullptr) hit->history = true;
      s.history_kinds.insert(f.kind);
      s.excluded = true;
      nodes_[static_cast<std::size_t>(node)].excluded = true;
      continue;
    }
    RuleHit probe = hit != nullptr ? *hit : RuleHit{};
    probe.gpu = f.units.front();
    probe.kind = f.kind;
    f.scope = ScopeForRuleKind(f.kind, probe, t);
    if (f.scope == "release") {
      kind_scope_[f.kind] = "release";
      f.decided_at = t;
    } else if (f.scope == "node") {
      s.excluded = true;
      nodes_[static_cast<std::size_t>(node)].excluded = true;
    }
  }
}

// Pending hits (a minority of one node's GPUs): the release once enough GPUs
// or nodes show the kind, the node once kWitnessSeconds passed without.
void Judge::Impl::ResolvePending(std::int64_t t, bool at_end) {
  for (internal::MetricFinding& f : findings_) {
    if (at_end && f.scope == "switching") f.scope = "node";  // the switch never came
    if (f.scope != "pending") continue;
    const GpuState& s = gpus_[static_cast<std::size_t>(f.units.front())];
    RuleHit probe;
    probe.gpu = f.units.front();
    probe.kind = f.kind;
    probe.onset = f.since;
    probe.fired = f.decided_at;
    const std::string scope = ScopeForRuleKind(f.kind, probe, t);
    if (scope == "release") {
      f.scope = "release";
      f.decided_at = t;
      kind_scope_[f.kind] = "release";
    } else if (scope == "node" || at_end ||
               static_cast<double>(t - f.decided_at) >= kWitnessSeconds) {
      f.scope = "node";
      gpus_[static_cast<std::size_t>(f.units.front())].excluded = true;
      nodes_[static_cast<std::size_t>(s.node)].excluded = true;
    }
  }
}

void Judge::Impl::OnHit(RuleHit hit, std::int64_t t) {
  GpuState& s = gpus_[static_cast<std::size_t>(hit.gpu)];
  if (hit.kind.empty()) return;
  s.hit = true;
  if (!s.window_open) {
    s.window_open = true;
    s.win_start = hit.onset;
  }
  std::string scope;
  if (s.role == Role::kBaseline) {
    scope = "node";
  } else {
    const Phase phase = PhaseOf(s.node, t);
    if (phase == Phase::kHistory) {
      hit.history = true;
      s.history_kinds.insert(hit.kind);
      scope = "node";
    } else if (phase == Phase::kSwitching) {
      // Before or after the node's switch: known when the switch is.
      scope = "switching";
    } else if (s.history_kinds.count(hit.kind) != 0) {
      hit.history = true;  // it had this before the release
      scope = "node";
    } else {
      scope = ScopeForRuleKind(hit.kind, hit, t);
      // A non-critical XID is a pattern only when it recurs on several GPUs.
      if (scope == "release") kind_scope_[hit.kind] = "release";
    }
  }
  if (scope == "node") {
    // Out of the pools: the GPU, and its node's service (tensor parallel:
    // one bad GPU slows the node's server).
    s.excluded = true;
    nodes_[static_cast<std::size_t>(s.node)].excluded = true;
  }
  internal::MetricFinding f;
  f.kind = hit.kind;
  f.scope = scope;
  f.origin = "rule:" + hit.rule;
  f.units = {hit.gpu};
  f.unit_is_gpu = true;
  f.since = hit.onset;
  f.decided_at = t;
  f.critical = hit.critical;
  f.detail = hit.detail;
  f.bits = hit.bits;
  f.history = hit.history;
  f.measure = -1;
  findings_.push_back(std::move(f));
  hits_.push_back(std::move(hit));
}

// Evidence windows: each GPU's fixed slots and the pooled baseline at the same
// ticks, from the start of a rule streak (reset when the streak ends before
// firing) to the end of the data once a rule fired.
void Judge::Impl::UpdateWindows(std::int64_t t) {
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    GpuState& s = gpus_[g];
    bool streak = false;
    if (s.throttle && s.throttle->streak().active()) streak = true;
    if (s.pcie && s.pcie->streak().active()) streak = true;
    const bool fired = s.hit;
    if (!streak && !fired) {
      if (s.window_open) {
        s.window_open = false;
        s.win_canary.fill(0);
        s.win_base.fill(0);
        s.win_n.fill(0);
        s.win_bits = 0;
      }
      continue;
    }
    if (!s.window_open) {
      s.window_open = true;
      s.win_start = t;
    }
    if (!gpu_has_data_[g]) continue;
    s.win_last = t;
    const auto grp = static_cast<std::size_t>(s.group);
    for (std::size_t k = 0; k < internal::kFixedGpuSlots; ++k) {
      const double v = gv_[g * slots_ + k];
      const std::optional<double> b = base_pool_[grp * slots_ + k].Mean();
      if (std::isnan(v) || !b) continue;
      s.win_canary[k] += v;
      s.win_base[k] += *b;
      s.win_n[k] += 1;
    }
    if (const std::optional<double> r = GpuValue(static_cast<int>(g), internal::kReasons)) {
      s.win_bits |= static_cast<std::uint64_t>(*r);
    }
    s.win_base_bits |= group_majority_[grp];
  }
}

// ---------------------------------------------------------------------------
// Statistical comparisons

double Judge::Impl::UnitAlpha(std::size_t m) const {
  const Measure& ms = measures_[m];
  int units = 0;
  if (IsNodeLevel(ms.kind)) {
    for (const NodeState& n : nodes_) units += n.role == Role::kCanary;
  } else {
    for (const GpuState& g : gpus_) units += g.role == Role::kCanary;
  }
  return ms.alpha_unit / std::max(1, units);
}

Comparison& Judge::Impl::ComparisonFor(std::size_t m, int unit) {
  // std::map nodes are stable: a dense index by unit avoids a tree lookup
  // per unit, measure and tick.
  std::vector<Comparison*>& index = comparison_index_[m];
  const auto u = static_cast<std::size_t>(unit);
  if (u < index.size() && index[u] != nullptr) return *index[u];
  if (index.size() <= u) index.resize(u + 1, nullptr);
  const double alpha = unit == 0 ? measures_[m].alpha_whole : UnitAlpha(m);
  const auto block_s = static_cast<std::int64_t>(policy_.block_s);
  const std::int64_t origin = BlockOrigin();
  const std::int64_t history_origin = first_tick_.value_or(0);
  const double rho = stats::RhoForTarget(30, alpha);
  Comparison& created = comparisons_[m]
                            .emplace(unit, Comparison(block_s, policy_.min_block_fraction, origin,
                                                      rho, alpha, history_origin))
                            .first->second;
  index[u] = &created;
  return created;
}

CountComparison& Judge::Impl::CountFor(std::size_t m, int unit) {
  std::vector<CountComparison*>& index = count_index_[m];
  const auto u = static_cast<std::size_t>(unit);
  if (u < index.size() && index[u] != nullptr) return *index[u];
  if (index.size() <= u) index.resize(u + 1, nullptr);
  CountComparison c;
  c.alpha = unit == 0 ? measures_[m].alpha_whole : UnitAlpha(m);
  CountComparison& created = counts_[m].emplace(unit, c).first->second;
  index[u] = &created;
  return created;
}

// One tick of every measure: the value of each canary unit (GPU or node) and
// of the pools (whole canary in its judged phase, whole canary in its
// history, matched baseline), then the block comparisons or count tests.
void Judge::Impl::RunMeasures(std::int64_t t, const Tick& tick) {
  for (std::size_t m = 0; m < measures_.size(); ++m) {
    const Measure& ms = measures_[m];
    if (IsCountKind(ms.kind)) {
      RunCount(m, t);
    } else if (ms.kind == MeasureKind::kNodeTail) {
      RunTail(m, t, tick);
    } else {
      RunContinuous(m, t);
    }
  }
}

void Judge::Impl::RunContinuous(std::size_t m, std::int64_t t) {
  const Measure& ms = measures_[m];
  std::vector<ScratchUnit>& units = scratch_units_;  // unit = 1 + GPU or node index
  units.clear();
  RatioPool call, chist, bpool;
  if (!IsNodeLevel(ms.kind)) {
    if (ms.gpu_slot < 0) return;
    const bool rate = ms.kind == MeasureKind::kGpuRate;
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      const GpuState& s = gpus_[g];
      if (group_canary_[static_cast<std::size_t>(s.group)] == 0) continue;
      const int gi = static_cast<int>(g);
      const std::optional<double> v =
          rate ? GpuIncrease(gi, ms.gpu_slot) : GpuValue(gi, ms.gpu_slot);
      if (s.role == Role::kBaseline) {
        if (!s.excluded && v) bpool.Add(*v, 1);
        continue;
      }
      const Phase ph = PhaseOf(s.node, t);
      if (ms.decides) units.push_back({gi + 1, s.excluded ? std::nullopt : v, ph});
      if (s.excluded || !v) continue;
      if (ph == Phase::kJudged) call.Add(*v, 1);
      if (ph == Phase::kHistory) chist.Add(*v, 1);
    }
  } else {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const NodeState& n = nodes_[i];
      const int ni = static_cast<int>(i);
      double num = 0;
      double den = 0;
      bool ok = false;
      if (ms.kind == MeasureKind::kNodeRate && ms.node_slot >= 0) {
        if (const std::optional<double> inc = NodeIncrease(ni, ms.node_slot)) {
          num = *inc;
          den = std::max(1, n.gpu_count);
          ok = true;
        }
      } else if (ms.kind == MeasureKind::kNodeMean) {
        const std::optional<double> s = NodeIncrease(ni, ms.node_slot);
        const std::optional<double> c = NodeIncrease(ni, ms.node_slot2);
        if (s && c && *c > 0) {
          num = *s;
          den = *c;
          ok = true;
        }
      } else if (ms.kind == MeasureKind::kDramEff) {
        double dram = 0;
        double tensor = 0;
        int with = 0;
        for (int g : (*catalog_->nodes)[i].gpus) {
          const std::optional<double> d = GpuValue(g, internal::kDram);
          const std::optional<double> te = GpuValue(g, internal::kTensor);
          if (!d || !te) continue;
          dram += *d;
          tensor += *te;
          ++with;
        }
        if (with > 0 && dram > 0) {
          // Useful work per unit of DRAM activity: tokens where the service
          // reports them, tensor-pipe activity otherwise.
          const std::optional<double> tok = NodeIncrease(ni, tokens_slot_);
          num = tok ? *tok : tensor;
          den = dram;
          ok = true;
        }
      }
      if (n.role == Role::kBaseline) {
        if (!n.excluded && ok) bpool.Add(num, den);
        continue;
      }
      const Phase ph = PhaseOf(ni, t);
      std::optional<double> v;
      if (ok && den > 0 && !n.excluded) v = num / den;
      if (ms.decides) units.push_back({ni + 1, v, ph});
      if (n.excluded || !ok) continue;
      if (ph == Phase::kJudged) call.Add(num, den);
      if (ph == Phase::kHistory) chist.Add(num, den);
    }
  }
  const std::optional<double> canary_all = call.Value();
  const std::optional<double> canary_hist = chist.Value();
  const std::optional<double> baseline = bpool.Value();
  if (tap_ && ms.policy_index >= 0 && t >= BlockOrigin()) {
    tap_(t, ms.policy_index, canary_all, baseline);
  }
  const bool before_release = opt_.release_start_s && t < *opt_.release_start_s;
  const auto feed = [&](int unit, std::optional<double> judged, std::optional<double> history) {
    Comparison& cmp = ComparisonFor(m, unit);
    if (before_release) {
      if (const std::optional<stats::Block> b = cmp.history.Add(t, history, baseline)) {
        OnComparisonBlock(m, unit, *b, true);
      }
      return;
    }
    if (t < BlockOrigin()) return;
    if (const std::optional<stats::Block> b = cmp.blocks.Add(t, judged, baseline)) {
      OnComparisonBlock(m, unit, *b, false);
    }
  };
  feed(0, canary_all, canary_hist);
  for (const ScratchUnit& u : units) {
    feed(u.unit, u.phase == Phase::kJudged ? u.value : std::nullopt,
         u.phase == Phase::kHistory ? u.value : std::nullopt);
  }
}

// Count tests: rare GPU events per GPU-second.
void Judge::Impl::RunCount(std::size_t m, std::int64_t t) {
  const Measure& ms = measures_[m];
  struct UnitCount {
    int unit;
    double events;
    double exposure;
    Phase phase;
  };
  std::vector<UnitCount> units;
  double c_ev = 0, c_ex = 0, h_ev = 0, h_ex = 0, b_ev = 0, b_ex = 0;
  const auto add = [&](Role role, bool excluded, Phase ph, int unit, double ev, double ex) {
    if (excluded || ex <= 0) return;
    if (role == Role::kBaseline) {
      b_ev += ev;
      b_ex += ex;
      return;
    }
    units.push_back({unit, ev, ex, ph});
    if (ph == Phase::kJudged) c_ev += ev, c_ex += ex;
    if (ph == Phase::kHistory) h_ev += ev, h_ex += ex;
  };
  if (ms.kind == MeasureKind::kNodeCount) {
    if (ms.node_slot < 0) return;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const NodeState& n = nodes_[i];
      const int ni = static_cast<int>(i);
      const std::optional<double> inc = NodeIncrease(ni, ms.node_slot);
      const std::optional<double> tokens = NodeIncrease(ni, tokens_slot_);
      if (!inc || !tokens || *tokens <= 0) continue;
      add(n.role, n.excluded, n.role == Role::kCanary ? PhaseOf(ni, t) : Phase::kJudged, ni + 1,
          *inc, *tokens);
    }
  } else {
    if (ms.gpu_slot < 0) return;
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      const GpuState& s = gpus_[g];
      if (group_canary_[static_cast<std::size_t>(s.group)] == 0) continue;
      const std::optional<double> inc = GpuIncrease(static_cast<int>(g), ms.gpu_slot);
      if (!inc) continue;
      add(s.role, s.excluded, s.role == Role::kCanary ? PhaseOf(s.node, t) : Phase::kJudged,
          static_cast<int>(g) + 1, *inc, 1.0);
    }
  }
  if (tap_ && ms.policy_index >= 0 && t >= BlockOrigin()) {
    tap_(t, ms.policy_index, c_ex > 0 ? std::optional<double>(c_ev / c_ex) : std::nullopt,
         b_ex > 0 ? std::optional<double>(b_ev / b_ex) : std::nullopt);
  }
  if (b_ex <= 0) return;
  const auto feed = [&](int unit, double ev, double ex, bool history) {
    CountComparison& cc = CountFor(m, unit);
    if (history) {
      cc.history_canary += ev;
      cc.history_baseline += b_ev;
      cc.history_canary_exposure += ex;
      cc.history_baseline_exposure += b_ex;
      return;
    }
    cc.test.AddEvents(std::llround(ev), std::llround(b_ev), ex / (ex + b_ex));
    ++cc.ticks;
    cc.canary_exposure += ex;
    cc.baseline_exposure += b_ex;
  };
  if (c_ex > 0) feed(0, c_ev, c_ex, false);
  if (h_ex > 0) feed(0, h_ev, h_ex, true);
  for (const UnitCount& u : units) {
    if (u.phase == Phase::kJudged) feed(u.unit, u.events, u.exposure, false);
    if (u.phase == Phase::kHistory) feed(u.unit, u.events, u.exposure, true);
  }
  if (!ms.decides) return;
  for (auto& [unit, cc] : counts_[m]) {
    if (cc.rejected) continue;
    if (cc.test.RejectsHigher(cc.alpha, 1.0 + ms.margin)) {
      cc.rejected = true;
      cc.decided_at = t;
      OnMetricWorse(m, unit, t);
    }
  }
}

namespace {

constexpr double kMinTailObservationsPerBlock = 20;

}  // namespace

// p99 comparisons: each block's 99th percentile per arm, from the bucket
// increases pooled over the block's seconds and the arm's nodes, compared as
// a log ratio under the same confidence sequence as the means. Block
// quantiles are robust to the clustering of slow requests (a queue spike
// makes many requests slow at once), which a per-request count test is not.
void Judge::Impl::RunTail(std::size_t m, std::int64_t t, const Tick& tick) {
  const Measure& ms = measures_[m];
  if (ms.family_metric < 0) return;
  std::map<double, double> base;
  bool base_any = false;
  struct NodeBuckets {
    int node;
    std::span<const Bucket> buckets;
  };
  std::vector<NodeBuckets> canary;
  for (const HistogramPoint& h : tick.histograms) {
    if (h.gpu >= 0 || h.metric != ms.family_metric) continue;
    const NodeState& n = nodes_[static_cast<std::size_t>(h.node)];
    const std::span<const Bucket> buckets = tick.BucketsOf(h);
    if (buckets.empty() || n.excluded) continue;
    bool complete = true;
    for (const Bucket& b : buckets) complete &= b.increase.has_value();
    if (!complete) continue;
    if (n.role == Role::kBaseline) {
      for (const Bucket& b : buckets) base[b.le] += *b.increase;
      base_any = true;
    } else {
      canary.push_back({h.node, buckets});
    }
  }
  const bool before_release = opt_.release_start_s && t < *opt_.release_start_s;
  if (!before_release && t < BlockOrigin()) return;
  const auto block_s = static_cast<std::int64_t>(policy_.block_s);
  const std::int64_t origin = before_release ? first_tick_.value_or(t) : BlockOrigin();
  const std::int64_t index = (t - origin) / block_s;
  const auto feed = [&](int unit, bool history, const std::vector<std::span<const Bucket>>& arms) {
    TailBlock& tb = tail_blocks_[m][{unit, history}];
    if (tb.index != index) {
      if (tb.index >= 0) CloseTail(m, unit, history, tb);
      tb = TailBlock{};
      tb.index = index;
    }
    if (!arms.empty()) {
      for (const std::span<const Bucket>& buckets : arms) {
        for (const Bucket& b : buckets) tb.canary[b.le] += *b.increase;
      }
      ++tb.canary_seconds;
    }
    if (base_any) {
      for (const auto& [le, c] : base) tb.baseline[le] += c;
      ++tb.baseline_seconds;
    }
  };
  std::vector<std::span<const Bucket>> all;
  std::map<int, std::vector<std::span<const Bucket>>> per_node;
  for (const NodeBuckets& nb : canary) {
    const Phase ph = PhaseOf(nb.node, t);
    if (before_release ? ph != Phase::kHistory : ph != Phase::kJudged) continue;
    all.push_back(nb.buckets);
    per_node[nb.node + 1].push_back(nb.buckets);
  }
  feed(0, before_release, all);
  if (!ms.decides) return;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].role != Role::kCanary) continue;
    const int unit = static_cast<int>(i) + 1;
    auto it = per_node.find(unit);
    feed(unit, before_release,
         it == per_node.end() ? std::vector<std::span<const Bucket>>{} : it->second);
  }
}

void Judge::Impl::CloseTail(std::size_t m, int unit, bool history, TailBlock& tb) {
  const double need = policy_.min_block_fraction * policy_.block_s;
  if (static_cast<double>(tb.canary_seconds) < need ||
      static_cast<double>(tb.baseline_seconds) < need) {
    return;
  }
  const auto total = [](const std::map<double, double>& b) {
    return b.empty() ? 0.0 : b.rbegin()->second;
  };
  if (total(tb.canary) < kMinTailObservationsPerBlock ||
      total(tb.baseline) < kMinTailObservationsPerBlock) {
    return;
  }
  const std::optional<double> qc = stats::BucketQuantile(tb.canary, 0.99);
  const std::optional<double> qb = stats::BucketQuantile(tb.baseline, 0.99);
  if (!qc || !qb) return;
  const auto block_s = static_cast<std::int64_t>(policy_.block_s);
  stats::Block block;
  block.index = tb.index;
  block.start_tick = (history ? first_tick_.value_or(0) : BlockOrigin()) + tb.index * block_s;
  block.canary_mean = *qc;
  block.baseline_mean = *qb;
  ComparisonFor(m, unit);
  OnComparisonBlock(m, unit, block, history);
}

void Judge::Impl::OnComparisonBlock(std::size_t m, int unit, const stats::Block& block,
                                    bool history) {
  Comparison& cmp = ComparisonFor(m, unit);
  const std::optional<double> lr = stats::LogRatio(block.canary_mean, block.baseline_mean);
  if (!lr) return;
  if (history) {
    cmp.history_sum += *lr;
    cmp.history_blocks += 1;
    return;
  }
  cmp.cs.Add(*lr);
  cmp.canary_sum += block.canary_mean;
  cmp.baseline_sum += block.baseline_mean;
  cmp.blocks_used += 1;
  if (cmp.cs.n() < policy_.min_blocks) return;
  const stats::Bounds b = cmp.cs.Interval(cmp.alpha);
  cmp.lo = std::max(cmp.lo, b.lo);
  cmp.hi = std::min(cmp.hi, b.hi);
  if (cmp.lo > cmp.hi) {  // the intersection emptied: keep the latest interval
    cmp.lo = b.lo;
    cmp.hi = b.hi;
  }
  const Measure& ms = measures_[m];
  if (!ms.decides || cmp.decision != stats::Decision::kUndecided) return;
  const stats::Decision d = Decide(ms.better, stats::RelativeChange({cmp.lo, cmp.hi}), ms.margin);
  if (d == stats::Decision::kUndecided) return;
  // Per-unit comparisons only look for harm; a unit's "not worse" is not needed.
  if (unit != 0 && d == stats::Decision::kNotWorse) return;
  cmp.decision = d;
  const std::int64_t end = block.start_tick + static_cast<std::int64_t>(policy_.block_s) - 1;
  cmp.decided_at = std::min(end, last_tick_.value_or(end));
  if (d == stats::Decision::kWorse) OnMetricWorse(m, unit, *cmp.decided_at);
}

// ---------------------------------------------------------------------------
// Findings, scope, verdict

int UnitNode(bool gpu_unit, int unit, const std::vector<int>& gpu_nodes) {
  return gpu_unit ? gpu_nodes[static_cast<std::size_t>(unit - 1)] : unit - 1;
}

// Scope of a failing measure: which canary units (GPUs or nodes) show the
// harm, by their own point estimates over at least kMinScopeBlocks blocks
// (docs/analysis-method.md, "Scope"). The release when the harm is on enough
// canary nodes, or when no unit is clean; a node when clean units witness that
// the release runs fine elsewhere, or when every harmed unit was already like
// that before the release.
std::string Judge::Impl::ScopeForMeasure(std::size_t m, int seed_unit,
                                         std::vector<int>* affected) const {
  const Measure& ms = measures_[m];
  const bool gpu_unit = !IsNodeLevel(ms.kind);
  std::vector<int> gpu_nodes(gpus_.size());
  for (std::size_t g = 0; g < gpus_.size(); ++g) gpu_nodes[g] = gpus_[g].node;
  std::set<int> harmed;
  std::set<int> preexisting;
  bool witness = false;
  const double half = ms.margin / 2;
  const auto judge_unit = [&](int unit, double change, bool enough, double history_change,
                              bool history_enough) {
    if (unit == 0 || !enough) return;
    const bool worse = IsCountKind(ms.kind) ? change > half : Worse(ms.better, change, half);
    if (!worse && unit != seed_unit) {
      witness = true;
      return;
    }
    // Already there before the release: the history was as bad (beyond the
    // margin) and the release made it no worse by another margin.
    const double added = (1 + change) / (1 + history_change) - 1;
    const bool before =
        history_enough && (IsCountKind(ms.kind) ? history_change > ms.margin && added <= ms.margin
                                                : Worse(ms.better, history_change, ms.margin) &&
                                                      !Worse(ms.better, added, ms.margin));
    (before ? preexisting : harmed).insert(unit);
  };
  if (IsCountKind(ms.kind)) {
    for (const auto& [unit, cc] : counts_[m]) {
      if (unit == 0) continue;
      // Already there: events before the release at a rate the release has
      // not raised by more than the margin (so far).
      const double hist_rate =
          cc.history_canary_exposure > 0 ? cc.history_canary / cc.history_canary_exposure : 0.0;
      const double events = static_cast<double>(cc.test.canary_events());
      const double cur_rate = cc.canary_exposure > 0 ? events / cc.canary_exposure : 0.0;
      if (cc.history_canary >= 3 && events > 0 && cur_rate <= (1 + ms.margin) * hist_rate) {
        preexisting.insert(unit);
        continue;
      }
      // Enough exposure to tell (30 s of it); a unit without events is clean.
      if (cc.ticks < 30) continue;
      const bool worse = cc.rate_ratio() > 1 + half;
      if (!worse && unit != seed_unit) {
        witness = true;
        continue;
      }
      harmed.insert(unit);
    }
  } else {
    for (const auto& [unit, cmp] : comparisons_[m]) {
      judge_unit(unit, cmp.change(), cmp.blocks_used >= kMinScopeBlocks, cmp.history_change(),
                 cmp.history_blocks >= kMinScopeBlocks);
    }
  }
  if (seed_unit != 0 && preexisting.count(seed_unit) == 0) harmed.insert(seed_unit);
  affected->assign(harmed.begin(), harmed.end());
  affected->insert(affected->end(), preexisting.begin(), preexisting.end());
  std::set<int> nodes;
  for (int u : harmed) nodes.insert(UnitNode(gpu_unit, u, gpu_nodes));
  const int n_aff = static_cast<int>(nodes.size());
  const int canary_nodes = CanaryNodeCount();
  if (n_aff >= 2 && 2 * n_aff >= canary_nodes) return "release";
  if (harmed.empty() && !preexisting.empty()) return "node";
  if (witness && !harmed.empty()) return "node";
  return "release";
}

double Judge::Impl::MeasureChange(int gpu_slot) const {
  for (std::size_t m = 0; m < measures_.size(); ++m) {
    const Measure& ms = measures_[m];
    if (ms.kind != MeasureKind::kGpuGauge || ms.gpu_slot != gpu_slot) continue;
    auto it = comparisons_[m].find(0);
    if (it != comparisons_[m].end()) return it->second.change();
  }
  return kNaN;
}

Signature Judge::Impl::CurrentSignature() const {
  Signature s;
  s.sm_clock = MeasureChange(internal::kClock);
  s.sm_active = MeasureChange(internal::kSmActive);
  s.occupancy = MeasureChange(internal::kOccupancy);
  s.tensor = MeasureChange(internal::kTensor);
  s.dram = MeasureChange(internal::kDram);
  s.power = MeasureChange(internal::kPower);
  s.tokens_per_dram = kNaN;
  for (std::size_t m = 0; m < measures_.size(); ++m) {
    if (measures_[m].kind != MeasureKind::kDramEff) continue;
    auto it = comparisons_[m].find(0);
    if (it != comparisons_[m].end()) s.tokens_per_dram = it->second.change();
  }
  for (const GpuState& g : gpus_) {
    if (g.role == Role::kCanary && (g.win_bits & 0x4U) != 0 && (g.win_base_bits & 0x4U) == 0) {
      s.power_capped = true;
    }
  }
  return s;
}

void Judge::Impl::OnMetricWorse(std::size_t m, int unit, std::int64_t t) {
  const Measure& ms = measures_[m];
  internal::MetricFinding f;
  f.measure = static_cast<int>(m);
  f.measure_unit = unit;
  f.origin = std::string(IsCountKind(ms.kind) ? "count:" : "metric:") + ms.name;
  f.unit_is_gpu = !IsNodeLevel(ms.kind);
  f.decided_at = t;
  f.since = opt_.release_start_s.value_or(first_tick_.value_or(t));
  f.critical = true;
  std::vector<int> affected;
  f.scope = ScopeForMeasure(m, unit, &affected);
  for (int u : affected) f.units.push_back(u - 1);
  // Since: the first judged second of the canary (the release serving
  // after its warm-up), the earliest the comparison could see it.
  std::optional<std::int64_t> first_serving;
  for (const NodeState& n : nodes_) {
    if (n.role == Role::kCanary && n.since) {
      first_serving = std::min(first_serving.value_or(*n.since), *n.since);
    }
  }
  if (first_serving) f.since = *first_serving + static_cast<std::int64_t>(policy_.warmup_s);
  if (f.units.empty() && unit == 0) {
    // Harm on the whole canary with no unit yet resolved: all canary units.
    if (f.unit_is_gpu) {
      for (std::size_t g = 0; g < gpus_.size(); ++g) {
        if (gpus_[g].role == Role::kCanary && !gpus_[g].excluded)
          f.units.push_back(static_cast<int>(g));
      }
    } else {
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i].role == Role::kCanary && !nodes_[i].excluded)
          f.units.push_back(static_cast<int>(i));
      }
    }
  }
  // A hardware mechanism already found for the release explains a slower
  // service; otherwise the signature names it.
  std::string kind;
  if (f.scope == "release") {
    for (const internal::MetricFinding& other : findings_) {
      if (other.scope == "release" && other.measure < 0) {
        kind = other.kind;
        break;
      }
    }
  }
  if (kind.empty()) {
    if (ms.kind == MeasureKind::kDramEff) {
      kind = "memory_thrash";
    } else {
      kind = ClassifyMetricFailure(ms.name, !IsNodeLevel(ms.kind), CurrentSignature());
    }
  }
  f.kind = kind;
  if (f.scope == "node") {
    for (int u : f.units) {
      if (f.unit_is_gpu) {
        gpus_[static_cast<std::size_t>(u)].excluded = true;
      } else {
        nodes_[static_cast<std::size_t>(u)].excluded = true;
        for (int g : (*catalog_->nodes)[static_cast<std::size_t>(u)].gpus) {
          gpus_[static_cast<std::size_t>(g)].excluded = true;
        }
      }
    }
  }
  findings_.push_back(std::move(f));
}

void Judge::Impl::UpdateVerdict(std::int64_t t) {
  // Which findings count against the release.
  std::map<std::string, std::set<int>> release_gpus_by_kind;
  for (const internal::MetricFinding& f : findings_) {
    if (f.scope == "release" && f.unit_is_gpu) {
      release_gpus_by_kind[f.kind].insert(f.units.begin(), f.units.end());
    }
  }
  for (internal::MetricFinding& f : findings_) {
    if (f.failing || f.scope != "release") continue;
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
  // Pass: every required measure shown not worse on the whole canary, no
  // failing finding, and at least half of the canary GPUs healthy.
  bool pass = !failed_at_;
  bool any_required = false;
  bool has_critical = false;
  for (const Measure& ms : measures_)
    has_critical |= ms.decides && ms.critical && !IsCountKind(ms.kind);
  for (std::size_t m = 0; m < measures_.size() && pass; ++m) {
    const Measure& ms = measures_[m];
    if (!ms.decides || IsCountKind(ms.kind)) continue;
    if (has_critical ? !ms.critical : ms.kind == MeasureKind::kDramEff) continue;
    any_required = true;
    auto it = comparisons_[m].find(0);
    if (it == comparisons_[m].end() || it->second.decision != stats::Decision::kNotWorse)
      pass = false;
  }
  int canary = 0;
  int healthy = 0;
  for (const GpuState& g : gpus_) {
    if (g.role != Role::kCanary) continue;
    ++canary;
    healthy += !g.excluded;
  }
  if (canary == 0 || 2 * healthy < canary || !any_required) pass = false;
  if (pass && !pass_since_) {
    // The decision was completed by the last required measure's block.
    std::int64_t at = t;
    std::int64_t latest = 0;
    for (std::size_t m = 0; m < measures_.size(); ++m) {
      auto it = comparisons_[m].find(0);
      if (it != comparisons_[m].end() && it->second.decided_at && measures_[m].decides) {
        latest = std::max(latest, *it->second.decided_at);
      }
    }
    if (latest > 0) at = std::min(at, latest);
    pass_since_ = at;
  }
  if (!pass) pass_since_.reset();
}

// ---------------------------------------------------------------------------
// Report

namespace {

double ScoreForAlpha(double alpha_used, double policy_alpha, double alpha_star) {
  // alpha_star is the error rate of the single comparison at which the
  // decision still holds; scale it back to the whole canary's budget.
  const double total = alpha_star * policy_alpha / alpha_used;
  // Capped at 30: beyond that the number says nothing more.
  return -std::log10(std::clamp(total, 1e-30, 1.0));
}

}  // namespace

double Judge::Impl::FindingScore(const internal::MetricFinding& f) const {
  const double rule_score = -std::log10(policy_.alpha);
  if (f.measure < 0) return rule_score;
  const auto m = static_cast<std::size_t>(f.measure);
  const Measure& ms = measures_[m];
  if (IsCountKind(ms.kind)) {
    auto it = counts_[m].find(f.measure_unit);
    if (it == counts_[m].end()) return 0;
    const double log10_e = it->second.test.log_e_value() / std::log(10.0);
    return ScoreForAlpha(it->second.alpha, policy_.alpha,
                         std::pow(10.0, -std::min(log10_e, 300.0)));
  }
  auto it = comparisons_[m].find(f.measure_unit);
  if (it == comparisons_[m].end()) return 0;
  const Comparison& cmp = it->second;
  if (cmp.cs.n() < 2) return 0;
  // Bisection on log(alpha) for the smallest alpha at which the CS still
  // lies wholly on the harmful side of the margin.
  const auto holds = [&](double a) {
    const double h = stats::CsHalfWidth(cmp.cs.n(), cmp.cs.variance(), cmp.cs.rho(), a,
                                        stats::CsScale::kStandardized);
    const stats::Bounds rel = stats::RelativeChange({cmp.cs.mean() - h, cmp.cs.mean() + h});
    return Decide(ms.better, rel, ms.margin) == stats::Decision::kWorse;
  };
  double lo = -690;  // log(alpha) ~ 1e-300
  double hi = std::log(0.5);
  if (!holds(std::exp(hi))) return 0;
  if (holds(std::exp(lo))) return ScoreForAlpha(cmp.alpha, policy_.alpha, 1e-300);
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (holds(std::exp(mid)) ? hi : lo) = mid;
  }
  return ScoreForAlpha(cmp.alpha, policy_.alpha, std::exp(hi));
}

MetricResult Judge::Impl::ResultFor(std::size_t m) const {
  const Measure& ms = measures_[m];
  MetricResult r;
  r.name = ms.name;
  if (ms.policy_index >= 0) {
    r.kind = std::string(
        MetricKindName(policy_.metrics[static_cast<std::size_t>(ms.policy_index)].kind));
  } else {
    r.kind = "ratio";
  }
  r.better = ms.better == MetricPolicy::Better::kHigher ? "higher" : "lower";
  r.margin = ms.margin;
  r.critical = ms.critical;
  r.baseline = r.canary = r.change = kNaN;
  r.interval_lo = r.interval_hi = kNaN;
  r.detectable_effect = kNaN;
  r.result = "no_data";
  if (IsCountKind(ms.kind)) {
    auto it = counts_[m].find(0);
    if (it == counts_[m].end() || it->second.canary_exposure <= 0) return r;
    const CountComparison& cc = it->second;
    r.canary = static_cast<double>(cc.test.canary_events()) / cc.canary_exposure;
    r.baseline = static_cast<double>(cc.test.baseline_events()) / cc.baseline_exposure;
    r.change = cc.rate_ratio() - 1;
    r.blocks = cc.test.canary_events() + cc.test.baseline_events();
    r.result = cc.rejected ? "high" : "inconclusive";
    if (cc.decided_at) r.decided_at = static_cast<double>(*cc.decided_at);
    return r;
  }
  auto it = comparisons_[m].find(0);
  if (it == comparisons_[m].end() || it->second.blocks_used == 0) return r;
  const Comparison& cmp = it->second;
  r.blocks = cmp.blocks_used;
  r.canary = cmp.canary_sum / static_cast<double>(cmp.blocks_used);
  r.baseline = cmp.baseline_sum / static_cast<double>(cmp.blocks_used);
  // The change the interval is about: the geometric mean of the block ratios.
  r.change = cmp.cs.n() > 0 ? std::expm1(cmp.cs.mean()) : kNaN;
  if (cmp.cs.n() >= policy_.min_blocks) {
    const stats::Bounds rel = stats::RelativeChange({cmp.lo, cmp.hi});
    r.interval_lo = rel.lo;
    r.interval_hi = rel.hi;
    r.detectable_effect = stats::DetectableEffect(rel);
  } else {
    r.interval_lo = -kInf;
    r.interval_hi = kInf;
  }
  switch (cmp.decision) {
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
  if (cmp.decided_at) r.decided_at = static_cast<double>(*cmp.decided_at);
  return r;
}

Report Judge::Impl::BuildReport(bool final) const {
  (void) final;
  Report report;
  if (opt_.release_start_s) report.release_start = static_cast<double>(*opt_.release_start_s);
  if (first_tick_) report.first_tick = static_cast<double>(*first_tick_);
  if (last_tick_) report.last_tick = static_cast<double>(*last_tick_);
  for (const GpuState& g : gpus_) {
    (g.role == Role::kCanary ? report.canary_gpus : report.baseline_gpus)++;
  }
  for (std::size_t m = 0; m < measures_.size(); ++m) {
    if (measures_[m].decides) report.metrics.push_back(ResultFor(m));
  }
  const std::vector<GpuInfo>* gpu_info = catalog_ ? catalog_->gpus : nullptr;
  const std::vector<NodeInfo>* node_info = catalog_ ? catalog_->nodes : nullptr;

  // Metric findings are named now, from the signature as it stands: a
  // mechanism the rules found for the release explains a slower service.
  std::vector<internal::MetricFinding> findings = findings_;
  std::string release_rule_kind;
  for (const internal::MetricFinding& f : findings) {
    if (f.measure < 0 && f.scope == "release" && release_rule_kind.empty())
      release_rule_kind = f.kind;
  }
  const Signature signature = CurrentSignature();
  for (internal::MetricFinding& f : findings) {
    if (f.measure < 0) continue;
    const Measure& ms = measures_[static_cast<std::size_t>(f.measure)];
    if (ms.kind == MeasureKind::kDramEff) {
      f.kind = "memory_thrash";
    } else if (f.scope == "release" && !release_rule_kind.empty()) {
      f.kind = release_rule_kind;
    } else {
      f.kind = ClassifyMetricFailure(ms.name, !IsNodeLevel(ms.kind), signature);
    }
  }
  // Causes: findings grouped by kind and scope, node faults per node.
  using GroupKey = std::tuple<std::string, std::string, std::string>;
  std::map<GroupKey, std::vector<const internal::MetricFinding*>> groups;
  std::vector<GroupKey> order;
  for (const internal::MetricFinding& f : findings) {
    std::string where;
    if (f.scope != "release" && node_info != nullptr && gpu_info != nullptr) {
      std::set<std::string> hosts;
      for (int u : f.units) {
        hosts.insert(f.unit_is_gpu ? (*gpu_info)[static_cast<std::size_t>(u)].host
                                   : (*node_info)[static_cast<std::size_t>(u)].host);
      }
      for (const std::string& h : hosts) where += h + ",";
    }
    const GroupKey key{f.kind, f.scope == "release" ? "release" : "node", where};
    if (groups.find(key) == groups.end()) order.push_back(key);
    groups[key].push_back(&f);
  }
  double fail_score = 0;
  for (const auto& key : order) {
    const auto& fs = groups[key];
    Cause c;
    c.kind = std::get<0>(key);
    c.scope = std::get<1>(key);
    bool any_rule = false;
    for (const internal::MetricFinding* f : fs) any_rule |= f->measure < 0;
    std::set<std::string> gpus;
    std::set<std::string> nodes;
    std::set<int> gpu_ids;
    std::string detail;
    std::set<std::string> details;
    c.since = kInf;
    c.decided_at = kInf;
    bool history = false;
    for (const internal::MetricFinding* f : fs) {
      for (int u : f->units) {
        if (f->unit_is_gpu) {
          gpu_ids.insert(u);
        } else if (node_info != nullptr) {
          for (int g : (*node_info)[static_cast<std::size_t>(u)].gpus) gpu_ids.insert(g);
          nodes.insert((*node_info)[static_cast<std::size_t>(u)].host);
        }
      }
      if (!any_rule || f->measure < 0) c.since = std::min(c.since, static_cast<double>(f->since));
      c.decided_at = std::min(c.decided_at, static_cast<double>(f->decided_at));
      c.failing |= f->failing;
      if (c.origin.empty()) c.origin = f->origin;
      if (!f->detail.empty() && details.insert(f->detail).second) {
        detail += (detail.empty() ? "" : ", ") + f->detail;
      }
      history |= f->history;
      if (f->failing) fail_score = std::max(fail_score, FindingScore(*f));
    }
    for (int g : gpu_ids) {
      if (gpu_info == nullptr) break;
      gpus.insert((*gpu_info)[static_cast<std::size_t>(g)].key);
      nodes.insert((*gpu_info)[static_cast<std::size_t>(g)].host);
    }
    c.gpus.assign(gpus.begin(), gpus.end());
    c.nodes.assign(nodes.begin(), nodes.end());

    // Evidence: rule windows for rule findings, comparisons for metric ones.
    double seconds = 0;
    const internal::MetricFinding* first_metric = nullptr;
    for (const internal::MetricFinding* f : fs) {
      if (f->measure >= 0 && first_metric == nullptr) first_metric = f;
    }
    if (any_rule) {
      std::array<double, internal::kFixedGpuSlots> cs{}, bs{}, ns{};
      std::uint64_t bits = 0;
      for (int g : gpu_ids) {
        const GpuState& s = gpus_[static_cast<std::size_t>(g)];
        for (std::size_t k = 0; k < internal::kFixedGpuSlots; ++k) {
          if (s.win_n[k] <= 0) continue;
          cs[k] += s.win_canary[k] / s.win_n[k];
          bs[k] += s.win_base[k] / s.win_n[k];
          ns[k] += 1;
        }
        bits |= s.win_bits;
        seconds = std::max(seconds, static_cast<double>(s.win_last - s.win_start + 1));
      }
      const auto evidence = [&](int slot, std::string unit) {
        const auto k = static_cast<std::size_t>(slot);
        if (ns[k] <= 0) return;
        c.evidence.push_back({std::string(internal::kGpuSlotNames[k]), bs[k] / ns[k], cs[k] / ns[k],
                              std::move(unit)});
      };
      if (c.kind == "power_brake" || c.kind == "hw_slowdown" || c.kind == "thermal_throttle" ||
          c.kind == "power_cap") {
        evidence(internal::kClock, "MHz");
        if (c.kind == "thermal_throttle") evidence(internal::kTemp, "C");
        if (c.kind == "power_cap") {
          evidence(internal::kPower, "W");
          evidence(internal::kPowerLimit, "W");
        }
        (void)bits;
      } else if (c.kind == "pcie_downtrain") {
        evidence(internal::kWidth, "lanes");
        evidence(internal::kGen, "gen");
        evidence(internal::kPcieRx, "B/s");
      } else if (c.kind == "ecc_errors" || c.kind == "xid_errors") {
        evidence(internal::kClock, "MHz");
      }
    }
    if (first_metric != nullptr) {
      const auto m = static_cast<std::size_t>(first_metric->measure);
      const MetricResult r = ResultFor(m);
      c.evidence.push_back({r.name, r.baseline, r.canary, ""});
      // The signature: the other metrics that moved.
      for (int slot : {internal::kClock, internal::kOccupancy, internal::kSmActive,
                       internal::kTensor, internal::kDram}) {
        for (std::size_t k = 0; k < measures_.size(); ++k) {
          const Measure& ms = measures_[k];
          if (ms.kind != MeasureKind::kGpuGauge || ms.gpu_slot != slot || ms.name == r.name)
            continue;
          auto it = comparisons_[k].find(0);
          if (it == comparisons_[k].end() || it->second.blocks_used == 0) continue;
          const Comparison& cmp = it->second;
          c.evidence.push_back({ms.name, cmp.baseline_sum / static_cast<double>(cmp.blocks_used),
                                cmp.canary_sum / static_cast<double>(cmp.blocks_used), ""});
          break;
        }
      }
      if (last_tick_ && !any_rule) seconds = static_cast<double>(*last_tick_) - c.since + 1;
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
    if (history)
      detail += detail.empty() ? "already before the release" : "; already before the release";
    c.summary = SummarizeCause(c, detail, seconds);
    report.causes.push_back(std::move(c));
  }
  // Failing causes first, then by time.
  std::stable_sort(report.causes.begin(), report.causes.end(), [](const Cause& a, const Cause& b) {
    if (a.failing != b.failing) return a.failing;
    return a.decided_at < b.decided_at;
  });

  if (failed_at_) {
    report.verdict = Verdict::kFail;
    report.decided_at = static_cast<double>(*failed_at_);
    report.score = fail_score;
  } else if (pass_since_) {
    report.verdict = Verdict::kPass;
    report.decided_at = static_cast<double>(*pass_since_);
    double score = kInf;
    for (std::size_t m = 0; m < measures_.size(); ++m) {
      const Measure& ms = measures_[m];
      if (!ms.decides || !ms.critical || IsCountKind(ms.kind)) continue;
      auto it = comparisons_[m].find(0);
      if (it == comparisons_[m].end()) continue;
      const Comparison& cmp = it->second;
      const auto holds = [&](double a) {
        const double h = stats::CsHalfWidth(cmp.cs.n(), cmp.cs.variance(), cmp.cs.rho(), a,
                                            stats::CsScale::kStandardized);
        return Decide(ms.better, stats::RelativeChange({cmp.cs.mean() - h, cmp.cs.mean() + h}),
                      ms.margin) == stats::Decision::kNotWorse;
      };
      double lo = -690;
      double hi = std::log(0.5);
      if (!holds(std::exp(hi))) {
        score = std::min(score, 0.0);
        continue;
      }
      if (!holds(std::exp(lo))) {
        for (int i = 0; i < 60; ++i) {
          const double mid = (lo + hi) / 2;
          (holds(std::exp(mid)) ? hi : lo) = mid;
        }
      } else {
        hi = lo;
      }
      score = std::min(score, ScoreForAlpha(cmp.alpha, policy_.alpha, std::exp(hi)));
    }
    report.score = std::isinf(score) ? 0 : score;
  } else {
    report.verdict = Verdict::kInconclusive;
  }
  report.notes = notes_;
  int canary_nodes = 0;
  for (const NodeState& n : nodes_) canary_nodes += n.role == Role::kCanary;
  if (report.canary_gpus == 0) report.notes.emplace_back("no canary GPU in the data");
  if (report.baseline_gpus == 0) report.notes.emplace_back("no baseline GPU in the data");
  for (std::size_t grp = 0; grp < group_canary_.size(); ++grp) {
    if (group_canary_[grp] > 0 && group_baseline_[grp] == 0) {
      for (const auto& [name, id] : groups_) {
        if (id == static_cast<int>(grp)) {
          report.notes.push_back(std::to_string(group_canary_[grp]) + " canary GPU(s) of model '" +
                                 name + "' have no baseline GPU of the same model: not compared");
        }
      }
    }
  }
  if (ignored_ticks_ > 0) {
    report.notes.push_back(std::to_string(ignored_ticks_) + " tick(s) out of time order ignored");
  }
  for (const MetricResult& r : report.metrics) {
    if (r.critical && r.result == "no_data") {
      report.notes.push_back(r.name +
                             ": critical and no data in the recordings: the judge cannot pass "
                             "the release (change the policy if this service does not expose it)");
    }
  }
  if (report.verdict == Verdict::kInconclusive) {
    for (const MetricResult& r : report.metrics) {
      if (r.result != "inconclusive" || std::isnan(r.detectable_effect)) continue;
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "%s: undecided; the data could detect a change of %.1f%% (margin %.1f%%)",
                    r.name.c_str(), 100 * r.detectable_effect, 100 * r.margin);
      report.notes.emplace_back(buf);
    }
  }
  (void)canary_nodes;
  return report;
}

void Judge::Impl::FinishBlocks() {
  for (std::size_t m = 0; m < measures_.size(); ++m) {
    for (auto& [key, tb] : tail_blocks_[m]) {
      if (tb.index >= 0) CloseTail(m, key.first, key.second, tb);
      tb = TailBlock{};
    }
    for (auto& [unit, cmp] : comparisons_[m]) {
      if (const std::optional<stats::Block> b = cmp.history.Flush()) {
        OnComparisonBlock(m, unit, *b, true);
      }
      if (const std::optional<stats::Block> b = cmp.blocks.Flush()) {
        OnComparisonBlock(m, unit, *b, false);
      }
    }
  }
  if (last_tick_) {
    ResolvePending(*last_tick_, true);
    UpdateVerdict(*last_tick_);
  }
}

// ---------------------------------------------------------------------------

std::vector<std::string> JudgeInputNames(const Policy& policy) {
  std::set<std::string> names(internal::kGpuSlotNames.begin(), internal::kGpuSlotNames.end());
  names.emplace(internal::kTokensMetric);
  const std::string tpot(internal::kTpotFamily);
  names.insert({tpot + "_sum", tpot + "_count"});
  for (const MetricPolicy& mp : policy.metrics) {
    switch (mp.kind) {
      case MetricPolicy::Kind::kMean:
        names.insert({mp.name + "_sum", mp.name + "_count"});
        break;
      case MetricPolicy::Kind::kP99:
        names.insert(mp.name + "_bucket");
        break;
      default:
        names.insert(mp.name);
        break;
    }
  }
  return {names.begin(), names.end()};
}

Judge::Judge(JudgeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Judge::~Judge() = default;
Judge::Judge(Judge&&) noexcept = default;
Judge& Judge::operator=(Judge&&) noexcept = default;

void Judge::Add(const Tick& tick, const Catalog& catalog) { impl_->Add(tick, catalog); }
Report Judge::Snapshot() const { return impl_->BuildReport(false); }
Report Judge::Finish() {
  impl_->FinishBlocks();
  return impl_->BuildReport(true);
}
void Judge::SetTap(Tap tap) { impl_->SetTap(std::move(tap)); }

}  // namespace gpucanary::analysis
