#include "analysis/live/store_source.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string_view>
#include <utility>

#include "analysis/live/prometheus_follow.h"
#include "analysis/live/prometheus_history.h"
#include "dcgm/fields.h"
#include "model/matcher.h"

namespace gpucanary::analysis {
namespace {

// The exposition type the series would have had, from its name and labels
// (the store keeps none); `family` is the histogram family for buckets.
model::MetricType InferType(const expfmt::SampleView& sample, std::string_view& family) {
  const std::string_view name = sample.name;
  family = name;
  if (name.ends_with("_bucket") && sample.Label("le")) {
    family = name.substr(0, name.size() - 7);
    return model::MetricType::kHistogram;
  }
  if (name.ends_with("_count") || name.ends_with("_sum")) return model::MetricType::kHistogram;
  return model::MetricType::kUnknown;
}

// A history series' host under `label`: the label's value, or the host
// part of the scrape instance for series read by their instance.
std::string_view HostOf(const model::Labels& labels, const std::string& label) {
  const std::string_view v = model::LabelValue(labels, label);
  return label == kInstanceLabel ? model::InstanceHost(v) : v;
}

}  // namespace

StoreTickSource::StoreTickSource(const store::Store& store, std::vector<model::Matcher> matchers,
                                 std::string name, int index, int reorder_window_s,
                                 std::int64_t from_s, SeriesSink& sink,
                                 std::shared_ptr<PrometheusHistory> history)
    : LiveTickSource(std::move(name), index, sink),
      store_(store),
      matchers_(std::move(matchers)),
      window_(std::max(0, reorder_window_s)),
      next_(from_s),
      history_(std::move(history)) {}

bool LiveTickSource::BeginRead(std::int64_t next) {
  stalled_ = false;
  if (eof_) return false;
  if (ready_ == kNoTick || next > ready_) {
    if (closed_) {
      eof_ = true;
    } else {
      stalled_ = true;
    }
    return false;
  }
  return true;
}

Result<std::uint32_t> LabelledTickSource::SeriesOf(const model::Labels& labels) {
  const std::uint64_t hash = FlatHashMap<std::uint32_t>::NonZero(model::LabelsHash(labels));
  bool inserted = false;
  std::uint32_t& slot = series_ids_.FindOrInsert(hash, inserted);
  if (!inserted) return slot;
  expfmt::SampleView view;
  for (const model::Label& l : labels) {
    if (l.name == model::kMetricNameLabel) {
      view.name = l.value;
    } else {
      view.labels.push_back({l.name, l.value});
    }
  }
  std::string_view family;
  const model::MetricType type = InferType(view, family);
  Result<std::uint32_t> id = sink_.AddSeries(index_, view, family, type);
  if (!id) {
    return Error(id.error().code(),
                 name_ + ": " + model::LabelsToString(labels) + ": " + id.error().message());
  }
  slot = *id;  // nothing was inserted since: `slot` still refers to the entry
  return *id;
}

void LabelledTickSource::FileSample(std::uint32_t index, std::int64_t t_ms, double value) {
  ReplayStats& stats = sink_.mutable_stats();
  ++stats.samples;
  if (index == kIgnoredSeries) {
    ++stats.ignored;
    return;
  }
  if (std::isnan(value) || dcgm::IsBlankSentinel(value)) {
    ++stats.missing;  // no data (a staleness marker included), never zero
    return;
  }
  File(TickOfMs(t_ms), PendingSample{index, value, sink_.Observe(index, value)});
}

Status StoreTickSource::FileHistory(const store::QueryResult& result, std::int64_t last) {
  PrometheusHistory& h = *history_;
  // A host's history ends where the store has it: at the first second with
  // any sample of any of its series (a staleness marker too: it was scraped).
  std::map<std::string, std::int64_t, std::less<>> first_here;
  for (const store::SeriesData& series : result.series) {
    const std::string_view host = HostOf(series.labels, h.host_label());
    if (host.empty() || store_since_.contains(host)) continue;
    std::int64_t first = kNoTick;
    Status st = result.ForEach(series, [&](std::span<const store::Sample> run) {
      if (first == kNoTick && !run.empty()) first = TickOfMs(run.front().t);
    });
    if (!st.ok()) return st.WithPrefix(name_);
    if (first == kNoTick) continue;
    auto [it, inserted] = first_here.emplace(std::string(host), first);
    if (!inserted) it->second = std::min(it->second, first);
  }
  store_since_.merge(first_here);
  if (cursors_.empty() && !h.series().empty()) {
    for (std::size_t i = 0; i < h.series().size(); ++i) {
      cursors_.push_back(
          {i, 0, kIgnoredSeries, false, std::string(HostOf(h.series()[i].labels, h.host_label()))});
    }
  }
  for (HistoryCursor& c : cursors_) {
    const promql::Series& series = h.series()[c.series];
    const auto since = store_since_.find(c.host);
    PrometheusHistory::HostCounts& counts = h.host_counts()[c.host];
    for (; c.next < series.samples.size(); ++c.next) {
      const promql::Sample& s = series.samples[c.next];
      const std::int64_t tick = TickOfMs(s.t_ms);
      if (tick > last) break;
      if (tick < next_) continue;  // before the window (never asked for)
      if (since != store_since_.end() && tick >= since->second) {
        ++counts.shadowed;  // the store has this host from an earlier second
        continue;
      }
      if (!c.interned) {
        Result<std::uint32_t> id = SeriesOf(series.labels);
        if (!id) return Status(id.error().code(), id.error().message() + " (from " + h.url() + ")");
        c.index = *id;
        c.interned = true;
      }
      FileSample(c.index, s.t_ms, s.value);
      ++counts.used;
    }
  }
  if (last >= h.until_s() - 1) {
    // Past the window: nothing more to file; the counts stay with the owner.
    h.Release();
    history_.reset();
    cursors_.clear();
    store_since_.clear();
  }
  return Status::Ok();
}

Status StoreTickSource::ReadChunk() {
  if (!BeginRead(next_)) return Status::Ok();
  if (history_ != nullptr && !history_->Done()) {
    stalled_ = true;  // the history's seconds come first: wait for them
    return Status::Ok();
  }
  const std::int64_t last = std::min(ready(), next_ + slice_s_ - 1);
  auto result = store_.Query(matchers_, next_ * 1000, last * 1000 + 999);
  if (!result) return result.error().WithPrefix(name_);
  if (history_ != nullptr) {
    if (history_->status().ok()) {
      GC_RETURN_IF_ERROR(FileHistory(*result, last));
    } else {
      history_.reset();  // unavailable: the store's own history only
    }
  }
  for (const store::SeriesData& series : result->series) {
    Result<std::uint32_t> index = SeriesOf(series.labels);
    if (!index) return index.error();
    Status st = result->ForEach(series, [&](std::span<const store::Sample> run) {
      for (const store::Sample& s : run) FileSample(*index, s.t, s.v);
    });
    if (!st.ok()) return st.WithPrefix(name_);
  }
  next_ = last + 1;
  // Every second up to `last` is complete: Replay may emit it.
  max_tick_ = last + 1 + window_;
  return Status::Ok();
}

Result<std::unique_ptr<Replay>> OpenStoreReplay(const store::Store& store,
                                                std::vector<StoreInput> inputs, std::int64_t from_s,
                                                std::vector<LiveTickSource*>* sources,
                                                const ReplayOptions& options) {
  std::vector<ReplayInput> replay_inputs;
  replay_inputs.reserve(inputs.size());
  for (const StoreInput& in : inputs) replay_inputs.push_back({in.name, in.role, std::nullopt});
  if (sources != nullptr) sources->clear();
  auto make = [&](const ReplayInput& input, int index,
                  SeriesSink& sink) -> Result<std::unique_ptr<TickSource>> {
    const StoreInput& in = inputs[static_cast<std::size_t>(index)];
    std::unique_ptr<LiveTickSource> source;
    if (in.remote) {
      source =
          std::make_unique<PrometheusTickSource>(*in.remote, in.remote_selector, input.path, index,
                                                 options.reorder_window_s, from_s, sink);
    } else {
      source =
          std::make_unique<StoreTickSource>(store, in.matchers, input.path, index,
                                            options.reorder_window_s, from_s, sink, in.history);
    }
    if (sources != nullptr) sources->push_back(source.get());
    return std::unique_ptr<TickSource>(std::move(source));
  };
  return Replay::OpenWith(std::move(replay_inputs), make, options);
}

}  // namespace gpucanary::analysis
