#pragma once
// Chunk encodings (docs/storage-format.md, "Chunks"): a run of one series'
// samples in time order, sealed once into the smallest of the const, decimal
// and xor value encodings, with delta-of-delta or regular timestamps; and the
// open chunk a series appends to in memory (Gorilla's XOR stream, compact
// while it grows).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "store/bits.h"

namespace gpucanary::store {

struct Sample {
  std::int64_t t = 0;  // milliseconds since the Unix epoch
  double v = 0;
};

enum class ValueEncoding : std::uint8_t { kConst = 0, kDecimal = 1, kXor = 2 };

// Encodes `samples` (1 or more, strictly increasing t) and appends the chunk
// to `out`. Values keep their exact bits. Returns the value encoding chosen.
ValueEncoding EncodeChunk(std::span<const Sample> samples, std::string& out);

// Decodes a whole chunk from the start of `in`, appending its samples to
// `out`. Errors: kParseError naming what is malformed ("chunk: truncated
// miniblock"); `out` is then as it was. Never reads outside `in`.
Status DecodeChunk(std::string_view in, std::vector<Sample>& out);

// The sample count a chunk declares (its first varint); 0 when unreadable
// or above the format's limit (2^20).
std::size_t ChunkSampleCount(std::string_view in);

// Decodes a chunk into exactly ChunkSampleCount(in) samples at `out`
// (REQUIRES: out.size() equals it), without allocating. Errors as
// DecodeChunk; `out` then holds garbage.
Status DecodeChunkTo(std::string_view in, std::span<Sample> out);

// Decodes only the samples with mint <= t <= maxt.
Status DecodeChunkRange(std::string_view in, std::int64_t mint, std::int64_t maxt,
                        std::vector<Sample>& out);

// The growing chunk of one series, in memory: Gorilla's stream of
// delta-of-delta timestamps and XOR values, about 1-3 bytes per sample for
// dcgm-exporter data. Thread-compatible.
class OpenChunk {
 public:
  // REQUIRES: t greater than the last appended t.
  void Append(std::int64_t t, double v);

  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  std::int64_t mint() const { return first_t_; }
  std::int64_t maxt() const { return last_t_; }
  double last_value() const;
  // Heap bytes held.
  std::size_t bytes() const { return stream_.bytes.capacity(); }

  // Appends every sample to `out` (time order).
  void Decode(std::vector<Sample>& out) const;
  // The encoded stream as it stands (a copy a reader can decode later with
  // DecodeStream while the chunk keeps growing).
  std::string Snapshot() const;
  static void DecodeStream(std::string_view stream, std::size_t count, std::vector<Sample>& out);
  void Clear();

 private:
  BitBuffer stream_;
  std::size_t count_ = 0;
  std::int64_t first_t_ = 0;
  std::int64_t last_t_ = 0;
  std::int64_t last_delta_ = 0;
  std::uint64_t last_bits_ = 0;
  std::uint8_t leading_ = 0xff;  // XOR window of the previous value; 0xff = none yet
  std::uint8_t trailing_ = 0;
};

}  // namespace gpucanary::store
