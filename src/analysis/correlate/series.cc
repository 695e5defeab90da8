#include "analysis/correlate/series.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/stats/histogram_quantile.h"
#include "dcgm/fields.h"
#include "dcgm/throttle.h"
#include "vocab/service_measures.h"

namespace gpucanary::analysis::correlate {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A node's model server is taken for restarted when its service series are
// absent this many seconds in a row (a missed scrape or two is not a restart).
constexpr std::int64_t kRestartGapS = 3;

constexpr std::int64_t kNoSecond = std::numeric_limits<std::int64_t>::min();

std::vector<MetricDef> MakeMetrics() {
  return {
      // GPU hardware: what the mechanism is read from.
      {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_SM_CLOCK", "", Level::kGpu, Reduce::kMean, 0,
       Better::kHigher, true, 0.05, "MHz"},
      {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_USAGE", "", Level::kGpu, Reduce::kMean, 0,
       Better::kNeutral, true, 0.10, "W"},
      {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP", "", Level::kGpu, Reduce::kMean, 0,
       Better::kLower, false, 5.0, "C"},
      {"throttle:power_brake", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "", Level::kGpu,
       Reduce::kBitFraction, dcgm::kClockEventHwPowerBrake, Better::kLower, false, 0.2, "fraction"},
      {"throttle:thermal", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "", Level::kGpu,
       Reduce::kBitFraction, dcgm::kClockEventSwThermal | dcgm::kClockEventHwThermal,
       Better::kLower, false, 0.2, "fraction"},
      {"throttle:hw_slowdown", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "", Level::kGpu,
       Reduce::kBitFraction, dcgm::kClockEventHwSlowdown, Better::kLower, false, 0.2, "fraction"},
      {"throttle:sw_power_cap", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "", Level::kGpu,
       Reduce::kBitFraction, dcgm::kClockEventSwPowerCap, Better::kLower, false, 0.2, "fraction"},
      {"DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "", Level::kGpu, Reduce::kMean, 0,
       Better::kNeutral, true, 0.10, "ratio"},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "", Level::kGpu,
       Reduce::kMean, 0, Better::kNeutral, true, 0.10, "ratio"},
      {"DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY", "", Level::kGpu, Reduce::kMean, 0,
       Better::kHigher, true, 0.15, "ratio"},
      {"DCGM_FI_DEV_PCIE_LINK_WIDTH", "DCGM_FI_DEV_PCIE_LINK_WIDTH", "", Level::kGpu, Reduce::kMean,
       0, Better::kHigher, false, 1.0, "lanes"},
      {"DCGM_FI_DEV_PCIE_LINK_GEN", "DCGM_FI_DEV_PCIE_LINK_GEN", "", Level::kGpu, Reduce::kMean, 0,
       Better::kHigher, false, 0.5, "gen"},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "", Level::kGpu,
       Reduce::kRate, 0, Better::kLower, false, 0.5, "1/s"},
      {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERRORS", "", Level::kGpu,
       Reduce::kNonZeroFraction, 0, Better::kLower, false, 0.05, "fraction"},
      {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "", Level::kGpu,
       Reduce::kRate, 0, Better::kLower, false, 0.05, "1/s"},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "", Level::kGpu,
       Reduce::kRate, 0, Better::kLower, false, 0.01, "1/s"},
      // Service (per node). Tokens per second follow the load routed to the
      // node, so they are evidence, not a regression by themselves; the time
      // per output token and the p99 latency are what a slower release costs.
      {"vllm:generation_tokens_per_s", "vllm:generation_tokens_total", "", Level::kNode,
       Reduce::kRate, 0, Better::kNeutral, true, 0.05, "tokens/s"},
      {"vllm:time_per_output_token_seconds", "vllm:time_per_output_token_seconds_sum",
       "vllm:time_per_output_token_seconds_count", Level::kNode, Reduce::kRatio, 0, Better::kLower,
       true, 0.10, "s"},
      {"vllm:e2e_request_latency_seconds:p99", "vllm:e2e_request_latency_seconds", "", Level::kNode,
       Reduce::kP99, 0, Better::kLower, true, 0.20, "s"},
      // The running batch: the load a node's per-token latency is read at
      // (evidence only; release effects compare latencies at equal load).
      {"vllm:num_requests_running", "vllm:num_requests_running", "", Level::kNode, Reduce::kMean, 0,
       Better::kNeutral, true, 0.10, "requests"},
  };
}

