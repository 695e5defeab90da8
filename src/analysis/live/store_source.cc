#include "analysis/live/store_source.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string_view>
#include <utility>

#include "dcgm/fields.h"

namespace gpucanary::analysis {
namespace {

// The exposition type the series would have had, from its name and labels
// (the store keeps none); `family` is the histogram family for buckets.
expfmt::MetricType InferType(const expfmt::SampleView& sample, std::string_view& family) {
  const std::string_view name = sample.name;
  family = name;
  if (name.ends_with("_bucket") && sample.Label("le")) {
    family = name.substr(0, name.size() - 7);
    return expfmt::MetricType::kHistogram;
  }
  if (name.ends_with("_count") || name.ends_with("_sum")) return expfmt::MetricType::kHistogram;
  return expfmt::MetricType::kUnknown;
}

}  // namespace

StoreTickSource::StoreTickSource(const store::Store& store, std::vector<store::Matcher> matchers,
                                 std::string name, int index, int reorder_window_s,
                                 std::int64_t from_s, SeriesSink& sink)
    : store_(store),
      matchers_(std::move(matchers)),
      name_(std::move(name)),
      index_(index),
      window_(std::max(0, reorder_window_s)),
      sink_(sink),
      next_(from_s) {}

void StoreTickSource::SetReadyThrough(std::int64_t tick) { ready_ = std::max(ready_, tick); }

Status StoreTickSource::ReadChunk() {
  stalled_ = false;
  if (eof_) return Status::Ok();
  if (ready_ == kNoTick || next_ > ready_) {
    if (closed_) {
      eof_ = true;
    } else {
      stalled_ = true;
    }
    return Status::Ok();
  }
  const std::int64_t last = std::min(ready_, next_ + kSliceSeconds - 1);
  auto result = store_.Query(matchers_, next_ * 1000, last * 1000 + 999);
  if (!result) return result.error().WithPrefix(name_);
  ReplayStats& stats = sink_.mutable_stats();
  expfmt::SampleView view;
  for (const store::SeriesData& series : result->series) {
    const std::uint64_t hash =
        FlatHashMap<std::uint32_t>::NonZero(store::LabelsHash(series.labels));
    bool inserted = false;
    std::uint32_t& slot = series_ids_.FindOrInsert(hash, inserted);
    if (inserted) {
      view.labels.clear();
      view.name = {};
      for (const store::Label& l : series.labels) {
        if (l.name == store::kMetricNameLabel) {
          view.name = l.value;
        } else {
          view.labels.push_back({l.name, l.value});
        }
      }
      std::string_view family;
      const expfmt::MetricType type = InferType(view, family);
      Result<std::uint32_t> id = sink_.AddSeries(index_, view, family, type);
      if (!id) {
        return Status(id.error().code(), name_ + ": " + store::LabelsToString(series.labels) +
                                             ": " + id.error().message());
      }
      slot = *id;
    }
    const std::uint32_t index = slot;
    Status st = result->ForEach(series, [&](std::span<const store::Sample> run) {
      for (const store::Sample& s : run) {
        ++stats.samples;
        if (index == kIgnoredSeries) {
          ++stats.ignored;
          continue;
        }
        if (std::isnan(s.v) || dcgm::IsBlankSentinel(s.v)) {
          ++stats.missing;  // no data (a staleness marker included), never zero
          continue;
        }
        File(TickOfMs(s.t), PendingSample{index, s.v, sink_.Observe(index, s.v)});
      }
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
                                                std::vector<StoreTickSource*>* sources,
                                                const ReplayOptions& options) {
  std::vector<ReplayInput> replay_inputs;
  replay_inputs.reserve(inputs.size());
  for (const StoreInput& in : inputs) replay_inputs.push_back({in.name, in.role, std::nullopt});
  if (sources != nullptr) sources->clear();
  auto make = [&](const ReplayInput& input, int index,
                  SeriesSink& sink) -> Result<std::unique_ptr<TickSource>> {
    auto source = std::make_unique<StoreTickSource>(
        store, inputs[static_cast<std::size_t>(index)].matchers, input.path, index,
        options.reorder_window_s, from_s, sink);
    if (sources != nullptr) sources->push_back(source.get());
    return std::unique_ptr<TickSource>(std::move(source));
  };
  return Replay::OpenWith(std::move(replay_inputs), make, options);
}

}  // namespace gpucanary::analysis
