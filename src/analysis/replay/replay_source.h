#pragma once
// Internal to analysis/replay: one recording read chunk by chunk through the
// project's reader, each accepted sample turned into a compact pending sample
// (series index, value, counter increase) filed under its 1 s tick. The series
// table and the tick merge live in Replay; see replay.h for the rules.
//
// Thread-compatible.

#include <zlib.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/replay/replay.h"
#include "analysis/replay/replay_sort.h"
#include "core/flat_hash_map.h"
#include "core/status.h"
#include "expfmt/reader.h"

namespace gpucanary::analysis {

inline constexpr std::int64_t kNoTick = std::numeric_limits<std::int64_t>::min();
// Series index of a sample that is read but not replayed (`_created`, ...).
inline constexpr std::uint32_t kIgnoredSeries = std::numeric_limits<std::uint32_t>::max();

// floor(ms / 1000), also for times before 1970.
inline std::int64_t TickOfMs(std::int64_t ms) {
  return ms >= 0 ? ms / 1000 : -((-(ms + 1)) / 1000) - 1;
}

struct PendingSample {
  std::uint32_t series = 0;
  double value = 0;
  double increase = 0;  // counters: since the series' previous sample; NaN: unknown
};

struct PendingTick {
  std::int64_t tick = 0;
  std::vector<PendingSample> samples;
};

// What a Source needs from the Replay that owns the series table.
class SeriesSink {
 public:
  virtual ~SeriesSink() = default;
  // Interns the series of `sample` (first seen in input `input`) and returns
  // its index, kIgnoredSeries, or an error message without location.
  virtual Result<std::uint32_t> AddSeries(int input, const expfmt::SampleView& sample,
                                          std::string_view family, model::MetricType type) = 0;
  // Remembers `value` as the series' latest and returns the increase since its
  // previous sample (Prometheus reset rule); NaN for a gauge or a first sample.
  virtual double Observe(std::uint32_t series, double value) = 0;
  virtual ReplayStats& mutable_stats() = 0;
};

// Where a Replay's samples come from: a recording (ReplaySource) or, for a
// live canary, the store (analysis/live). A source files each sample under
// its tick in pending(); Replay merges the sources' ticks in time order.
class TickSource {
 public:
  virtual ~TickSource() = default;

  // Reads more input, filing its samples in pending(). A source with nothing
  // new for now (a live one, caught up with the store) sets stalled(); at the
  // end of its input it sets eof(). Errors end the replay.
  virtual Status ReadChunk() = 0;

  bool eof() const { return eof_; }
  bool stalled() const { return stalled_; }
  // ReadChunk failed because a sample came back further than the reorder
  // window: the input is not time-blocked (ReplayRecordings sorts it).
  bool out_of_order() const { return out_of_order_; }
  // Every tick below max_tick() - window is complete in pending() (the
  // replay's reorder window); kNoTick before the first sample.
  std::int64_t max_tick() const { return max_tick_; }
  std::deque<PendingTick>& pending() { return pending_; }
  // Returns a drained tick's sample vector for reuse.
  void Recycle(std::vector<PendingSample>&& samples);

 protected:
  // Files `sample` under `tick`, keeping pending() in tick order.
  void File(std::int64_t tick, const PendingSample& sample);

  std::deque<PendingTick> pending_;
  std::vector<std::vector<PendingSample>> spare_;
  std::int64_t max_tick_ = kNoTick;
  bool eof_ = false;
  bool stalled_ = false;
  bool out_of_order_ = false;
};

class ReplaySource final : public TickSource {
 public:
  // Opens `input` (format detected unless forced). Errors: kNotFound, kIoError.
  static Result<std::unique_ptr<ReplaySource>> Open(const ReplayInput& input, int index,
                                                    const ReplayOptions& options, SeriesSink& sink);
  ~ReplaySource() override;
  ReplaySource(const ReplaySource&) = delete;
  ReplaySource& operator=(const ReplaySource&) = delete;

  // Reads and parses one chunk (whole lines), filing its samples in pending().
  // At the end of the file, checks end-of-input rules and sets eof(). Errors:
  // see replay.h; "FILE:LINE:COL: ..." where a line is at fault. A sorted
  // input (ReplayOptions::sort_inputs) parses the whole file into its sorter
  // on the first call, then files one second per call.
  Status ReadChunk() override;

 private:
  ReplaySource(const ReplayInput& input, int index, expfmt::Format format, gzFile file,
               const ReplayOptions& options, SeriesSink& sink);
  void OnSample(const expfmt::SampleView& sample, std::string_view family, model::MetricType type);
  // "FILE:LINE:COL" of a position inside the chunk being parsed.
  std::string Where(const char* position) const;
  std::uint64_t LineAt(std::uint64_t offset) const;  // 1-based line starting at byte `offset`
  Status ParseChunk();  // one chunk into pending() (streamed) or the sorter
  Status FileSortedSecond();
  Status Finish();

  std::string path_;
  int index_;
  int window_;
  gzFile file_;
  SeriesSink& sink_;
  expfmt::ExpositionReader reader_;
  std::vector<char> buffer_;
  std::size_t have_ = 0;
  std::string_view chunk_;                 // the lines being parsed
  std::uint64_t chunk_offset_ = 0;         // uncompressed offset of chunk_ in the file
  std::uint64_t bytes_ = 0;                // uncompressed bytes parsed so far
  FlatHashMap<std::uint32_t> series_ids_;  // XXH3(name + label block) -> series
  std::string key_scratch_;
  std::unique_ptr<SecondSorter> sorter_;  // sorted inputs only
  std::vector<SortRecord> second_;        // the sorted second being filed
  bool parsed_ = false;                   // the whole file went through the reader
  Status error_;
};

}  // namespace gpucanary::analysis