// The samples a source is read from: its own name, and the same measure as
// the other inference servers expose it (vocab/service_measures.h) where it
// is in the measure's unit: vLLM >= 0.11's inter-token latency, SGLang's and
// TGI's histograms, every server's generated-token counter. The series keeps
// the vLLM name in correlate's output (docs/contracts.md §7). Triton's
// per-token and e2e latencies are ratios of microsecond counters: not read.
std::vector<std::string> SourceNames(std::string_view source) {
  struct Alias {
    std::string_view source;
    vocab::ServiceMeasure measure;
    vocab::SourceType type;
    std::string_view suffix;
  };
  using M = vocab::ServiceMeasure;
  using T = vocab::SourceType;
  static constexpr Alias kAliases[] = {
      {"vllm:generation_tokens_total", M::kGeneratedTokens, T::kCounter, ""},
      {"vllm:time_per_output_token_seconds_sum", M::kPerTokenLatency, T::kHistogram, "_sum"},
      {"vllm:time_per_output_token_seconds_count", M::kPerTokenLatency, T::kHistogram, "_count"},
      {"vllm:e2e_request_latency_seconds", M::kE2eLatency, T::kHistogram, ""},
      {"vllm:num_requests_running", M::kRunningRequests, T::kGauge, ""},
  };
  std::vector<std::string> names = {std::string(source)};
  for (const Alias& a : kAliases) {
    if (source != a.source) continue;
    for (const vocab::ServiceMetric& row : vocab::ServiceMetrics()) {
      if (row.measure != a.measure || row.type != a.type || row.scale != 1 ||
          !row.selector.empty()) {
        continue;
      }
      std::string name = std::string(row.metric) + std::string(a.suffix);
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(std::move(name));
      }
    }
  }
  return names;
}

struct Accumulator {
  std::vector<double> sum;
  std::vector<double> n;

  void Add(std::size_t b, double s, double count) {
    if (b >= sum.size()) {
      sum.resize(b + 1, 0);
      n.resize(b + 1, 0);
    }
    sum[b] += s;
    n[b] += count;
  }
};

// Everything BuildSeries keeps while it reads.
class Builder {
 public:
  Builder(Replay& replay, std::int64_t resolution_s, std::optional<std::int64_t> from_s,
          std::optional<std::int64_t> to_s)
      : replay_(replay), resolution_s_(resolution_s), from_s_(from_s), to_s_(to_s) {}

  Status Run() {
    Tick tick;
    while (true) {
      Result<bool> more = replay_.Next(tick);
      if (!more) return Status(more.error());
      if (!*more) break;
      if (from_s_ && tick.time_s < *from_s_) continue;
      if (to_s_ && tick.time_s >= *to_s_) break;
      if (tick.gpu_points.empty() && tick.node_points.empty() && tick.histograms.empty()) continue;
      OnTick(tick);
    }
    FlushHistograms();
    return Status::Ok();
  }

  FleetSeries Finish(std::int64_t warmup_s, std::int64_t max_buckets);

 private:
  void Refresh();
  void OnTick(const Tick& tick);
  void Start(const Tick& tick);
  void Add(std::vector<Accumulator>& acc, std::vector<std::int64_t>& last_s, const Point& p, int d,
           int role, std::size_t b, std::int64_t time_s) const;
  void AddMissingXids(const Tick& tick, std::size_t b);
  void AddGpuPoints(const Tick& tick, std::size_t b);
  void AddNodePoints(const Tick& tick, std::size_t b);
  void NoteService(std::size_t node, std::int64_t time_s);
  void NoteTokens(std::size_t node, double value, std::int64_t time_s);
  void AddHistograms(const Tick& tick, std::size_t b);
  void FlushHistograms();
  std::size_t BucketOf(std::int64_t t) const {
    return static_cast<std::size_t>((t - start_s_) / resolution_s_);
  }

