#include "analysis/judge/measures.h"

#include <algorithm>
#include <string>

namespace gpucanary::analysis::judge_internal {
namespace {

using Sources = std::vector<Fleet::SlotSource>;

constexpr double kTargetSeconds = 120;

// The samples each server gives a measure's mean: the numerator (a
// histogram's _sum, or a counter) and the denominator (its _count, or the
// other counter); a gauge's or counter's own sample.
struct MeasureSources {
  Sources num, den, value;
  std::vector<std::string> families;  // histograms, for a p99
  std::vector<double> family_scales;  // each family's unit conversion (ms -> s: 1e-3)
};

MeasureSources SourcesOf(vocab::ServiceMeasure measure) {
  MeasureSources out;
  for (const vocab::ServiceMetric& row : vocab::ServiceMetrics()) {
    if (row.measure != measure) continue;
    const std::string metric(row.metric);
    switch (row.type) {
      case vocab::SourceType::kHistogram:
        out.num.push_back({metric + "_sum", row.scale});
        out.den.push_back({metric + "_count", 1});
        out.families.push_back(metric);
        out.family_scales.push_back(row.scale);
        break;
      case vocab::SourceType::kCounterRatio:
        out.num.push_back({metric, row.scale});
        out.den.push_back({std::string(row.denominator), 1});
        break;
      case vocab::SourceType::kCounter:
      case vocab::SourceType::kGauge:
        // A row with a label selector: the replay files its samples under
        // their own name (vocab::SelectedName).
        out.value.push_back({vocab::SelectedName(row), row.scale});
        break;
    }
  }
  return out;
}

// Whether a metric named in a policy is a service metric (node level): a
// vLLM name, or a sample of any server's row in the measure table. The rest
// are a GPU's (DCGM fields).
bool IsServiceMetric(const std::string& name) {
  if (name.rfind("vllm:", 0) == 0) return true;
  for (const vocab::ServiceMetric& row : vocab::ServiceMetrics()) {
    if (name == row.metric || name == row.denominator) return true;
    for (const std::string& sample : vocab::SampleNames(row)) {
      if (name == sample) return true;
    }
  }
  return false;
}

// The node slot of the running batch (every server's running-requests
// gauge), which a per-token latency is read against.
int LoadSlot(Fleet& fleet) {
  const vocab::ServiceMeasure running = vocab::ServiceMeasure::kRunningRequests;
  return fleet.NodeSlotFor(std::string(vocab::Name(running)), SourcesOf(running).value);
}

// A measure of a policy entry that names a service measure: the node slots
// (or histogram families) every server's samples of it are filed under.
void ReadServiceMeasure(const MetricPolicy& mp, Measure& m, Fleet& fleet) {
  const MeasureSources src = SourcesOf(*mp.measure);
  const std::string key(vocab::Name(*mp.measure));
  switch (mp.kind) {
    case MetricPolicy::Kind::kMean:
      m.kind = MeasureKind::kNodeMean;
      m.node_slot = fleet.NodeSlotFor(key + ":sum", src.num);
      m.node_slot2 = fleet.NodeSlotFor(key + ":count", src.den);
      if (*mp.measure == vocab::ServiceMeasure::kPerTokenLatency) m.load_slot = LoadSlot(fleet);
      break;
    case MetricPolicy::Kind::kP99:
      m.kind = MeasureKind::kNodeTail;
      m.families = src.families;
      m.family_scales = src.family_scales;
      break;
    case MetricPolicy::Kind::kRate:
      m.kind = MeasureKind::kNodeRate;
      m.node_slot = *mp.measure == vocab::ServiceMeasure::kGeneratedTokens
                        ? fleet.tokens_slot()
                        : fleet.NodeSlotFor(key, src.value);
      // Tokens/s follow the running batch (below saturation, the traffic a
      // node is offered): read at equal load like the latency.
      if (*mp.measure == vocab::ServiceMeasure::kGeneratedTokens) m.load_slot = LoadSlot(fleet);
      break;
    case MetricPolicy::Kind::kGauge:
    case MetricPolicy::Kind::kCount:  // refused by the policy parser
      m.kind = MeasureKind::kNodeGauge;
      m.node_slot = fleet.NodeSlotFor(key, src.value);
      break;
  }
}

// A measure of a policy metric: a service measure, a service metric (node
// level) or a DCGM field of a GPU.
Measure PolicyMeasure(const MetricPolicy& mp, std::size_t index, double alpha_metric,
                      Fleet& fleet) {
  Measure m;
  m.name = mp.name;
  m.policy_index = static_cast<int>(index);
  m.policy_kind = mp.kind;
  m.decides = true;
  m.critical = mp.critical;
  m.better = mp.better;
  m.margin = mp.margin;
  m.alpha_whole = alpha_metric / 2;
  m.alpha_unit = alpha_metric / 2;
  if (mp.measure) {
    ReadServiceMeasure(mp, m, fleet);
    return m;
  }
  if (mp.gpu_measure) {  // work_per_joule, from the fixed GPU slots
    m.kind = MeasureKind::kGpuWork;
    m.gpu_slot = kTensor;
    return m;
  }
  const bool node_level = IsServiceMetric(mp.name);
  const auto read_sample = [&] {
    if (node_level) {
      m.node_slot = fleet.NodeSlotFor(mp.name);
    } else {
      m.gpu_slot = fleet.GpuSlotFor(mp.name);
    }
  };
  switch (mp.kind) {
    case MetricPolicy::Kind::kGauge:
      // A node gauge (requests waiting, KV-cache usage) is the node's value:
      // not an increase, and not divided among its GPUs.
      m.kind = node_level ? MeasureKind::kNodeGauge : MeasureKind::kGpuGauge;
      read_sample();
      break;
    case MetricPolicy::Kind::kRate:
      m.kind = node_level ? MeasureKind::kNodeRate : MeasureKind::kGpuRate;
      read_sample();
      break;
    case MetricPolicy::Kind::kMean:
      m.kind = MeasureKind::kNodeMean;
      m.node_slot = fleet.NodeSlotFor(mp.name + "_sum");
      m.node_slot2 = fleet.NodeSlotFor(mp.name + "_count");
      break;
    case MetricPolicy::Kind::kP99:
      m.kind = MeasureKind::kNodeTail;
      m.families = {mp.name};
      m.family_scales = {1};
      break;
    case MetricPolicy::Kind::kCount:
      // GPU events per GPU-second; service events (errors) per generated token.
      m.kind = node_level ? MeasureKind::kNodeCount : MeasureKind::kGpuCount;
      read_sample();
      break;
  }
  return m;
}

// Whether a policy entry reads a service's samples (node level): a service
// measure, a service metric's name, or a histogram's mean or tail.
bool ReadsService(const MetricPolicy& mp) {
  if (mp.gpu_measure) return false;
  return mp.measure || IsServiceMetric(mp.name) || mp.kind == MetricPolicy::Kind::kMean ||
         mp.kind == MetricPolicy::Kind::kP99;
}

}  // namespace

// A ratio of two sums (tokens per DRAM activity, histogram sum per count).
struct Measures::RatioPool {
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
  std::optional<NodeRatio> Sums() const {
    if (!any || !(den > 0)) return std::nullopt;
    return NodeRatio{num, den};
  }
};

// A continuous measure's pools this tick: the whole canary in its judged
// phase and in its history, and the matched baseline.
struct Measures::TickPools {
  RatioPool judged;
  RatioPool history;
  RatioPool baseline;
  // The arms as read, where judged and baseline are read at equal load (for
  // the tap: the evaluation's Kayenta-style judge sees the raw values).
  std::optional<RatioPool> raw_judged, raw_baseline;
};

// ---------------------------------------------------------------------------
// Set-up

Measures::Measures(const Policy& policy, const Timeline& time, Fleet& fleet, WorseSink on_worse)
    : policy_(policy), time_(time), fleet_(fleet), on_worse_(std::move(on_worse)) {
  Build(fleet);
}

// Measures: policy metrics, then the DRAM efficiency rule, then diagnostics.
void Measures::Build(Fleet& fleet) {
  // Error budget: alpha split evenly over the deciding comparisons (policy
  // metrics + the DRAM efficiency rule); each gets half for the whole canary
  // and half for its per-unit comparisons (split again over the units).
  // A canary decides either with service metrics (the policy's metrics) or
  // without (its GPU metrics and the without_service ones); the split is
  // over the larger of the two sets, so the bound holds for either.
  const int dram = policy_.rules.dram_efficiency ? 1 : 0;
  const int with_service = static_cast<int>(policy_.metrics.size()) + dram;
  int without_service = dram;
  for (const MetricPolicy& mp : policy_.metrics) without_service += ReadsService(mp) ? 0 : 1;
  for (const MetricPolicy& ws : policy_.without_service) {
    without_service += policy_.FindMetric(ws.name, ws.kind) ? 0 : 1;
  }
  const int deciding = std::max(with_service, without_service);
  const double alpha_metric = policy_.alpha / std::max(1, deciding);
  for (std::size_t i = 0; i < policy_.metrics.size(); ++i) {
    measures_.push_back(PolicyMeasure(policy_.metrics[i], i, alpha_metric, fleet));
  }
  for (std::size_t i = 0; i < policy_.without_service.size(); ++i) {
    const MetricPolicy& ws = policy_.without_service[i];
    if (const std::optional<std::size_t> repeated = policy_.FindMetric(ws.name, ws.kind)) {
      measures_[*repeated].without_service = true;
      continue;
    }
    Measure m = PolicyMeasure(ws, i, alpha_metric, fleet);
    m.policy_index = -1;
    m.without_service = true;
    m.only_without_service = true;
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
    // Tokens per DRAM-active second grow with the batch (a step streams the
    // weights once for all its sequences): read at equal load where the
    // servers report their running batch.
    m.load_slot = LoadSlot(fleet);
    measures_.push_back(std::move(m));
  }
  for (int s : {kClock, kSmActive, kOccupancy, kTensor, kDram, kPower, kTemp, kPcieRx}) {
    AddDiagnostic(kGpuSlotNames[static_cast<std::size_t>(s)], MeasureKind::kGpuGauge, s);
  }
  AddDiagnostic(kTokensMeasure, MeasureKind::kNodeRate, fleet.tokens_slot(), -1, LoadSlot(fleet));
  const MeasureSources per_token = SourcesOf(vocab::ServiceMeasure::kPerTokenLatency);
  const std::string key(kPerTokenMeasure);
  AddDiagnostic(kPerTokenMeasure, MeasureKind::kNodeMean,
                fleet.NodeSlotFor(key + ":sum", per_token.num),
                fleet.NodeSlotFor(key + ":count", per_token.den), LoadSlot(fleet));

  comparisons_.resize(measures_.size());
  load_fits_.resize(measures_.size());
  comparison_index_.resize(measures_.size());
  count_index_.resize(measures_.size());
  counts_.resize(measures_.size());
  tail_blocks_.resize(measures_.size());
  tail_load_.resize(measures_.size());
}

// Diagnostics: compared on the whole canary for the signatures, never decide.
void Measures::AddDiagnostic(std::string_view name, MeasureKind kind, int slot, int slot2,
                             int load_slot) {
  for (const Measure& existing : measures_) {
    if (existing.name == name && existing.kind == kind) return;
  }
  Measure m;
  m.name = std::string(name);
  m.kind = kind;
  m.gpu_slot = IsNodeLevel(kind) ? -1 : slot;
  m.node_slot = IsNodeLevel(kind) ? slot : -1;
  m.node_slot2 = slot2;
  m.load_slot = load_slot;
  m.alpha_whole = policy_.alpha;
  m.alpha_unit = policy_.alpha;
  measures_.push_back(std::move(m));
}

void Measures::SyncFamilies(const std::vector<MetricInfo>& metrics) {
  for (; metrics_synced_ < metrics.size(); ++metrics_synced_) {
    const std::string& name = metrics[metrics_synced_].name;
    for (Measure& m : measures_) {
      if (m.kind != MeasureKind::kNodeTail) continue;
      const auto it = std::find(m.families.begin(), m.families.end(), name);
      if (it == m.families.end()) continue;
      m.family_metrics.push_back(static_cast<int>(metrics_synced_));
      m.family_of_metric.push_back(static_cast<int>(it - m.families.begin()));
    }
  }
}

const Comparison* Measures::Whole(std::size_t m) const {
  auto it = comparisons_[m].find(0);
  return it == comparisons_[m].end() ? nullptr : &it->second;
}

const CountComparison* Measures::WholeCount(std::size_t m) const {
  auto it = counts_[m].find(0);
  return it == counts_[m].end() ? nullptr : &it->second;
}

double Measures::UnitAlpha(std::size_t m) const {
  const Measure& ms = measures_[m];
  int units = 0;
  if (IsNodeLevel(ms.kind)) {
    for (const NodeState& n : fleet_.nodes()) units += n.role == Role::kCanary;
  } else {
    for (const GpuState& g : fleet_.gpus()) units += g.role == Role::kCanary;
  }
  return ms.alpha_unit / std::max(1, units);
}

Comparison& Measures::ComparisonFor(std::size_t m, int unit) {
  std::vector<Comparison*>& index = comparison_index_[m];
  const auto u = static_cast<std::size_t>(unit);
  if (u < index.size() && index[u] != nullptr) return *index[u];
  if (index.size() <= u) index.resize(u + 1, nullptr);
  const double alpha = unit == 0 ? measures_[m].alpha_whole : UnitAlpha(m);
  const auto block_s = static_cast<std::int64_t>(policy_.block_s);
  const std::int64_t origin = time_.BlockOrigin();
  const std::int64_t history_origin = time_.first_tick.value_or(0);
  const bool per_second = measures_[m].kind != MeasureKind::kNodeTail;
  // The CS boundary is tightest near n* observations: 30 blocks of a p99,
  // two minutes of seconds (a fast fail is a large effect, decided well
  // before; a pass needs the tight boundary).
  const double rho = stats::RhoForTarget(per_second ? kTargetSeconds : 30, alpha);
  Comparison& created =
      comparisons_[m]
          .emplace(unit, Comparison(per_second, block_s, policy_.min_block_fraction, origin, rho,
                                    alpha, history_origin))
          .first->second;
  index[u] = &created;
  return created;
}

CountComparison& Measures::CountFor(std::size_t m, int unit) {
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

// ---------------------------------------------------------------------------
// Per tick

void Measures::Run(std::int64_t t, const Tick& tick) {
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

void Measures::RunContinuous(std::size_t m, std::int64_t t) {
  const Measure& ms = measures_[m];
  scratch_units_.clear();  // unit = 1 + GPU or node index
  if (!IsNodeLevel(ms.kind) && ms.gpu_slot < 0) return;
  const TickPools pools = IsNodeLevel(ms.kind) ? PoolNodes(m, t) : PoolGpus(ms, t);
  const std::optional<NodeRatio> canary_all = pools.judged.Sums();
  const std::optional<NodeRatio> canary_hist = pools.history.Sums();
  const std::optional<NodeRatio> baseline = pools.baseline.Sums();
  if (tap_ && ms.policy_index >= 0 && t >= time_.BlockOrigin()) {
    tap_(t, ms.policy_index, (pools.raw_judged ? *pools.raw_judged : pools.judged).Value(),
         (pools.raw_baseline ? *pools.raw_baseline : pools.baseline).Value());
  }
  FeedSeconds(m, 0, t, canary_all, canary_hist, baseline);
  for (const ScratchUnit& u : scratch_units_) {
    FeedSeconds(m, u.unit, t, u.phase == Phase::kJudged ? u.value : std::nullopt,
                u.phase == Phase::kHistory ? u.value : std::nullopt, baseline);
  }
}

// A GPU measure: each GPU's value, of the groups that have canary GPUs.
Measures::TickPools Measures::PoolGpus(const Measure& ms, std::int64_t t) {
  // Local sums (not the caller's): they stay in registers across the loop.
  RatioPool judged, history, baseline;
  const bool rate = ms.kind == MeasureKind::kGpuRate;
  const bool work = ms.kind == MeasureKind::kGpuWork;
  // Clocks and power are compared busy with busy: an idle GPU sits at its
  // idle clock (345 MHz on an H100 PCIe) whatever the release.
  const bool busy_only =
      ms.kind == MeasureKind::kGpuGauge && (ms.gpu_slot == kClock || ms.gpu_slot == kPower ||
                                            ms.gpu_slot == kOccupancy || ms.gpu_slot == kTemp);
  const std::vector<GpuState>& gpus = fleet_.gpus();
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const GpuState& s = gpus[g];
    if (fleet_.group_canary(s.group) == 0) continue;
    const int gi = static_cast<int>(g);
    // A value over a weight: the field's value over 1, or the GPU's
    // tensor-pipe cycles over its watts.
    std::optional<NodeRatio> r;
    if (busy_only && !fleet_.GpuBusy(gi)) {
      r.reset();
    } else if (work) {
      r = WorkPerJouleOf(gi);
    } else if (const std::optional<double> v =
                   rate ? fleet_.GpuIncrease(gi, ms.gpu_slot) : fleet_.GpuValue(gi, ms.gpu_slot)) {
      r = NodeRatio{*v, 1};
    }
    if (s.role == Role::kBaseline) {
      if (!s.excluded && r) baseline.Add(r->num, r->den);
      continue;
    }
    const Phase ph = fleet_.PhaseOf(s.node, t);
    if (ms.decides) {
      std::optional<NodeRatio> v;
      if (r && !s.excluded && r->den > 0) v = r;
      scratch_units_.push_back({gi + 1, v, ph});
    }
    if (s.excluded || !r) continue;
    if (ph == Phase::kJudged) judged.Add(r->num, r->den);
    if (ph == Phase::kHistory) history.Add(r->num, r->den);
  }
  return TickPools{judged, history, baseline, std::nullopt, std::nullopt};
}

// A node measure: each node's ratio (per GPU, per request, per DRAM
// activity), pooled as a ratio of sums.
Measures::TickPools Measures::PoolNodes(std::size_t m, std::int64_t t) {
  const Measure& ms = measures_[m];
  RatioPool judged, history, baseline;
  const bool at_load = (ms.kind == MeasureKind::kNodeMean || ms.kind == MeasureKind::kNodeRate ||
                        ms.kind == MeasureKind::kDramEff) &&
                       ms.load_slot >= 0;
  if (at_load) FitLoad(m);
  LoadFit& fit = load_fits_[m];
  RatioPool raw_judged, raw_baseline;
  const std::vector<NodeState>& nodes = fleet_.nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeState& n = nodes[i];
    const int ni = static_cast<int>(i);
    std::optional<NodeRatio> r = NodeRatioOf(ms, ni);
    // Where a canary node stands (baseline nodes are always compared).
    const bool baseline_node = n.role == Role::kBaseline;
    const Phase ph = baseline_node ? Phase::kJudged : fleet_.PhaseOf(ni, t);
    if (at_load && r && r->den > 0 && !n.excluded) {
      if (baseline_node) raw_baseline.Add(r->num, r->den);
      if (!baseline_node && ph == Phase::kJudged) raw_judged.Add(r->num, r->den);
    }
    if (r && at_load && fit.seen()) {
      // Read at the baseline's load: a node-second without its load is no
      // data for a latency compared at equal load; nor is one before the
      // fit has its first 30 baseline node-seconds (compared as read, those
      // seconds would mix two measures in one sum), nor one at a load no
      // baseline node ran at.
      const std::optional<double> load = LoadOf(ms, ni);
      const std::optional<double> factor = load ? fit.Factor(*load) : std::nullopt;
      if (load && fit.active() && !baseline_node && ph == Phase::kJudged) {
        fit.AddCanary(r->den, *load, factor.has_value());
      }
      if (factor) {
        r->num /= *factor;
      } else {
        r.reset();
      }
    }
    if (baseline_node) {
      if (!n.excluded && r) baseline.Add(r->num, r->den);
      continue;
    }
    std::optional<NodeRatio> v;
    if (r && r->den > 0 && !n.excluded) v = r;
    if (ms.decides) scratch_units_.push_back({ni + 1, v, ph});
    if (n.excluded || !r) continue;
    if (ph == Phase::kJudged) judged.Add(r->num, r->den);
    if (ph == Phase::kHistory) history.Add(r->num, r->den);
  }
  TickPools pools{judged, history, baseline, std::nullopt, std::nullopt};
  if (at_load && fit.seen()) {
    pools.raw_judged = raw_judged;
    pools.raw_baseline = raw_baseline;
  }
  return pools;
}

void Measures::FitLoad(std::size_t m) {
  const Measure& ms = measures_[m];
  LoadFit& fit = load_fits_[m];
  const std::vector<NodeState>& nodes = fleet_.nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeState& n = nodes[i];
    if (n.role != Role::kBaseline || n.excluded) continue;
    const int ni = static_cast<int>(i);
    const std::optional<NodeRatio> r = NodeRatioOf(ms, ni);
    const std::optional<double> load = LoadOf(ms, ni);
    if (r && load) fit.AddBaseline(r->num, r->den, *load);
  }
}

