#pragma once
// Internal to analysis/replay: the external counting sort by second that lets
// a recording in any layout (series-grouped, time-blocked, mixed) be replayed
// (docs/recorded-telemetry.md, "Layouts").
//
//   SecondSorter sorter({.run_bytes = 16 << 20});
//   for each accepted sample, in file order: GC_RETURN_IF_ERROR(sorter.Add(series, tick, value));
//   GC_RETURN_IF_ERROR(sorter.Finish());
//   std::int64_t tick; std::vector<SortRecord> records;
//   while (*sorter.Next(tick, records)) { ... records of `tick`, in file order ... }
//
// Samples are kept as 16-byte records (series, second relative to the first
// sample's, value). They collect in a run of at most run_bytes; a full run is
// sorted by second (a counting sort; stable, so file order is kept within a
// second) and appended to one temporary file, created under `dir` and unlinked
// at once (nothing is left behind, even after a crash). Next merges the runs
// second by second, in run order, so the records of a second come out in file
// order: each series' samples in their time order, as a streaming replay sees
// them. Memory: one run (plus its sort buffer) while adding; while merging, the
// last run (kept in memory, never written) and a 64 KiB read buffer per
// spilled run. The file holds 16 bytes per sample.
//
// Errors: kIoError (the temporary file cannot be created, written or read,
// naming the directory), kOutOfRange (a sample more than 2^31 s from the first).
//
// Thread-compatible.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace gpucanary::analysis {

struct SortRecord {
  std::uint32_t series = 0;
  std::int32_t second = 0;  // relative to the first sample's second
  double value = 0;
};
static_assert(sizeof(SortRecord) == 16);

struct SortOptions {
  std::size_t run_bytes = std::size_t{16} << 20;  // at least one record
  std::string dir;                                // "": $TMPDIR, else /tmp
};

class SecondSorter {
 public:
  explicit SecondSorter(SortOptions options);
  ~SecondSorter();
  SecondSorter(const SecondSorter&) = delete;
  SecondSorter& operator=(const SecondSorter&) = delete;

  Status Add(std::uint32_t series, std::int64_t tick, double value);
  // Sorts the last run; call once, after the last Add.
  Status Finish();
  // The records of the next second that has any, in file order; false at the end.
  Result<bool> Next(std::int64_t& tick, std::vector<SortRecord>& records);

  std::size_t runs_spilled() const { return runs_.size() - (last_in_memory_ ? 1 : 0); }
  std::uint64_t records() const { return records_; }

 private:
  struct Run {
    std::uint64_t offset = 0;  // in the file, bytes
    std::uint64_t left = 0;    // records not yet in `buffer`
    std::vector<SortRecord> buffer;
    std::size_t pos = 0;
  };
  void SortRun();
  Status Spill();
  Status Refill(Run& run);

  SortOptions options_;
  std::size_t run_records_;
  std::vector<SortRecord> run_;
  std::vector<SortRecord> scratch_;
  std::vector<std::uint32_t> counts_;
  std::vector<Run> runs_;
  bool last_in_memory_ = false;
  bool have_base_ = false;
  std::int64_t base_ = 0;
  std::uint64_t records_ = 0;
  int fd_ = -1;
  std::string dir_;
  std::uint64_t file_bytes_ = 0;
};

}  // namespace gpucanary::analysis