  Replay& replay_;
  std::int64_t resolution_s_;
  std::optional<std::int64_t> from_s_;
  std::optional<std::int64_t> to_s_;
  bool started_ = false;
  std::int64_t start_s_ = 0;
  std::int64_t first_tick_ = 0;
  std::int64_t last_tick_ = 0;

  // Replay metric id -> (def index, role: 0 numerator / value, 1 denominator).
  std::vector<std::vector<std::pair<int, int>>> by_metric_;
  std::size_t metrics_seen_ = 0;

  // [entity][def] accumulators, and each kRate def's last sample second
  // (min: none yet).
  std::vector<std::vector<Accumulator>> gpu_acc_;
  std::vector<std::vector<Accumulator>> node_acc_;
  std::vector<std::vector<std::int64_t>> gpu_last_s_;
  std::vector<std::vector<std::int64_t>> node_last_s_;
  // Per node: the open bucket of each P99 def's pooled bucket increases.
  struct OpenHistogram {
    std::size_t bucket = 0;
    std::map<double, double> counts;  // le -> increase (non-cumulative sum of cumulative)
    bool open = false;
  };
  std::vector<std::map<int, OpenHistogram>> open_hist_;
  std::vector<std::int64_t> last_service_s_;  // per node; min: never
  std::vector<std::int64_t> prev_service_s_;  // per node: the sample before the last; min: none
  std::vector<std::int64_t> min_gap_s_;       // per node: its scrape interval, as seen
  std::vector<double> last_tokens_;           // per node; NaN: none
  std::vector<std::vector<Restart>> restarts_;
  std::vector<std::map<std::uint32_t, int>> xid_counts_;
  int tokens_def_ = -1;
  int xid_def_ = -1;
};

void Builder::Refresh() {
  const std::vector<MetricDef>& defs = Metrics();
  const std::vector<MetricInfo>& metrics = replay_.metrics();
  if (metrics.size() != metrics_seen_) {
    by_metric_.assign(metrics.size(), {});
    for (std::size_t d = 0; d < defs.size(); ++d) {
      for (const int part : {0, 1}) {
        const std::string_view source = part == 0 ? defs[d].source : defs[d].source2;
        if (source.empty()) continue;
        for (const std::string_view name : SourceNames(source)) {
          const int a = replay_.MetricId(name);
          if (a >= 0)
            by_metric_[static_cast<std::size_t>(a)].emplace_back(static_cast<int>(d), part);
        }
      }
    }
    metrics_seen_ = metrics.size();
  }
  const std::size_t ng = replay_.gpus().size();
  const std::size_t nn = replay_.nodes().size();
  if (gpu_acc_.size() < ng) {
    gpu_acc_.resize(ng, std::vector<Accumulator>(defs.size()));
    gpu_last_s_.resize(ng, std::vector<std::int64_t>(defs.size(), kNoSecond));
    xid_counts_.resize(ng);
  }
  if (node_acc_.size() < nn) {
    node_acc_.resize(nn, std::vector<Accumulator>(defs.size()));
    node_last_s_.resize(nn, std::vector<std::int64_t>(defs.size(), kNoSecond));
    open_hist_.resize(nn);
    last_service_s_.resize(nn, std::numeric_limits<std::int64_t>::min());
    prev_service_s_.resize(nn, std::numeric_limits<std::int64_t>::min());
    min_gap_s_.resize(nn, std::int64_t{1} << 30);  // "none seen yet": far above any interval
    last_tokens_.resize(nn, kNaN);
    restarts_.resize(nn);
  }
}