std::optional<double> Measures::LoadOf(const Measure& ms, int node) const {
  const std::optional<double> running = fleet_.NodeValue(node, ms.load_slot);
  const int gpus = fleet_.nodes()[static_cast<std::size_t>(node)].gpu_count;
  if (!running || !(*running >= 0) || gpus <= 0) return std::nullopt;
  return *running / gpus;
}

std::optional<Measures::NodeRatio> Measures::NodeRatioOf(const Measure& ms, int node) const {
  if (ms.kind == MeasureKind::kNodeRate && ms.node_slot >= 0) {
    const std::optional<double> inc = fleet_.NodeIncrease(node, ms.node_slot);
    if (!inc) return std::nullopt;
    const int gpus = fleet_.nodes()[static_cast<std::size_t>(node)].gpu_count;
    return NodeRatio{*inc, static_cast<double>(std::max(1, gpus))};
  }
  if (ms.kind == MeasureKind::kNodeGauge && ms.node_slot >= 0) {
    const std::optional<double> v = fleet_.NodeValue(node, ms.node_slot);
    if (!v) return std::nullopt;
    return NodeRatio{*v, 1};
  }
  if (ms.kind == MeasureKind::kNodeMean) {
    const std::optional<double> s = fleet_.NodeIncrease(node, ms.node_slot);
    const std::optional<double> c = fleet_.NodeIncrease(node, ms.node_slot2);
    if (!s || !c || !(*c > 0)) return std::nullopt;
    return NodeRatio{*s, *c};
  }
  if (ms.kind == MeasureKind::kDramEff) return DramEfficiencyOf(node);
  return std::nullopt;
}

