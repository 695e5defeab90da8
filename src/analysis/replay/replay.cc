#include "analysis/replay/replay.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

#include "analysis/replay/replay_source.h"
#include "core/string_map.h"
#include "dcgm/fields.h"
#include "model/matcher.h"
#include "telemetry/gpu_snapshot.h"
#include "vocab/service_measures.h"

namespace gpucanary::analysis {
namespace {

enum class SeriesKind : std::uint8_t { kGauge, kCounter, kBucket };

struct Series {
  std::uint32_t cell = 0;
  SeriesKind kind = SeriesKind::kGauge;
  bool has_previous = false;
  double previous = 0;
  double le = 0;  // kBucket
  // The tick being built: the series' last value in it and its summed increase.
  std::int64_t tick = kNoTick;
  double tick_value = 0;
  double tick_increase = 0;
  bool tick_increase_known = true;
};

// One (GPU or node, metric) pair: a point, or a histogram, per tick.
struct Cell {
  bool node_level = false;
  std::int32_t entity = 0;  // GPU or node index
  std::int32_t node = 0;
  std::int32_t metric = 0;
  std::int64_t tick = kNoTick;  // last tick that has a point / histogram for it
  std::uint32_t index = 0;      // its position in that tick
};

struct BucketEntry {
  std::uint32_t histogram = 0;  // index in Tick::histograms
  Bucket bucket;
};

template <typename T>
const T* FindSorted(const std::vector<T>& v, std::int32_t a, std::int32_t b) {
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(a, b), [](const T& p, auto key) {
    return std::make_pair(p.entity, p.metric) < key;
  });
  return it != v.end() && it->entity == a && it->metric == b ? &*it : nullptr;
}

double ParseLe(std::string_view text) {
  if (text == "+Inf" || text == "Inf" || text == "inf")
    return std::numeric_limits<double>::infinity();
  double v = std::numeric_limits<double>::quiet_NaN();
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

}  // namespace

std::string_view RoleName(Role role) { return role == Role::kCanary ? "canary" : "baseline"; }

const Point* Tick::FindGpu(std::int32_t gpu, std::int32_t metric) const {
  return FindSorted(gpu_points, gpu, metric);
}
const Point* Tick::FindNode(std::int32_t node, std::int32_t metric) const {
  return FindSorted(node_points, node, metric);
}
const HistogramPoint* Tick::FindHistogram(std::int32_t node, std::int32_t metric) const {
  for (const HistogramPoint& h : histograms) {
    if (h.node == node && h.gpu < 0 && h.metric == metric) return &h;
  }
  return nullptr;
}

void Tick::Clear() {
  time_s = 0;
  gpu_points.clear();
  node_points.clear();
  histograms.clear();
  buckets.clear();
  gpus.clear();
  nodes.clear();
}

class Replay::Impl final : public SeriesSink {
 public:
  Impl(std::vector<ReplayInput> inputs, const ReplayOptions& options)
      : inputs_(std::move(inputs)), options_(options) {}

  Status OpenSources(const Replay::SourceFactory& make);
  Result<bool> Next(Tick& tick);

  Result<std::uint32_t> AddSeries(int input, const expfmt::SampleView& sample,
                                  std::string_view family, model::MetricType type) override;
  double Observe(std::uint32_t series, double value) override;
  ReplayStats& mutable_stats() override { return stats_; }

  std::vector<GpuInfo> gpus_;
  std::vector<NodeInfo> nodes_;
  std::vector<MetricInfo> metrics_;
  StringMap<int> gpu_ids_;
  StringMap<int> node_ids_;
  StringMap<int> metric_ids_;
  ReplayStats stats_;
  int out_of_order_input_ = -1;

 private:
  std::string Owner(int input) const {
    return std::string(RoleName(inputs_[static_cast<std::size_t>(input)].role)) + " (" +
           inputs_[static_cast<std::size_t>(input)].path + ")";
  }
  Result<int> InternNode(int input, std::string_view host, std::string_view what);
  Result<int> InternGpu(int input, std::string_view host, std::string_view gpu,
                        const expfmt::SampleView& sample);
  int InternMetric(std::string_view name, MetricKind kind);
  std::uint32_t InternCell(bool node_level, std::int32_t entity, std::int32_t node,
                           std::int32_t metric);
  void Emit(std::int64_t t, Tick& tick);
  void Finalize(std::int64_t t, Tick& tick);
  void FinalizeBuckets(Tick& tick);

