#include "store/active_segment.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace gpucanary::store {

Status ActiveSegment::Open(std::uint32_t id, std::uint64_t size) {
  auto f = LogFile::Open(files_, dir_ / SegmentFileName(id), kSegmentMagic, size);
  if (!f) return f.error();
  file_ = std::move(*f);
  id_ = id;
  map_.reset();
  return Map();
}

// Maps the active segment with room to grow: readers see sealed chunks
// through the mapping without a system call. Remapped (under the exclusive
// lock) when the file outgrows it; readers keep the old mapping alive.
Status ActiveSegment::Map() {
  if (map_ != nullptr && file_.size() <= map_->size()) return Status::Ok();
  std::size_t len = std::max<std::size_t>(segment_bytes_ + (16u << 20), 1u << 20);
  while (len < file_.size()) len *= 2;
  auto map = Mapping::Map(file_.path(), len);
  if (!map) return map.error();
  map_ = std::move(*map);
  return Status::Ok();
}

void ActiveSegment::AddSeries(SeriesRef ref, const model::Labels& labels) {
  std::string payload;
  PutVarint(payload, ref);
  PutLabels(payload, labels);
  AppendRecord(buffer_, kSegSeriesRecord, payload);
}

ChunkLoc ActiveSegment::AddChunk(SeriesRef ref, std::span<const Sample> samples) {
  std::string payload;
  PutSegChunkHeader(payload, ref, samples.front().t, samples.back().t);
  const std::size_t header = payload.size();
  EncodeChunk(samples, payload);
  ChunkLoc loc;
  // The record frame puts 5 bytes (length, type) before the payload.
  loc.offset = file_.size() + buffer_.size() + 5 + header;
  loc.length = static_cast<std::uint32_t>(payload.size() - header);
  loc.mint = samples.front().t;
  loc.maxt = samples.back().t;
  AppendRecord(buffer_, kSegChunkRecord, payload);
  Extend(loc.mint, loc.maxt);
  return loc;
}

Status ActiveSegment::Flush() {
  if (buffer_.empty()) return Status::Ok();
  Status s = file_.Write(buffer_);
  buffer_.clear();
  return s.ok() ? Map() : s;
}

}  // namespace gpucanary::store
