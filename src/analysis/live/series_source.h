#pragma once
// A Replay source over series already fetched whole, e.g. a Prometheus's raw
// samples (promql::QueryRaw) for `gpucanary correlate --prometheus`: the same
// ticks, series table and rules as a recording or the store
// (store_source.h's LabelledTickSource).
//
//   auto fetched = promql::QueryRaw(url, selector, from_s * 1000, to_s * 1000 - 1);
//   auto replay = OpenSeriesReplay(std::move(fetched->series), url, from_s, to_s);
//   while (*(*replay)->Next(tick)) ...
//
// Thread-compatible.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/live/store_source.h"
#include "promql/response.h"

namespace gpucanary::analysis {

class SeriesListTickSource final : public LabelledTickSource {
 public:
  // Files the samples of `series` (each in time order, labels with
  // __name__) with from_s <= tick < to_s.
  SeriesListTickSource(std::vector<promql::Series> series, std::string name, int index,
                       int reorder_window_s, std::int64_t from_s, std::int64_t to_s,
                       SeriesSink& sink);

  // Files the next StoreTickSource::kSliceSeconds seconds; eof() past to_s.
  Status ReadChunk() override;

 private:
  std::vector<promql::Series> series_;
  std::vector<std::size_t> next_sample_;  // per series: its first sample not filed
  std::vector<std::uint32_t> ids_;        // per series: its replay series (interned lazily)
  int window_;
  std::int64_t next_;  // first second not filed yet
  std::int64_t to_s_;
};

// A replay of `series` as one input (role baseline) named `name`.
Result<std::unique_ptr<Replay>> OpenSeriesReplay(std::vector<promql::Series> series,
                                                 std::string name, std::int64_t from_s,
                                                 std::int64_t to_s,
                                                 const ReplayOptions& options = {});

}  // namespace gpucanary::analysis
