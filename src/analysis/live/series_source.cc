#include "analysis/live/series_source.h"

#include <algorithm>
#include <utility>

namespace gpucanary::analysis {

SeriesListTickSource::SeriesListTickSource(std::vector<promql::Series> series, std::string name,
                                           int index, int reorder_window_s, std::int64_t from_s,
                                           std::int64_t to_s, SeriesSink& sink)
    : LabelledTickSource(std::move(name), index, sink),
      series_(std::move(series)),
      next_sample_(series_.size(), 0),
      ids_(series_.size(), kIgnoredSeries),
      window_(std::max(0, reorder_window_s)),
      next_(from_s),
      to_s_(to_s) {}

Status SeriesListTickSource::ReadChunk() {
  stalled_ = false;
  if (next_ >= to_s_) {
    eof_ = true;
    return Status::Ok();
  }
  const std::int64_t last = std::min(to_s_ - 1, next_ + StoreTickSource::kSliceSeconds - 1);
  for (std::size_t i = 0; i < series_.size(); ++i) {
    const std::vector<promql::Sample>& samples = series_[i].samples;
    std::size_t& k = next_sample_[i];
    for (; k < samples.size() && TickOfMs(samples[k].t_ms) <= last; ++k) {
      if (TickOfMs(samples[k].t_ms) < next_) continue;  // before the range
      if (ids_[i] == kIgnoredSeries) {
        Result<std::uint32_t> id = SeriesOf(series_[i].labels);
        if (!id) return id.error();
        ids_[i] = *id;
      }
      FileSample(ids_[i], samples[k].t_ms, samples[k].value);
    }
  }
  next_ = last + 1;
  max_tick_ = last + 1 + window_;
  return Status::Ok();
}

Result<std::unique_ptr<Replay>> OpenSeriesReplay(std::vector<promql::Series> series,
                                                 std::string name, std::int64_t from_s,
                                                 std::int64_t to_s, const ReplayOptions& options) {
  auto make = [&](const ReplayInput& input, int index,
                  SeriesSink& sink) -> Result<std::unique_ptr<TickSource>> {
    return std::unique_ptr<TickSource>(std::make_unique<SeriesListTickSource>(
        std::move(series), input.path, index, options.reorder_window_s, from_s, to_s, sink));
  };
  return Replay::OpenWith({{std::move(name), Role::kBaseline, std::nullopt}}, make, options);
}

}  // namespace gpucanary::analysis