void Builder::OnTick(const Tick& tick) {
  if (!started_) Start(tick);
  last_tick_ = tick.time_s;
  Refresh();
  const std::size_t b = BucketOf(tick.time_s);
  AddMissingXids(tick, b);
  AddGpuPoints(tick, b);
  AddNodePoints(tick, b);
  AddHistograms(tick, b);
}

// The first tick: the buckets' origin (a multiple of the resolution).
void Builder::Start(const Tick& tick) {
  started_ = true;
  const std::int64_t origin = from_s_.value_or(tick.time_s);
  start_s_ = origin - (((origin % resolution_s_) + resolution_s_) % resolution_s_);
  first_tick_ = tick.time_s;
  tokens_def_ = MetricIndex("vllm:generation_tokens_per_s");
  xid_def_ = MetricIndex("DCGM_FI_DEV_XID_ERRORS");
}

// Point `p` (at `time_s`) into bucket `b` of def `d`'s accumulator, reduced
// as the def says (`role`: kRatio's numerator 0 or denominator 1). A rate
// is the increases over the seconds they span (`last_s`: the def's previous
// sample), so that it is per second at any scrape interval.
void Builder::Add(std::vector<Accumulator>& acc, std::vector<std::int64_t>& last_s, const Point& p,
                  int d, int role, std::size_t b, std::int64_t time_s) const {
  const MetricDef& def = Metrics()[static_cast<std::size_t>(d)];
  switch (def.reduce) {
    case Reduce::kMean:
      acc[static_cast<std::size_t>(d)].Add(b, p.value, 1);
      break;
    case Reduce::kRate: {
      std::int64_t& last = last_s[static_cast<std::size_t>(d)];
      if (p.increase && last != kNoSecond && time_s > last) {
        acc[static_cast<std::size_t>(d)].Add(b, *p.increase, static_cast<double>(time_s - last));
      }
      last = time_s;
      break;
    }
    case Reduce::kBitFraction: {
      const auto bits = static_cast<std::uint64_t>(std::max(0.0, p.value));
      acc[static_cast<std::size_t>(d)].Add(b, (bits & def.bits) != 0 ? 1 : 0, 1);
      break;
    }
    case Reduce::kNonZeroFraction:
      acc[static_cast<std::size_t>(d)].Add(b, p.value != 0 ? 1 : 0, 1);
      break;
    case Reduce::kRatio:
      if (p.increase) {
        acc[static_cast<std::size_t>(d)].Add(b, role == 0 ? *p.increase : 0,
                                             role == 1 ? *p.increase : 0);
      }
      break;
    case Reduce::kP99:
      break;
  }
}

// dcgm-exporter leaves the last-XID field blank until a GPU's first XID:
// a GPU that reports other fields this second but no XID has had none
// (counted as 0, not as missing; a GPU with no field at all stays missing).
void Builder::AddMissingXids(const Tick& tick, std::size_t b) {
  if (xid_def_ < 0) return;
  const int xid_metric = replay_.MetricId(Metrics()[static_cast<std::size_t>(xid_def_)].source);
  std::int32_t last_gpu = -1;
  for (const Point& p : tick.gpu_points) {
    if (p.entity == last_gpu) continue;
    last_gpu = p.entity;
    if (xid_metric < 0 || tick.FindGpu(p.entity, xid_metric) == nullptr) {
      gpu_acc_[static_cast<std::size_t>(p.entity)][static_cast<std::size_t>(xid_def_)].Add(b, 0, 1);
    }
  }
}

void Builder::AddGpuPoints(const Tick& tick, std::size_t b) {
  const std::vector<MetricDef>& defs = Metrics();
  for (const Point& p : tick.gpu_points) {
    if (static_cast<std::size_t>(p.metric) >= by_metric_.size()) continue;
    for (const auto& [d, role] : by_metric_[static_cast<std::size_t>(p.metric)]) {
      if (defs[static_cast<std::size_t>(d)].level != Level::kGpu) continue;
      Add(gpu_acc_[static_cast<std::size_t>(p.entity)],
          gpu_last_s_[static_cast<std::size_t>(p.entity)], p, d, role, b, tick.time_s);
      if (defs[static_cast<std::size_t>(d)].reduce == Reduce::kNonZeroFraction && p.value > 0) {
        ++xid_counts_[static_cast<std::size_t>(p.entity)][static_cast<std::uint32_t>(p.value)];
      }
    }
  }
}