  std::vector<ReplayInput> inputs_;
  ReplayOptions options_;
  std::vector<std::unique_ptr<TickSource>> sources_;
  std::vector<Series> series_;
  std::vector<Cell> cells_;
  std::unordered_map<std::uint64_t, std::uint32_t> cell_ids_;
  std::vector<std::uint32_t> touched_;
  std::vector<BucketEntry> bucket_scratch_;
  std::int64_t next_tick_ = kNoTick;
  Status error_;
};

Status Replay::Impl::OpenSources(const Replay::SourceFactory& make) {
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    Result<std::unique_ptr<TickSource>> source =
        make ? make(inputs_[i], static_cast<int>(i), *this)
             : Result<std::unique_ptr<TickSource>>(
                   ReplaySource::Open(inputs_[i], static_cast<int>(i), options_, *this));
    if (!source) return source.error();
    sources_.push_back(std::move(*source));
  }
  return Status::Ok();
}

int Replay::Impl::InternMetric(std::string_view name, MetricKind kind) {
  if (auto it = metric_ids_.find(name); it != metric_ids_.end()) return it->second;
  const int id = static_cast<int>(metrics_.size());
  metrics_.push_back(MetricInfo{std::string(name), kind});
  metric_ids_.emplace(std::string(name), id);
  return id;
}

std::uint32_t Replay::Impl::InternCell(bool node_level, std::int32_t entity, std::int32_t node,
                                       std::int32_t metric) {
  const std::uint64_t key = (static_cast<std::uint64_t>(node_level) << 63) |
                            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(entity)) << 31) |
                            static_cast<std::uint32_t>(metric);
  auto [it, inserted] = cell_ids_.emplace(key, static_cast<std::uint32_t>(cells_.size()));
  if (inserted) cells_.push_back(Cell{node_level, entity, node, metric, kNoTick, 0});
  return it->second;
}

Result<int> Replay::Impl::InternNode(int input, std::string_view host, std::string_view what) {
  if (auto it = node_ids_.find(host); it != node_ids_.end()) {
    const NodeInfo& node = nodes_[static_cast<std::size_t>(it->second)];
    // One arm may read a host through several inputs (the live canary reads
    // a node's DCGM series by its Hostname label and its server's by the
    // scrape's instance); a host in both arms is an error.
    if (node.input != input && node.role != inputs_[static_cast<std::size_t>(input)].role) {
      return Error(StatusCode::kInvalidArgument, std::string(what) + " is in both " +
                                                     Owner(node.input) + " and " + Owner(input) +
                                                     "; each host must come from one recording");
    }
    return it->second;
  }
  const int id = static_cast<int>(nodes_.size());
  nodes_.push_back(
      NodeInfo{std::string(host), inputs_[static_cast<std::size_t>(input)].role, input, {}});
  node_ids_.emplace(std::string(host), id);
  return id;
}

Result<int> Replay::Impl::InternGpu(int input, std::string_view host, std::string_view gpu,
                                    const expfmt::SampleView& sample) {
  std::string key = std::string(host) + "/" + std::string(gpu);
  int id = 0;
  if (auto it = gpu_ids_.find(key); it != gpu_ids_.end()) {
    id = it->second;
    const int owner = gpus_[static_cast<std::size_t>(id)].input;
    if (owner != input) {
      return Error(StatusCode::kInvalidArgument,
                   "GPU " + key + " is in both " + Owner(owner) + " and " + Owner(input));
    }
  } else {
    Result<int> node = InternNode(input, host, "GPU " + key);
    if (!node) return Error(node.error());
    id = static_cast<int>(gpus_.size());
    GpuInfo info;
    info.key = key;
    info.host = std::string(host);
    info.gpu = std::string(gpu);
    info.role = inputs_[static_cast<std::size_t>(input)].role;
    info.input = input;
    info.node = *node;
    gpus_.push_back(std::move(info));
    nodes_[static_cast<std::size_t>(*node)].gpus.push_back(id);
    gpu_ids_.emplace(std::move(key), id);
  }
  // Identity labels: the first series that carries each one fills it.
  GpuInfo& info = gpus_[static_cast<std::size_t>(id)];
  auto fill = [&sample](std::string& field, std::string_view label) {
    if (!field.empty()) return;
    if (auto v = sample.Label(label); v && !v->empty()) field = std::string(*v);
  };
  fill(info.model_name, "modelName");
  fill(info.driver, "DCGM_FI_DRIVER_VERSION");
  fill(info.driver, "driver_version");
  fill(info.uuid, "UUID");
  fill(info.uuid, "uuid");
  fill(info.pci_bus_id, "pci_bus_id");
  return id;
}

