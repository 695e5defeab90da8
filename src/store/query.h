#pragma once
// What a query of the store returns (docs/storage-format.md, "Reading"):
// the series that matched with their chunks in the range, not yet decoded,
// and the decoded form Store::Select gives. Store::Query and the read API
// over it are in query.cc.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/labels.h"
#include "store/chunk.h"

namespace gpucanary::store {

struct SeriesSamples {
  model::Labels labels;
  std::vector<Sample> samples;  // time order, exact bits, staleness markers kept
};

// A sealed chunk as a query sees it: its encoded bytes (a view into a mapped
// segment file) and its time range.
struct ChunkView {
  std::string_view bytes;
  std::int64_t mint = 0;
  std::int64_t maxt = 0;
};

// One series' data in a query's range, not yet decoded: sealed chunks in
// time order and a copy of its open chunk's stream.
struct SeriesData {
  model::Labels labels;
  std::vector<ChunkView> chunks;
  std::string open_stream;
  std::size_t open_samples = 0;
};

// A read snapshot: stays valid (mappings held) after the store moves on,
// even if retention deletes the segments it reads from. Decoding happens as
// the caller iterates, a chunk at a time into a small buffer, so reading a
// large window allocates nothing per sample.
class QueryResult {
 public:
  std::int64_t mint = 0;
  std::int64_t maxt = 0;
  std::vector<SeriesData> series;  // sorted by labels
  std::vector<std::shared_ptr<const void>> keep_alive;

  // Calls fn with runs of `s`'s samples in [mint, maxt], t strictly
  // increasing across runs (a sample stored twice after a crash is given
  // once). Errors: kParseError for a chunk that does not decode.
  Status ForEach(const SeriesData& s, const std::function<void(std::span<const Sample>)>& fn) const;
  // Appends all of `s`'s samples to `out`.
  Status Collect(const SeriesData& s, std::vector<Sample>& out) const;
};

}  // namespace gpucanary::store