// Node-level points: the service. A gap in them, or a counter that went
// back, is a restart of the node's model server.
void Builder::AddNodePoints(const Tick& tick, std::size_t b) {
  const std::vector<MetricDef>& defs = Metrics();
  std::int32_t last_node = -1;
  for (const Point& p : tick.node_points) {
    const auto node = static_cast<std::size_t>(p.entity);
    if (p.entity != last_node) {
      last_node = p.entity;
      NoteService(node, tick.time_s);
    }
    if (static_cast<std::size_t>(p.metric) >= by_metric_.size()) continue;
    for (const auto& [d, role] : by_metric_[static_cast<std::size_t>(p.metric)]) {
      if (defs[static_cast<std::size_t>(d)].level != Level::kNode) continue;
      Add(node_acc_[node], node_last_s_[node], p, d, role, b, tick.time_s);
      if (d == tokens_def_) NoteTokens(node, p.value, tick.time_s);
    }
  }
}

// The node served at `time_s`: a gap since it last did is a restart.
void Builder::NoteService(std::size_t node, std::int64_t time_s) {
  const std::int64_t prev = last_service_s_[node];
  if (prev != std::numeric_limits<std::int64_t>::min()) {
    const std::int64_t gap = time_s - prev;
    // Relative to the node's scrape interval (the shortest gap seen), so
    // that a 15 s Prometheus's every scrape is not a restart.
    if (gap > std::max<std::int64_t>(kRestartGapS, 5 * min_gap_s_[node] / 2)) {
      restarts_[node].push_back({prev + 1, time_s});
    }
    min_gap_s_[node] = std::min(min_gap_s_[node], gap);
  }
  prev_service_s_[node] = prev;
  last_service_s_[node] = time_s;
}

// The node's generated-tokens counter read `value`: one that went back is a
// restart, somewhere since the node's previous service sample (a 15 s
// scrape can miss a 28 s restart's gap, not its reset).
void Builder::NoteTokens(std::size_t node, double value, std::int64_t time_s) {
  const double prev = last_tokens_[node];
  if (!std::isnan(prev) && value < prev) {
    std::vector<Restart>& r = restarts_[node];
    const std::int64_t since = prev_service_s_[node];
    const std::int64_t from =
        since == std::numeric_limits<std::int64_t>::min() ? time_s : std::min(since + 1, time_s);
    if (r.empty() || r.back().to_s < time_s) r.push_back({from, time_s});
  }
  last_tokens_[node] = value;
}

// Service histograms: each node's bucket increases are pooled over a bucket
// of time, and the bucket's p99 is taken when the next one opens.
void Builder::AddHistograms(const Tick& tick, std::size_t b) {
  for (const HistogramPoint& h : tick.histograms) {
    if (h.gpu >= 0 || static_cast<std::size_t>(h.metric) >= by_metric_.size()) continue;
    for (const auto& [d, role] : by_metric_[static_cast<std::size_t>(h.metric)]) {
      if (Metrics()[static_cast<std::size_t>(d)].reduce != Reduce::kP99) continue;
      OpenHistogram& open = open_hist_[static_cast<std::size_t>(h.node)][d];
      if (open.open && open.bucket != b) {
        if (std::optional<double> q = stats::BucketQuantile(open.counts, 0.99)) {
          node_acc_[static_cast<std::size_t>(h.node)][static_cast<std::size_t>(d)].Add(open.bucket,
                                                                                       *q, 1);
        }
        open.counts.clear();
        open.open = false;
      }
      bool complete = true;
      for (const Bucket& bk : tick.BucketsOf(h)) complete &= bk.increase.has_value();
      if (!complete) continue;
      for (const Bucket& bk : tick.BucketsOf(h)) open.counts[bk.le] += *bk.increase;
      open.bucket = b;
      open.open = true;
    }
  }
}