Result<std::uint32_t> Replay::Impl::AddSeries(int input, const expfmt::SampleView& sample,
                                              std::string_view family, model::MetricType type) {
  using model::MetricType;
  const std::string_view name = sample.name;
  const bool histogram = type == MetricType::kHistogram || type == MetricType::kGaugeHistogram;
  const bool bucket = histogram && name.ends_with("_bucket");
  if ((name.ends_with("_created") && type != MetricType::kGauge && type != MetricType::kUnknown) ||
      (bucket && type == MetricType::kGaugeHistogram)) {
    return kIgnoredSeries;
  }
  // The entity: a GPU, or the node for series without a `gpu` label.
  std::int32_t gpu = -1;
  std::int32_t node = 0;
  const std::optional<std::string_view> gpu_label = sample.Label("gpu");
  if (gpu_label && !gpu_label->empty()) {
    Result<int> id = InternGpu(input, telemetry::HostOf(sample), *gpu_label, sample);
    if (!id) return Error(id.error());
    gpu = *id;
    node = gpus_[static_cast<std::size_t>(gpu)].node;
  } else {
    std::string_view host = telemetry::HostOf(sample);
    if (host == "-") {
      if (auto instance = sample.Label("instance"); instance && !instance->empty()) {
        host = model::InstanceHost(*instance);
      }
    }
    Result<int> id = InternNode(input, host, "node " + std::string(host));
    if (!id) return Error(id.error());
    node = *id;
  }
  Series series;
  int metric = 0;
  if (bucket) {
    metric = InternMetric(family, MetricKind::kHistogram);
    series.kind = SeriesKind::kBucket;
    series.le = ParseLe(sample.Label("le").value_or(""));
    if (std::isnan(series.le)) return kIgnoredSeries;  // the reader rejects these already
  } else {
    const std::string_view canonical = dcgm::CanonicalFieldName(name);
    const dcgm::FieldInfo* field = dcgm::FindFieldByName(canonical);
    const bool counter = (field != nullptr && field->kind == dcgm::ValueKind::kCounter) ||
                         type == MetricType::kCounter || name.ends_with("_total") ||
                         vocab::IsServiceCounter(name) ||
                         ((type == MetricType::kHistogram || type == MetricType::kSummary) &&
                          (name.ends_with("_count") || name.ends_with("_sum")));
    // A sample a measure row selects by a label (TensorRT-LLM's
    // request_type="waiting") is its own metric, `name{label="value"}`.
    std::optional<std::string> selected;
    if (gpu < 0) {
      selected = vocab::SelectedSampleName(
          name, [&](std::string_view label) { return sample.Label(label); });
    }
    metric = InternMetric(selected ? std::string_view(*selected) : canonical,
                          counter ? MetricKind::kCounter : MetricKind::kGauge);
    // The first series of a metric decides its kind for every input.
    series.kind = metrics_[static_cast<std::size_t>(metric)].kind == MetricKind::kCounter
                      ? SeriesKind::kCounter
                      : SeriesKind::kGauge;
  }
  const bool node_level = gpu < 0;
  series.cell = InternCell(node_level, node_level ? node : gpu, node, metric);
  series_.push_back(series);
  ++stats_.series;
  return static_cast<std::uint32_t>(series_.size() - 1);
}

double Replay::Impl::Observe(std::uint32_t index, double value) {
  Series& s = series_[index];
  if (s.kind == SeriesKind::kGauge) return std::numeric_limits<double>::quiet_NaN();
  // Prometheus's counter reset rule (promql/functions.go, extrapolatedRate):
  // "if the value decreases, a counter reset happened" and the increase since
  // the reset is the new value itself.
  double increase = std::numeric_limits<double>::quiet_NaN();
  if (s.has_previous) increase = value >= s.previous ? value - s.previous : value;
  s.previous = value;
  s.has_previous = true;
  return increase;
}