// Useful work per unit of DRAM activity: tokens where the service reports
// them, tensor-pipe activity otherwise.
std::optional<Measures::NodeRatio> Measures::DramEfficiencyOf(int node) const {
  double dram = 0;
  double tensor = 0;
  int with = 0;
  for (int g : (*fleet_.catalog()->nodes)[static_cast<std::size_t>(node)].gpus) {
    const std::optional<double> d = fleet_.GpuValue(g, kDram);
    const std::optional<double> te = fleet_.GpuValue(g, kTensor);
    if (!d || !te) continue;
    dram += *d;
    tensor += *te;
    ++with;
  }
  if (with <= 0 || !(dram > 0)) return std::nullopt;
  const std::optional<double> tok = fleet_.NodeIncrease(node, fleet_.tokens_slot());
  return NodeRatio{tok ? *tok : tensor, dram};
}

// A GPU's work per joule this tick: tensor-pipe activity x SM clock (MHz)
// over power (W); no data without all three or without power.
std::optional<Measures::NodeRatio> Measures::WorkPerJouleOf(int gpu) const {
  const std::optional<double> tensor = fleet_.GpuValue(gpu, kTensor);
  const std::optional<double> clock = fleet_.GpuValue(gpu, kClock);
  const std::optional<double> power = fleet_.GpuValue(gpu, kPower);
  if (!tensor || !clock || !power || !(*power > 0)) return std::nullopt;
  return NodeRatio{*tensor * *clock, *power};
}

