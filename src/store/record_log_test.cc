// The record log, LevelDB log_test style: every way a log can be damaged,
// fed to ReadLog through the in-memory filesystem, and LogFile's writes
// against a disk that fails part way. No process, no disk; one test at the
// end runs the real POSIX file against a real write failure.

#include "store/record_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "store/file_size_limit.h"
#include "store/memory_file.h"

namespace gpucanary::store {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHeader = "GCTEST01";
const fs::path kPath = "data/log";

std::string Frame(std::uint8_t type, std::string_view payload) {
  std::string out;
  AppendRecord(out, type, payload);
  return out;
}

std::string U32(std::uint32_t v) {
  std::string out(4, '\0');
  std::memcpy(out.data(), &v, 4);
  return out;
}

struct Record {
  std::uint8_t type;
  std::string payload;
  std::uint64_t offset;
};

class RecordLogTest : public ::testing::Test {
 protected:
  // ReadLog of kPath, the records it gave kept in records_.
  Result<LogScan> Read() {
    records_.clear();
    return ReadLog(files_, kPath, kHeader,
                   [this](std::uint8_t type, std::string_view payload, std::uint64_t offset) {
                     records_.push_back({type, std::string(payload), offset});
                     return Status::Ok();
                   });
  }
  // Reads kPath, expecting it to stop after `good_bytes` because of `why`.
  void ExpectStop(std::uint64_t good_bytes, const std::string& why) {
    auto scan = Read();
    ASSERT_TRUE(scan.has_value()) << scan.error().ToString();
    EXPECT_EQ(scan->good_bytes, good_bytes);
    EXPECT_EQ(scan->file_bytes, files_.Contents(kPath).size());
    EXPECT_EQ(scan->tail_error, why);
  }