Result<bool> Replay::Impl::Next(Tick& tick) {
  if (!error_.ok()) return Error(error_);
  tick.Clear();
  const std::int64_t window = std::max(0, options_.reorder_window_s);
  for (;;) {
    std::int64_t t = kNoTick;
    for (auto& source : sources_) {
      if (!source->pending().empty()) {
        const std::int64_t front = source->pending().front().tick;
        if (t == kNoTick || front < t) t = front;
      }
    }
    // A source may still hold samples of tick t until it has read past
    // t + window (or ended); read the one that lags, one chunk at a time.
    TickSource* lagging = nullptr;
    int lagging_input = 0;
    for (auto& source : sources_) {
      if (!source->eof() &&
          (t == kNoTick || source->max_tick() == kNoTick || source->max_tick() < t + 1 + window)) {
        lagging = source.get();
        break;
      }
      ++lagging_input;
    }
    if (lagging != nullptr) {
      if (Status st = lagging->ReadChunk(); !st.ok()) {
        if (lagging->out_of_order()) out_of_order_input_ = lagging_input;
        error_ = st;
        return Error(std::move(st));
      }
      if (lagging->stalled()) return false;  // a live source: nothing newer yet
      continue;
    }
    if (t == kNoTick) return false;
    ++stats_.ticks;
    if (next_tick_ != kNoTick && next_tick_ < t) {
      tick.time_s = next_tick_++;  // a second without any sample: an empty tick
      return true;
    }
    Emit(t, tick);
    next_tick_ = t + 1;
    return true;
  }
}

void Replay::Impl::Emit(std::int64_t t, Tick& tick) {
  touched_.clear();
  for (auto& source : sources_) {
    auto& pending = source->pending();
    if (pending.empty() || pending.front().tick != t) continue;
    // In file order, which is time order within each series (the reader checks it).
    for (const PendingSample& p : pending.front().samples) {
      Series& s = series_[p.series];
      if (s.tick != t) {
        s.tick = t;
        s.tick_increase = 0;
        s.tick_increase_known = true;
        touched_.push_back(p.series);
      }
      s.tick_value = p.value;
      if (s.kind != SeriesKind::kGauge) {
        if (std::isnan(p.increase)) {
          s.tick_increase_known = false;
        } else {
          s.tick_increase += p.increase;
        }
      }
    }
    source->Recycle(std::move(pending.front().samples));
    pending.pop_front();
  }
  Finalize(t, tick);
}

void Replay::Impl::Finalize(std::int64_t t, Tick& tick) {
  tick.time_s = t;
  bucket_scratch_.clear();
  for (const std::uint32_t index : touched_) {
    const Series& s = series_[index];
    Cell& cell = cells_[s.cell];
    std::optional<double> increase;
    if (s.kind != SeriesKind::kGauge && s.tick_increase_known) increase = s.tick_increase;
    if (s.kind == SeriesKind::kBucket) {
      if (cell.tick != t) {
        cell.tick = t;
        cell.index = static_cast<std::uint32_t>(tick.histograms.size());
        tick.histograms.push_back(
            HistogramPoint{cell.node, cell.node_level ? -1 : cell.entity, cell.metric, 0, 0});
      }
      bucket_scratch_.push_back(BucketEntry{cell.index, Bucket{s.le, s.tick_value, increase}});
      continue;
    }
    std::vector<Point>& points = cell.node_level ? tick.node_points : tick.gpu_points;
    if (cell.tick != t) {
      cell.tick = t;
      cell.index = static_cast<std::uint32_t>(points.size());
      points.push_back(Point{cell.entity, cell.metric, s.tick_value, increase});
      continue;
    }
    // Another series of the same GPU (node) and metric: sum.
    Point& p = points[cell.index];
    p.value += s.tick_value;
    if (p.increase && increase) {
      *p.increase += *increase;
    } else {
      p.increase.reset();
    }
  }
  auto by_entity_metric = [](const Point& a, const Point& b) {
    return a.entity != b.entity ? a.entity < b.entity : a.metric < b.metric;
  };
  std::sort(tick.gpu_points.begin(), tick.gpu_points.end(), by_entity_metric);
  std::sort(tick.node_points.begin(), tick.node_points.end(), by_entity_metric);
  for (const Point& p : tick.gpu_points) {
    if (tick.gpus.empty() || tick.gpus.back() != p.entity) tick.gpus.push_back(p.entity);
  }
  for (const Point& p : tick.node_points) {
    if (tick.nodes.empty() || tick.nodes.back() != p.entity) tick.nodes.push_back(p.entity);
  }
  FinalizeBuckets(tick);
}