// Before the release a unit's sums go to its history; from the block origin
// (release + warm-up) on, each second with both arms is one observation.
void Measures::FeedSeconds(std::size_t m, int unit, std::int64_t t, std::optional<NodeRatio> judged,
                           std::optional<NodeRatio> history, std::optional<NodeRatio> baseline) {
  Comparison& cmp = ComparisonFor(m, unit);
  if (!baseline) return;
  if (time_.BeforeRelease(t)) {
    if (!history) return;
    cmp.history_cn += history->num;
    cmp.history_cd += history->den;
    cmp.history_bn += baseline->num;
    cmp.history_bd += baseline->den;
    cmp.history_blocks += 1;
    return;
  }
  if (t < time_.BlockOrigin() || !judged) return;
  const std::int64_t before = cmp.ratio.n();
  cmp.ratio.Add(judged->num, judged->den, baseline->num, baseline->den);
  if (cmp.ratio.n() == before) return;
  OnSecond(m, unit, t);
}

void Measures::OnSecond(std::size_t m, int unit, std::int64_t t) {
  Comparison& cmp = ComparisonFor(m, unit);
  // One GPU (or node) is noisier than the pool, and settles later after a
  // restart: a unit's own comparison waits three times as long.
  // Ratios of bursty activity (a server's counters and histograms, work per
  // joule, work per DRAM activity) are heavy-tailed at 1 s, and settle later
  // after a restart the judge may not see (no service series): they wait
  // min_service_seconds; a GPU gauge (a clock, power) min_seconds.
  const MeasureKind kind = measures_[m].kind;
  const bool ratio = IsNodeLevel(kind) || kind == MeasureKind::kGpuWork;
  const int base =
      ratio ? std::max(policy_.min_seconds, policy_.min_service_seconds) : policy_.min_seconds;
  const int needed = unit == 0 ? base : 3 * base;
  if (cmp.ratio.n() < needed || !cmp.ratio.LogRatio()) return;
  if (!measures_[m].decides && unit != 0) return;
  TakeDecision(m, unit, cmp, t);
}

