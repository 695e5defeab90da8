#include "store/record_log.h"

#include <zlib.h>

#include <cstring>
#include <utility>

namespace gpucanary::store {
namespace {

std::uint32_t Crc(std::uint8_t type, std::string_view payload) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const Bytef t = type;
  crc = crc32(crc, &t, 1);
  // zlib takes uInt lengths; records are at most 16 MiB.
  crc =
      crc32(crc, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
  return static_cast<std::uint32_t>(crc);
}

void PutU32(std::string& out, std::uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

std::uint32_t GetU32(const char* p) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

void AppendRecord(std::string& out, std::uint8_t type, std::string_view payload) {
  PutU32(out, static_cast<std::uint32_t>(payload.size()));
  out.push_back(static_cast<char>(type));
  out.append(payload);
  PutU32(out, Crc(type, payload));
}

Result<LogFile> LogFile::Open(FileSystem& files, const std::filesystem::path& path,
                              std::string_view header, std::uint64_t size) {
  LogFile f;
  f.path_ = path;
  const bool exists = files.Exists(path);
  auto file = files.OpenWritable(path);
  if (!file) return Error(file.error());
  f.file_ = std::move(*file);
  if (!exists || size < header.size()) {
    if (Status s = f.file_->Truncate(0); !s.ok()) return Error(s);
    f.size_ = 0;
    if (Status s = f.Write(header); !s.ok()) return Error(s);
    return f;
  }
  if (Status s = f.file_->Truncate(size); !s.ok()) return Error(s);
  f.size_ = size;
  return f;
}

Status LogFile::Write(std::string_view bytes) {
  if (Status s = file_->WriteAt(size_, bytes); !s.ok()) {
    // Leave no half record behind for the next write to follow.
    (void)file_->Truncate(size_);
    return s;
  }
  size_ += bytes.size();
  return Status::Ok();
}

Status LogFile::Sync() { return file_ != nullptr ? file_->Sync() : Status::Ok(); }

std::unique_ptr<SyncHandle> LogFile::NewSyncHandle() const {
  return file_ != nullptr ? file_->NewSyncHandle() : nullptr;
}

namespace {

// Whether a whole, good record starts at `pos` (its length within bounds and
// `max_len`, its CRC right).
bool GoodRecordAt(std::string_view data, std::size_t pos, std::size_t max_len) {
  RecordView record;
  return CheckRecordAt(data, pos, &record).empty() && record.payload.size() <= max_len;
}

}  // namespace

std::string_view CheckRecordAt(std::string_view data, std::size_t pos, RecordView* out) {
  if (pos > data.size() || data.size() - pos < kRecordOverhead) return "truncated record header";
  const std::uint32_t len = GetU32(data.data() + pos);
  if (len > kMaxRecordBytes) return "bad record length";
  if (data.size() - pos - kRecordOverhead < len) return "truncated record";
  const auto type = static_cast<std::uint8_t>(data[pos + 4]);
  const std::string_view payload = data.substr(pos + 5, len);
  if (GetU32(data.data() + pos + 5 + len) != Crc(type, payload)) return "bad crc";
  if (out != nullptr) *out = {type, payload};
  return {};
}

Result<LogScan> ReadLog(
    FileSystem& files, const std::filesystem::path& path, std::string_view header,
    const std::function<Status(std::uint8_t, std::string_view, std::uint64_t)>& fn,
    bool skip_damaged) {
  auto contents = files.ReadFile(path);
  if (!contents) return Error(contents.error());
  return ScanRecords(*contents, path, header, fn, skip_damaged);
}

Result<LogScan> ScanRecords(
    std::string_view data, const std::filesystem::path& path, std::string_view header,
    const std::function<Status(std::uint8_t, std::string_view, std::uint64_t)>& fn,
    bool skip_damaged) {
  LogScan scan;
  scan.file_bytes = data.size();
  if (data.size() < header.size() || data.substr(0, header.size()) != header) {
    if (data.size() < header.size() && header.substr(0, data.size()) == data) {
      scan.tail_error = "torn header";  // created, crashed before the header was whole
      return scan;
    }
    return Error(StatusCode::kParseError, path.string() + ": not a gpucanary log (bad magic)");
  }
  std::size_t pos = header.size();
  scan.good_bytes = pos;
  while (pos < data.size()) {
    RecordView record;
    const std::string_view error = CheckRecordAt(data, pos, &record);
    const std::uint32_t len = data.size() - pos < kRecordOverhead ? 0 : GetU32(data.data() + pos);
    if (!error.empty()) {
      // Where the next good record is, if anywhere: after this one when its
      // length can be trusted, else the first position a record checks out.
      std::size_t next = data.size();
      if (skip_damaged) {
        const std::size_t after = pos + kRecordOverhead + len;
        if (error == "bad crc" && after < data.size() &&
            GoodRecordAt(data, after, kMaxRecordBytes)) {
          next = after;
        } else {
          for (std::size_t p = pos + 1; p + kRecordOverhead <= data.size(); ++p) {
            if (GoodRecordAt(data, p, kMaxResyncRecordBytes)) {
              next = p;
              break;
            }
          }
        }
      }
      if (next == data.size()) {
        scan.tail_error = std::string(error);
        break;
      }
      if (scan.skipped_records == 0) scan.first_skipped_offset = pos;
      ++scan.skipped_records;
      scan.skipped_bytes += next - pos;
      pos = next;
      continue;
    }
    if (Status s = fn(record.type, record.payload, pos + 5); !s.ok()) return Error(s);
    pos += kRecordOverhead + record.payload.size();
    scan.good_bytes = pos;
  }
  return scan;
}

}  // namespace gpucanary::store
