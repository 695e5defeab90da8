#pragma once
// Tails the store's write-ahead log (DATA/wal, docs/storage-format.md "The
// write-ahead log") for remote_write out, as Prometheus's wlog.Watcher tails
// its WAL: series records and samples, in commit order, read from the files
// with pread while the store appends to them. Only whole records whose CRC
// holds are read; a record the store is still writing is read on a later
// Poll. docs/remote-write-out.md, "The durable queue is the WAL".
//
// Thread-compatible: one thread polls. The store may write, rotate and
// delete segments meanwhile (an open segment deleted under the watcher is
// read to its end through the descriptor).

#include <compare>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "model/labels.h"
#include "store/appender.h"

namespace gpucanary::remote {

// A sample's place in the WAL: the segment, the byte offset of its samples
// record, its index within the record. Places only grow.
struct WalPosition {
  std::uint32_t segment = 0;
  std::uint64_t offset = 0;
  std::uint32_t index = 0;

  friend auto operator<=>(const WalPosition&,
                          const WalPosition&) = default;  // NOLINT(modernize-use-nullptr)
  friend bool operator==(const WalPosition&, const WalPosition&) = default;
};

// "00000012:4096:3".
std::string FormatPosition(const WalPosition& p);

class WalWatcher {
 public:
  // What the watcher reads, in WAL order.
  class Handler {
   public:
    virtual ~Handler() = default;
    // A series record (or a checkpoint's series): `labels` for `ref`.
    virtual void Series(store::SeriesRef ref, const model::Labels& labels) = 0;
    // A sample at `pos`. Returns false to stop reading: the next Poll starts
    // again at this sample.
    virtual bool Sample(store::SeriesRef ref, std::int64_t t, std::uint64_t bits,
                        const WalPosition& pos) = 0;
    // WAL that was deleted or damaged before it could be read; `what` says
    // which ("segments 00000003 to 00000005 were deleted before they were
    // read").
    virtual void Lost(std::string_view what) = 0;
  };

  // The WAL in `dir` (DATA/wal).
  explicit WalWatcher(std::filesystem::path dir);
  ~WalWatcher();
  WalWatcher(const WalWatcher&) = delete;
  WalWatcher& operator=(const WalWatcher&) = delete;

  // Where the WAL ends now: the newest segment's size (a position before
  // no sample yet written). {0, 0, 0} when there is no segment.
  static WalPosition End(const std::filesystem::path& dir);
  // The oldest segment on disk (0: none).
  static std::uint32_t OldestSegment(const std::filesystem::path& dir);

  // Positions the watcher so that the first sample given to the handler is
  // the first at or after `from`. The series of the newest checkpoint and
  // every series record before `from` are given first (samples need their
  // labels). When `from`'s segment is gone, reading starts at the oldest
  // segment after it and Lost says what was missed. Errors: kIoError.
  Status Start(const WalPosition& from, Handler& handler);

  // Reads every whole record written since the last call (up to a few MB
  // at a time), moving to the next segment when the store has started one.
  // Returns true when it read to the end, false when the handler stopped
  // it. Errors: kIoError (a segment that cannot be read).
  Result<bool> Poll(Handler& handler);

  // The place of the next sample to read.
  WalPosition position() const;
  // Bytes of WAL on disk from position() to the end of the newest segment.
  std::uint64_t BytesBehind() const;

 private:
  Status OpenSegment(std::uint32_t n);
  // Reads more bytes of the open segment into buf_; the number read.
  Result<std::size_t> ReadMore();
  // Parses the whole records in buf_; false when the handler stopped.
  bool ParseBuffered(Handler& handler);

  const std::filesystem::path dir_;
  int fd_ = -1;
  std::uint32_t segment_ = 0;
  std::uint64_t file_offset_ = 0;   // of buf_[0] in the segment
  std::string buf_;                 // bytes read and not yet parsed
  std::size_t parsed_ = 0;          // bytes of buf_ parsed
  std::uint32_t resume_index_ = 0;  // samples of the record at parsed_ already given
  WalPosition skip_until_;          // samples before it are not given
};

}  // namespace gpucanary::remote