  MemoryFileSystem files_;
  std::vector<Record> records_;
  const std::string first_ = Frame(1, "first record");
  const std::string second_ = Frame(2, "the second, a little longer");
  const std::string third_ = Frame(3, "third");
  // Where the second record starts (and the first one's good end).
  const std::uint64_t after_first_ = kHeader.size() + first_.size();
};

// --- The frame.

TEST_F(RecordLogTest, AppendRecordWritesLengthTypePayloadAndCrcOfTypeAndPayload) {
  // zlib.crc32(b"\x07abc") == 0x76f67f75
  EXPECT_EQ(Frame(7, "abc"), U32(3) +
                                 "\x07"
                                 "abc" +
                                 U32(0x76f67f75));
  EXPECT_EQ(Frame(7, "abc").size(), kRecordOverhead + 3);
}

TEST_F(RecordLogTest, WrittenRecordsReadBackInOrderWithTheirPayloadOffsets) {
  auto log = LogFile::Open(files_, kPath, kHeader, 0);
  ASSERT_TRUE(log.has_value()) << log.error().ToString();
  EXPECT_EQ(files_.Contents(kPath), kHeader);
  ASSERT_TRUE(log->Write(first_).ok());
  ASSERT_TRUE(log->Write(Frame(9, "") + third_).ok());
  EXPECT_EQ(log->size(), after_first_ + kRecordOverhead + third_.size());

  ExpectStop(log->size(), "");
  ASSERT_EQ(records_.size(), 3U);
  EXPECT_EQ(records_[0].type, 1);
  EXPECT_EQ(records_[0].payload, "first record");
  EXPECT_EQ(records_[0].offset, kHeader.size() + 5);
  EXPECT_EQ(records_[1].type, 9);
  EXPECT_EQ(records_[1].payload, "");
  EXPECT_EQ(records_[1].offset, after_first_ + 5);
  EXPECT_EQ(records_[2].payload, "third");
  EXPECT_EQ(records_[2].offset, after_first_ + kRecordOverhead + 5);
}

// --- The header.

TEST_F(RecordLogTest, AnEmptyFileIsATornHeader) {
  files_.SetContents(kPath, "");
  ExpectStop(0, "torn header");
  EXPECT_TRUE(records_.empty());
}

TEST_F(RecordLogTest, APartOfTheHeaderIsATornHeader) {
  for (std::size_t n = 1; n < kHeader.size(); ++n) {
    files_.SetContents(kPath, std::string(kHeader.substr(0, n)));
    ExpectStop(0, "torn header");
  }
}

TEST_F(RecordLogTest, ABadMagicIsAParseErrorNotATail) {
  for (const std::string& contents :
       {"GCTEST02" + first_, std::string("GX"), std::string(12, '\0')}) {
    files_.SetContents(kPath, contents);
    auto scan = Read();
    ASSERT_FALSE(scan.has_value()) << contents;
    EXPECT_EQ(scan.error().code(), StatusCode::kParseError);
    EXPECT_EQ(scan.error().message(), "data/log: not a gpucanary log (bad magic)");
  }
}

TEST_F(RecordLogTest, AHeaderAloneIsACleanEmptyLog) {
  files_.SetContents(kPath, std::string(kHeader));
  ExpectStop(kHeader.size(), "");
  EXPECT_TRUE(records_.empty());
}

// --- Unreadable files.

TEST_F(RecordLogTest, AMissingFileIsAnIoError) {
  auto scan = Read();
  ASSERT_FALSE(scan.has_value());
  EXPECT_EQ(scan.error().code(), StatusCode::kIoError);
  EXPECT_EQ(scan.error().message(), "data/log: open: No such file or directory");
}

TEST_F(RecordLogTest, AFileThatCannotBeReadIsAnIoError) {
  files_.SetContents(kPath, std::string(kHeader) + first_);
  files_.FailReads(true);
  auto scan = Read();
  ASSERT_FALSE(scan.has_value());
  EXPECT_EQ(scan.error().code(), StatusCode::kIoError);
  EXPECT_TRUE(records_.empty());
}

// --- Torn and corrupt records: the scan stops at the last good record.

TEST_F(RecordLogTest, EveryCutThroughARecordStopsAtTheRecordBefore) {
  const std::string whole = std::string(kHeader) + first_ + second_;
  for (std::size_t cut = 1; cut < second_.size(); ++cut) {
    SCOPED_TRACE("cut after " + std::to_string(cut) + " bytes of the second record");
    files_.SetContents(kPath, whole.substr(0, after_first_ + cut));
    ExpectStop(after_first_,
               cut < kRecordOverhead ? "truncated record header" : "truncated record");
    ASSERT_EQ(records_.size(), 1U);
    EXPECT_EQ(records_[0].payload, "first record");
  }
}

TEST_F(RecordLogTest, ALengthOverTheLimitIsABadLengthEvenWhenTheBytesAreThere) {
  for (std::uint32_t len : {static_cast<std::uint32_t>(kMaxRecordBytes + 1), 0xffffffffU}) {
    files_.SetContents(
        kPath, std::string(kHeader) + first_ + U32(len) + "\x02" + std::string(64, 'x') + third_);
    ExpectStop(after_first_, "bad record length");
    EXPECT_EQ(records_.size(), 1U);
  }
}

TEST_F(RecordLogTest, ALengthPastTheEndOfTheFileIsATruncatedRecord) {
  files_.SetContents(kPath,
                     std::string(kHeader) + first_ + U32(1000) + "\x02" + std::string(20, 'x'));
  ExpectStop(after_first_, "truncated record");
}

TEST_F(RecordLogTest, AnyFlippedTypePayloadOrCrcByteIsABadCrcAndNothingAfterIsRead) {
  // Bytes 0-3 are the length: damaged, it reads as one of the cases above.
  for (std::size_t i = 4; i < second_.size(); ++i) {
    SCOPED_TRACE("byte " + std::to_string(i) + " of the second record flipped");
    std::string damaged = second_;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x20);
    files_.SetContents(kPath, std::string(kHeader) + first_ + damaged + third_);
    ExpectStop(after_first_, "bad crc");
    EXPECT_EQ(records_.size(), 1U);  // the good third record is not reached
  }
}

