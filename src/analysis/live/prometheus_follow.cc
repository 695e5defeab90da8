#include "analysis/live/prometheus_follow.h"

#include <algorithm>
#include <utility>

#include "promql/client.h"

namespace gpucanary::analysis {

PrometheusTickSource::PrometheusTickSource(PrometheusHistory::Server server, std::string selector,
                                           std::string name, int index, int reorder_window_s,
                                           std::int64_t from_s, SeriesSink& sink)
    : LiveTickSource(std::move(name), index, sink),
      server_(std::move(server)),
      selector_(std::move(selector)),
      window_(std::max(0, reorder_window_s)),
      next_(from_s) {}

Status PrometheusTickSource::ReadChunk() {
  if (!BeginRead(next_)) return Status::Ok();
  const std::int64_t last = std::min(ready(), next_ + StoreTickSource::kSliceSeconds - 1);
  ++queries_;
  auto fetched =
      promql::QueryRaw(server_.url, selector_, next_ * 1000, last * 1000 + 999, server_.client);
  if (!fetched) {
    ++failed_queries_;
    last_error_ = fetched.error();
  } else {
    for (const promql::Series& series : fetched->series) {
      std::uint32_t id = kIgnoredSeries;
      for (const promql::Sample& s : series.samples) {
        if (TickOfMs(s.t_ms) < next_ || TickOfMs(s.t_ms) > last) continue;
        if (id == kIgnoredSeries) {
          Result<std::uint32_t> interned = SeriesOf(series.labels);
          if (!interned) return interned.error();
          id = *interned;
        }
        FileSample(id, s.t_ms, s.value);
        ++fetched_samples_;
      }
    }
  }
  next_ = last + 1;
  // Every second up to `last` has been asked for: Replay may emit it.
  max_tick_ = last + 1 + window_;
  return Status::Ok();
}

}  // namespace gpucanary::analysis