void Builder::FlushHistograms() {
  for (std::size_t node = 0; node < open_hist_.size(); ++node) {
    for (auto& [d, open] : open_hist_[node]) {
      if (!open.open) continue;
      if (std::optional<double> q = stats::BucketQuantile(open.counts, 0.99)) {
        node_acc_[node][static_cast<std::size_t>(d)].Add(open.bucket, *q, 1);
      }
      open.open = false;
    }
  }
}

// Sums `factor` adjacent buckets into one (exact for means, rates and
// fractions; a mean of the p99s for kP99).
void Coarsen(Accumulator& acc, std::size_t factor) {
  if (factor <= 1) return;
  const std::size_t n = (acc.sum.size() + factor - 1) / factor;
  std::vector<double> sum(n, 0);
  std::vector<double> cnt(n, 0);
  for (std::size_t i = 0; i < acc.sum.size(); ++i) {
    sum[i / factor] += acc.sum[i];
    cnt[i / factor] += acc.n[i];
  }
  acc.sum = std::move(sum);
  acc.n = std::move(cnt);
}

std::vector<double> Values(const Accumulator& acc, std::size_t buckets) {
  std::vector<double> v(buckets, kNaN);
  for (std::size_t i = 0; i < acc.sum.size() && i < buckets; ++i) {
    if (acc.n[i] > 0) v[i] = acc.sum[i] / acc.n[i];
  }
  return v;
}

// Each entity's series of `level`, coarsened by `factor` into `buckets`.
void CollectSeries(std::vector<std::vector<Accumulator>>& acc, std::size_t factor,
                   std::size_t buckets, Level level,
                   std::vector<std::vector<EntitySeries>>& series) {
  const std::vector<MetricDef>& defs = Metrics();
  series.resize(acc.size());
  for (std::size_t e = 0; e < acc.size(); ++e) {
    for (std::size_t d = 0; d < defs.size(); ++d) {
      if (defs[d].level != level || acc[e][d].sum.empty()) continue;
      Coarsen(acc[e][d], factor);
      series[e].push_back({static_cast<int>(d), Values(acc[e][d], buckets)});
    }
  }
}

bool KeptThroughRestarts(std::string_view name) {
  return name == "DCGM_FI_DEV_PCIE_LINK_WIDTH" || name == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" ||
         name == "DCGM_FI_DEV_XID_ERRORS" || name == "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL" ||
         name == "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL";
}

// Masks each restart and its warm-up on the node and its GPUs (but the
// GPUs' link width and error counts: KeptThroughRestarts).
void MaskRestarts(std::int64_t warmup_s, FleetSeries& out) {
  const auto mask = [&](std::vector<EntitySeries>& series, std::size_t b0, std::size_t b1) {
    for (EntitySeries& s : series) {
      // A GPU's link width and error counts are its state, not its work: a
      // link that trains down at the restart is the event, not warm-up.
      if (KeptThroughRestarts(Metrics()[static_cast<std::size_t>(s.metric)].name)) continue;
      for (std::size_t b = b0; b <= b1 && b < s.values.size(); ++b) s.values[b] = kNaN;
    }
  };
  for (std::size_t node = 0; node < out.restarts.size() && node < out.nodes.size(); ++node) {
    for (const Restart& r : out.restarts[node]) {
      const std::size_t b0 =
          static_cast<std::size_t>(std::max<std::int64_t>(0, r.from_s - out.start_s)) /
          static_cast<std::size_t>(out.resolution_s);
      const std::size_t b1 =
          static_cast<std::size_t>(std::max<std::int64_t>(0, r.to_s + warmup_s - 1 - out.start_s)) /
          static_cast<std::size_t>(out.resolution_s);
      mask(out.node_series[node], b0, b1);
      for (int g : out.nodes[node].gpus) mask(out.gpu_series[static_cast<std::size_t>(g)], b0, b1);
    }
  }
}