TEST_F(RecordLogTest, AZeroFilledTailIsABadCrc) {
  // A zero length, type 0 and crc 0: CRC-32 of the byte 0 is not 0.
  files_.SetContents(kPath, std::string(kHeader) + first_ + std::string(4096, '\0'));
  ExpectStop(after_first_, "bad crc");
  // Fewer zeros than a record header.
  files_.SetContents(kPath, std::string(kHeader) + first_ + std::string(kRecordOverhead - 1, '\0'));
  ExpectStop(after_first_, "truncated record header");
}

TEST_F(RecordLogTest, RecordsAtTheSizeLimitsReadBack) {
  const std::string largest(kMaxRecordBytes, 'L');
  files_.SetContents(kPath, std::string(kHeader) + Frame(1, "") + Frame(2, largest) + third_);
  ExpectStop(kHeader.size() + 2 * kRecordOverhead + kMaxRecordBytes + third_.size(), "");
  ASSERT_EQ(records_.size(), 3U);
  EXPECT_EQ(records_[0].payload, "");
  EXPECT_EQ(records_[1].payload.size(), kMaxRecordBytes);
  EXPECT_EQ(records_[1].payload, largest);
  // One byte more is refused, though its crc is right.
  files_.SetContents(kPath, std::string(kHeader) + first_ + Frame(2, largest + "L"));
  ExpectStop(after_first_, "bad record length");
}

TEST_F(RecordLogTest, TheCallbacksErrorStopsTheScanAndIsReturned) {
  files_.SetContents(kPath, std::string(kHeader) + first_ + second_ + third_);
  int calls = 0;
  auto scan =
      ReadLog(files_, kPath, kHeader, [&](std::uint8_t type, std::string_view, std::uint64_t) {
        ++calls;
        return type == 2 ? Status(StatusCode::kParseError, "bad second") : Status::Ok();
      });
  ASSERT_FALSE(scan.has_value());
  EXPECT_EQ(scan.error(), Status(StatusCode::kParseError, "bad second"));
  EXPECT_EQ(calls, 2);
}

// --- Writing.

TEST_F(RecordLogTest, AWriteThatFailsPartWayIsCutBackAndTheNextWriteFollowsTheLastGoodRecord) {
  auto log = LogFile::Open(files_, kPath, kHeader, 0);
  ASSERT_TRUE(log.has_value());
  ASSERT_TRUE(log->Write(first_).ok());
  for (std::size_t written = 0; written < second_.size(); ++written) {
    SCOPED_TRACE("the disk filled after " + std::to_string(written) + " bytes");
    files_.FailNextWriteAfter(written);
    const Status s = log->Write(second_);
    EXPECT_EQ(s, Status(StatusCode::kIoError, "data/log: write: No space left on device"));
    EXPECT_EQ(files_.Contents(kPath).size(), after_first_);
    EXPECT_EQ(log->size(), after_first_);
    ExpectStop(after_first_, "");
  }
  ASSERT_TRUE(log->Write(third_).ok());
  ExpectStop(after_first_ + third_.size(), "");
  ASSERT_EQ(records_.size(), 2U);
  EXPECT_EQ(records_[1].payload, "third");
}

TEST_F(RecordLogTest, AHeaderWriteThatFailsLeavesAnEmptyFileAndAnError) {
  files_.FailNextWriteAfter(3);
  auto log = LogFile::Open(files_, kPath, kHeader, 0);
  ASSERT_FALSE(log.has_value());
  EXPECT_EQ(log.error().code(), StatusCode::kIoError);
  EXPECT_EQ(files_.Contents(kPath), "");
  ExpectStop(0, "torn header");
}