// ---------------------------------------------------------------------------
// Blocks

void Measures::OnComparisonBlock(std::size_t m, int unit, const stats::Block& block, bool history) {
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
  const std::int64_t end = block.start_tick + static_cast<std::int64_t>(policy_.block_s) - 1;
  TakeDecision(m, unit, cmp, std::min(end, time_.last_tick.value_or(end)));
}

namespace {

// Intersects `b` into the running interval [lo, hi]; an intersection that
// empties keeps the latest interval.
void Intersect(double& lo, double& hi, stats::Bounds b) {
  lo = std::max(lo, b.lo);
  hi = std::min(hi, b.hi);
  if (lo > hi) {
    lo = b.lo;
    hi = b.hi;
  }
}

}  // namespace

// A failure ("worse") is decided on the interval at the comparison's share
// of alpha; a pass ("not worse", the whole canary only) on the interval at
// pass_alpha (docs/analysis-method.md, "Decision against a practical margin").
void Measures::TakeDecision(std::size_t m, int unit, Comparison& cmp, std::int64_t at) {
  auto interval = [&](double a) {
    return cmp.per_second ? cmp.ratio.Interval(a) : cmp.cs.Interval(a);
  };
  Intersect(cmp.lo, cmp.hi, interval(cmp.alpha));
  if (unit == 0) Intersect(cmp.pass_lo, cmp.pass_hi, interval(policy_.pass_alpha));
  const Measure& ms = measures_[m];
  if (!ms.decides || cmp.decision != stats::Decision::kUndecided) return;
  stats::Decision d = Decide(ms.better, stats::RelativeChange({cmp.lo, cmp.hi}), ms.margin);
  if (d == stats::Decision::kNotWorse) d = stats::Decision::kUndecided;
  if (d == stats::Decision::kUndecided && unit == 0 &&
      Decide(ms.better, stats::RelativeChange({cmp.pass_lo, cmp.pass_hi}), ms.margin) ==
          stats::Decision::kNotWorse) {
    d = stats::Decision::kNotWorse;
  }
  if (d == stats::Decision::kUndecided) return;
  cmp.decision = d;
  cmp.decided_at = at;
  // A without_service-only measure counts against the release only on a
  // canary without service metrics.
  if (d == stats::Decision::kWorse && !(ms.only_without_service && fleet_.service_seen())) {
    on_worse_(m, unit, *cmp.decided_at);
  }
}

void Measures::CloseHistory() {
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

void Measures::Flush() {
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
}

}  // namespace gpucanary::analysis::judge_internal