// Per GPU, the most frequent non-zero XID code counted (0: none).
std::vector<std::uint32_t> MostFrequentXids(
    const std::vector<std::map<std::uint32_t, int>>& xid_counts, std::size_t gpus) {
  std::vector<std::uint32_t> codes(gpus, 0);
  for (std::size_t g = 0; g < xid_counts.size() && g < gpus; ++g) {
    int best = 0;
    for (const auto& [code, count] : xid_counts[g]) {
      if (count > best) {
        best = count;
        codes[g] = code;
      }
    }
  }
  return codes;
}

FleetSeries Builder::Finish(std::int64_t warmup_s, std::int64_t max_buckets) {
  FleetSeries out;
  out.gpus = replay_.gpus();
  out.nodes = replay_.nodes();
  if (!started_) return out;
  Refresh();
  std::size_t factor = 1;
  const std::size_t raw = BucketOf(last_tick_) + 1;
  if (max_buckets > 0 && raw > static_cast<std::size_t>(max_buckets)) {
    factor =
        (raw + static_cast<std::size_t>(max_buckets) - 1) / static_cast<std::size_t>(max_buckets);
  }
  out.start_s = start_s_;
  out.resolution_s = resolution_s_ * static_cast<std::int64_t>(factor);
  out.buckets = (raw + factor - 1) / factor;
  out.first_tick = first_tick_;
  out.last_tick = last_tick_;
  out.restarts = restarts_;
  CollectSeries(gpu_acc_, factor, out.buckets, Level::kGpu, out.gpu_series);
  CollectSeries(node_acc_, factor, out.buckets, Level::kNode, out.node_series);
  MaskRestarts(warmup_s, out);
  out.xid_codes = MostFrequentXids(xid_counts_, out.gpus.size());
  return out;
}

}  // namespace

const std::vector<MetricDef>& Metrics() {
  static const std::vector<MetricDef> kMetrics = MakeMetrics();
  return kMetrics;
}

int MetricIndex(std::string_view name) {
  const std::vector<MetricDef>& defs = Metrics();
  for (std::size_t i = 0; i < defs.size(); ++i) {
    if (defs[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::string> CorrelateInputNames() {
  std::set<std::string> names;
  const auto add = [&](std::string_view name) {
    if (name.empty()) return;
    for (std::string& n : SourceNames(name)) names.insert(std::move(n));
    if (const dcgm::FieldInfo* f = dcgm::FindFieldByName(name)) {
      names.emplace(f->name);
      if (!f->dcgm46_name.empty()) names.emplace(f->dcgm46_name);
    }
  };
  for (const MetricDef& d : Metrics()) {
    if (d.reduce == Reduce::kP99) {
      for (const std::string& family : SourceNames(d.source)) names.insert(family + "_bucket");
    } else {
      add(d.source);
      add(d.source2);
    }
  }
  return {names.begin(), names.end()};
}

Result<FleetSeries> BuildSeries(Replay& replay, std::int64_t resolution_s,
                                std::optional<std::int64_t> from_s,
                                std::optional<std::int64_t> to_s, std::int64_t warmup_s,
                                std::int64_t max_buckets) {
  const bool automatic = resolution_s == 0;
  std::int64_t base_s = automatic ? 10 : resolution_s;
  // A known range picks the automatic width up front, so that a day of a
  // thousand GPUs is never held at 10 s (8,640 buckets per series) first.
  if (automatic && from_s && to_s && *to_s > *from_s && max_buckets > 0) {
    const std::int64_t range = *to_s - *from_s;
    const std::int64_t tens = (range + 10 * max_buckets - 1) / (10 * max_buckets);
    base_s = 10 * std::max<std::int64_t>(1, tens);
  }
  Builder builder(replay, base_s, from_s, to_s);
  GC_RETURN_IF_ERROR(builder.Run());
  return builder.Finish(warmup_s, automatic ? max_buckets : 0);
}

}  // namespace gpucanary::analysis::correlate