TEST_F(RecordLogTest, OpenCutsTheFileAtTheGivenSizeAndAppendsThere) {
  files_.SetContents(kPath, std::string(kHeader) + first_ + second_.substr(0, 7));
  ExpectStop(after_first_, "truncated record header");
  auto log = LogFile::Open(files_, kPath, kHeader, after_first_);
  ASSERT_TRUE(log.has_value());
  EXPECT_EQ(files_.Contents(kPath).size(), after_first_);
  ASSERT_TRUE(log->Write(second_).ok());
  ExpectStop(after_first_ + second_.size(), "");
  EXPECT_EQ(records_.size(), 2U);
}

TEST_F(RecordLogTest, OpenStartsAFreshFileWhenTheSizeIsShorterThanTheHeader) {
  files_.SetContents(kPath, "GCTEleftovers of something");
  auto log = LogFile::Open(files_, kPath, kHeader, 4);
  ASSERT_TRUE(log.has_value());
  EXPECT_EQ(files_.Contents(kPath), kHeader);
  EXPECT_EQ(log->size(), kHeader.size());
}

TEST_F(RecordLogTest, AFileThatCannotBeOpenedIsAnIoError) {
  files_.FailOpens(true);
  auto log = LogFile::Open(files_, kPath, kHeader, 0);
  ASSERT_FALSE(log.has_value());
  EXPECT_EQ(log.error().code(), StatusCode::kIoError);
}

TEST_F(RecordLogTest, SyncsReachTheFileDirectlyOrThroughAHandle) {
  auto log = LogFile::Open(files_, kPath, kHeader, 0);
  ASSERT_TRUE(log.has_value());
  ASSERT_TRUE(log->Sync().ok());
  auto handle = log->NewSyncHandle();
  ASSERT_NE(handle, nullptr);
  log->Close();  // the handle outlives the writer
  ASSERT_TRUE(handle->Sync().ok());
  EXPECT_EQ(files_.syncs(kPath), 2);
  files_.FailSyncs(true);
  EXPECT_EQ(handle->Sync().code(), StatusCode::kIoError);
  // A closed log has nothing to sync.
  EXPECT_TRUE(log->Sync().ok());
  EXPECT_EQ(log->NewSyncHandle(), nullptr);
}

// --- The real file.

class PosixRecordLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gc_record_log_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PosixRecordLogTest, AWriteTheKernelRefusesPartWayIsCutBack) {
  const fs::path path = dir_ / "log";
  auto log = LogFile::Open(PosixFileSystem(), path, kHeader, 0);
  ASSERT_TRUE(log.has_value()) << log.error().ToString();
  const std::string first = Frame(1, "first record");
  ASSERT_TRUE(log->Write(first).ok());
  const std::uint64_t good = log->size();
  ASSERT_EQ(fs::file_size(path), good);

  // A file size limit 5 bytes past the end: the kernel takes 5 bytes of the
  // next record, then refuses the rest (EFBIG; SIGXFSZ ignored).
  Status s;
  {
    const FileSizeLimit limit(good + 5);
    ASSERT_TRUE(limit.ok());
    s = log->Write(Frame(2, "this one does not fit"));
  }

  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.message().rfind(path.string() + ": write: ", 0), 0U) << s.message();
  EXPECT_EQ(fs::file_size(path), good);
  EXPECT_EQ(log->size(), good);
  ASSERT_TRUE(log->Write(Frame(3, "third")).ok());
  ASSERT_TRUE(log->Sync().ok());

  std::vector<std::string> payloads;
  auto scan = ReadLog(PosixFileSystem(), path, kHeader,
                      [&](std::uint8_t, std::string_view payload, std::uint64_t) {
                        payloads.emplace_back(payload);
                        return Status::Ok();
                      });
  ASSERT_TRUE(scan.has_value()) << scan.error().ToString();
  EXPECT_EQ(scan->tail_error, "");
  EXPECT_EQ(scan->good_bytes, fs::file_size(path));
  EXPECT_EQ(payloads, (std::vector<std::string>{"first record", "third"}));
}

