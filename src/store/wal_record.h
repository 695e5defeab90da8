#pragma once
// The payloads of the write-ahead log's records and of the checkpoint
// (docs/storage-format.md, "The write-ahead log" and "Checkpoints"), as
// Prometheus's tsdb/record encodes its WAL: how a batch's new series and
// samples, and a checkpoint's series, become bytes and back. The framing is
// record_log's; the files are wal.h's.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/labels.h"
#include "store/appender.h"
#include "store/bits.h"
#include "store/chunk.h"
#include "store/segment.h"

namespace gpucanary::store {

inline constexpr std::string_view kWalMagic = "GCWAL001";
inline constexpr std::string_view kCheckpointMagic = "GCCKPT01";
inline constexpr std::uint8_t kSeriesRecord = 1;
inline constexpr std::uint8_t kSamplesRecord = 2;
inline constexpr std::uint8_t kCheckpointSeriesRecord = 3;

// One sample of a batch, waiting for Commit.
struct PendingSample {
  SeriesRef ref;
  std::int64_t t;
  std::uint64_t bits;
};

// Appends a framed series record (type 1) naming one series.
void AppendSeriesRecord(std::string& out, SeriesRef ref, const model::Labels& labels);

// Appends a samples payload (type 2) for `samples` (1 or more) to `payload`:
// count, then per sample ref and t as deltas from the previous one, and the
// value's bits.
void EncodeSamples(std::span<const PendingSample* const> samples, std::string& payload);

// Calls fn(ref, labels) for each series a series payload names, stopping
// silently at the first malformed one (a WAL's tail is cut elsewhere).
template <typename Fn>
void ForEachWalSeries(std::string_view payload, Fn&& fn) {
  std::size_t pos = 0;
  std::uint64_t count = 0;
  if (!GetVarint(payload, pos, count)) return;
  model::Labels labels;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t ref = 0;
    if (!GetVarint(payload, pos, ref) || !GetLabels(payload, pos, labels)) break;
    fn(static_cast<SeriesRef>(ref), static_cast<const model::Labels&>(labels));
  }
}

// Calls fn(ref, t, bits) for each sample of a samples payload, stopping
// silently at the first malformed one. `ref` is signed: deltas of a damaged
// record may take it below zero.
template <typename Fn>
void ForEachWalSample(std::string_view payload, Fn&& fn) {
  std::size_t pos = 0;
  std::uint64_t count = 0;
  if (!GetVarint(payload, pos, count)) return;
  std::int64_t ref = 0;
  std::int64_t t = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::int64_t dr = 0;
    std::int64_t dt = 0;
    std::uint64_t bits = 0;
    if (!GetZVarint(payload, pos, dr) || !GetZVarint(payload, pos, dt) ||
        !GetFixed64(payload, pos, bits)) {
      break;
    }
    ref = WrapAdd(ref, dr);
    t = WrapAdd(t, dt);
    fn(ref, t, bits);
  }
}

// Builds a checkpoint file: the magic, then one checkpoint_series record
// (type 3) per series. Not thread-safe.
class CheckpointBuilder {
 public:
  CheckpointBuilder() : out_(kCheckpointMagic) {}
  // Adds a series with its open chunk's samples (none when `open` is empty).
  void Add(SeriesRef ref, const model::Labels& labels, const OpenChunk& open);
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
  std::string payload_;          // scratch, reused per series
  std::vector<Sample> samples_;  // scratch
};

// A checkpoint_series payload, decoded: its series and, when it has one, the
// bytes of its open chunk's samples (a chunk, docs/storage-format.md
// "Chunks").
struct CheckpointSeries {
  SeriesRef ref = 0;
  model::Labels labels;
  bool has_chunk = false;
  std::string_view chunk;
};

// Decodes a checkpoint_series payload. False when it is malformed.
bool DecodeCheckpointSeries(std::string_view payload, CheckpointSeries& out);

}  // namespace gpucanary::store