void Replay::Impl::FinalizeBuckets(Tick& tick) {
  std::sort(bucket_scratch_.begin(), bucket_scratch_.end(),
            [](const BucketEntry& a, const BucketEntry& b) {
              return a.histogram != b.histogram ? a.histogram < b.histogram
                                                : a.bucket.le < b.bucket.le;
            });
  for (const BucketEntry& e : bucket_scratch_) {
    HistogramPoint& h = tick.histograms[e.histogram];
    if (h.count > 0 && tick.buckets.back().le == e.bucket.le) {
      // The same bound from another series of the node (another model_name): sum.
      Bucket& b = tick.buckets.back();
      b.value += e.bucket.value;
      if (b.increase && e.bucket.increase) {
        *b.increase += *e.bucket.increase;
      } else {
        b.increase.reset();
      }
      continue;
    }
    if (h.count == 0) h.first = static_cast<std::uint32_t>(tick.buckets.size());
    tick.buckets.push_back(e.bucket);
    ++h.count;
  }
  std::sort(tick.histograms.begin(), tick.histograms.end(),
            [](const HistogramPoint& a, const HistogramPoint& b) {
              if (a.node != b.node) return a.node < b.node;
              if (a.gpu != b.gpu) return a.gpu < b.gpu;
              return a.metric < b.metric;
            });
  const std::size_t plain_nodes = tick.nodes.size();
  for (const HistogramPoint& h : tick.histograms) {
    if (h.gpu < 0) tick.nodes.push_back(h.node);
  }
  if (tick.nodes.size() != plain_nodes) {
    std::sort(tick.nodes.begin(), tick.nodes.end());
    tick.nodes.erase(std::unique(tick.nodes.begin(), tick.nodes.end()), tick.nodes.end());
  }
}

// --- Replay ------------------------------------------------------------------

Replay::Replay(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Replay::~Replay() = default;

Result<std::unique_ptr<Replay>> Replay::Open(std::vector<ReplayInput> inputs,
                                             const ReplayOptions& options) {
  if (inputs.empty()) return Error(StatusCode::kInvalidArgument, "replay: no recordings given");
  auto impl = std::make_unique<Impl>(std::move(inputs), options);
  GC_RETURN_IF_ERROR(impl->OpenSources(nullptr));
  return std::unique_ptr<Replay>(new Replay(std::move(impl)));
}

Result<std::unique_ptr<Replay>> Replay::OpenWith(std::vector<ReplayInput> inputs,
                                                 const SourceFactory& make,
                                                 const ReplayOptions& options) {
  if (inputs.empty()) return Error(StatusCode::kInvalidArgument, "replay: no inputs given");
  auto impl = std::make_unique<Impl>(std::move(inputs), options);
  GC_RETURN_IF_ERROR(impl->OpenSources(make));
  return std::unique_ptr<Replay>(new Replay(std::move(impl)));
}

Result<bool> Replay::Next(Tick& tick) { return impl_->Next(tick); }
const std::vector<GpuInfo>& Replay::gpus() const { return impl_->gpus_; }
const std::vector<NodeInfo>& Replay::nodes() const { return impl_->nodes_; }
const std::vector<MetricInfo>& Replay::metrics() const { return impl_->metrics_; }
const ReplayStats& Replay::stats() const { return impl_->stats_; }
int Replay::out_of_order_input() const { return impl_->out_of_order_input_; }

int Replay::MetricId(std::string_view name) const {
  auto it = impl_->metric_ids_.find(dcgm::CanonicalFieldName(name));
  return it == impl_->metric_ids_.end() ? -1 : it->second;
}
int Replay::GpuId(std::string_view key) const {
  auto it = impl_->gpu_ids_.find(key);
  return it == impl_->gpu_ids_.end() ? -1 : it->second;
}
int Replay::NodeId(std::string_view host) const {
  auto it = impl_->node_ids_.find(host);
  return it == impl_->node_ids_.end() ? -1 : it->second;
}

Status ReplayRecordings(const std::vector<ReplayInput>& inputs, const ReplayOptions& options,
                        const std::function<Status(Replay&)>& consume) {
  ReplayOptions opts = options;
  for (;;) {
    Result<std::unique_ptr<Replay>> replay = Replay::Open(inputs, opts);
    if (!replay) return replay.error();
    Status st = consume(**replay);
    const int unordered = (*replay)->out_of_order_input();
    if (st.ok() || unordered < 0 ||
        std::find(opts.sort_inputs.begin(), opts.sort_inputs.end(), unordered) !=
            opts.sort_inputs.end()) {
      return st;
    }
    // Not time-blocked: read that input again through the sort, from the start.
    opts.sort_inputs.push_back(unordered);
  }
}

}  // namespace gpucanary::analysis