TEST_F(PosixRecordLogTest, AMissingFileSaysWhichAndWhy) {
  auto scan = ReadLog(PosixFileSystem(), dir_ / "nothing", kHeader,
                      [](std::uint8_t, std::string_view, std::uint64_t) { return Status::Ok(); });
  ASSERT_FALSE(scan.has_value());
  EXPECT_EQ(scan.error(), Status(StatusCode::kIoError, (dir_ / "nothing").string() +
                                                           ": open: No such file or directory"));
}

// Issue 22: one flipped byte in a chunk segment cut it there, losing the
// intact records after it. With skip_damaged the damaged record is stepped
// over and the ones after it are read; the WAL's default still stops.
class SkipDamagedTest : public RecordLogTest {
 protected:
  Result<LogScan> ReadSkipping() {
    records_.clear();
    return ReadLog(
        files_, kPath, kHeader,
        [this](std::uint8_t type, std::string_view payload, std::uint64_t offset) {
          records_.push_back({type, std::string(payload), offset});
          return Status::Ok();
        },
        /*skip_damaged=*/true);
  }
  std::vector<std::uint8_t> Types() const {
    std::vector<std::uint8_t> out;
    for (const Record& r : records_) out.push_back(r.type);
    return out;
  }
};

TEST_F(SkipDamagedTest, AFlippedPayloadByteLosesThatRecordOnly) {
  std::string contents = std::string(kHeader) + first_ + second_ + third_;
  contents[after_first_ + 7] ^= 0x20;  // inside the second record's payload
  files_.SetContents(kPath, contents);
  ExpectStop(after_first_, "bad crc");  // the default (the WAL's) stops there
  auto scan = ReadSkipping();
  ASSERT_TRUE(scan.has_value());
  EXPECT_EQ(Types(), (std::vector<std::uint8_t>{1, 3}));
  EXPECT_EQ(records_[1].payload, "third");
  EXPECT_EQ(scan->skipped_records, 1U);
  EXPECT_EQ(scan->skipped_bytes, second_.size());
  EXPECT_EQ(scan->first_skipped_offset, after_first_);
  EXPECT_EQ(scan->good_bytes, contents.size());
  EXPECT_EQ(scan->tail_error, "");
}

TEST_F(SkipDamagedTest, ADamagedLengthIsResyncedOnTheNextGoodRecord) {
  std::string contents = std::string(kHeader) + first_ + second_ + third_;
  contents[after_first_ + 2] = '\x7f';  // the second record's length: 8 MB
  files_.SetContents(kPath, contents);
  auto scan = ReadSkipping();
  ASSERT_TRUE(scan.has_value());
  EXPECT_EQ(Types(), (std::vector<std::uint8_t>{1, 3}));
  EXPECT_EQ(scan->skipped_bytes, second_.size());
  EXPECT_EQ(scan->tail_error, "");
}

TEST_F(SkipDamagedTest, DamageWithNothingGoodAfterItIsStillATornTail) {
  std::string contents = std::string(kHeader) + first_ + second_;
  contents[contents.size() - 1] ^= 0x01;  // the last record's CRC
  files_.SetContents(kPath, contents);
  auto scan = ReadSkipping();
  ASSERT_TRUE(scan.has_value());
  EXPECT_EQ(Types(), (std::vector<std::uint8_t>{1}));
  EXPECT_EQ(scan->good_bytes, after_first_);
  EXPECT_EQ(scan->tail_error, "bad crc");
  EXPECT_EQ(scan->skipped_records, 0U);
  // A half-written record at the end, as a crash leaves it: the same.
  files_.SetContents(kPath, std::string(kHeader) + first_ + second_.substr(0, 10));
  scan = ReadSkipping();
  ASSERT_TRUE(scan.has_value());
  EXPECT_EQ(scan->good_bytes, after_first_);
  EXPECT_EQ(scan->tail_error, "truncated record");
}

}  // namespace
}  // namespace gpucanary::store
