#include "store/segment.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "core/mutex.h"
#include "store/bits.h"
#include "store/file.h"
#include "store/record_log.h"

namespace gpucanary::store {
namespace {

void PutStr(std::string& out, std::string_view s) {
  PutVarint(out, s.size());
  out.append(s);
}

bool GetStr(std::string_view in, std::size_t& pos, std::string& s) {
  std::uint64_t n = 0;
  if (!GetVarint(in, pos, n) || n > in.size() - pos) return false;
  s.assign(in.substr(pos, n));
  pos += n;
  return true;
}

std::uint32_t Crc32(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // The index is at most a few hundred MiB; feed it in uInt-sized pieces.
  while (!data.empty()) {
    const std::size_t n = std::min<std::size_t>(data.size(), 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(n));
    data.remove_prefix(n);
  }
  return static_cast<std::uint32_t>(crc);
}

Status Corrupt(const std::filesystem::path& path, std::string_view what) {
  return Status(StatusCode::kParseError, path.string() + ": " + std::string(what));
}

void BuildPostings(SegmentIndex& index) {
  index.all_ids.clear();
  for (std::uint64_t id = 0; id < index.labels.size(); ++id) {
    index.postings.Add(id, index.labels[id]);
    index.all_ids.push_back(id);
  }
}

}  // namespace

std::string SegmentFileName(std::uint32_t id) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08u", id);
  return buf;
}

void PutLabels(std::string& out, const model::Labels& labels) {
  PutVarint(out, labels.size());
  for (const model::Label& l : labels) {
    PutStr(out, l.name);
    PutStr(out, l.value);
  }
}

bool GetLabels(std::string_view in, std::size_t& pos, model::Labels& labels) {
  std::uint64_t n = 0;
  if (!GetVarint(in, pos, n) || n > in.size() - pos) return false;
  labels.clear();
  labels.resize(n);
  for (model::Label& l : labels) {
    if (!GetStr(in, pos, l.name) || !GetStr(in, pos, l.value)) return false;
  }
  return true;
}

void PutSegChunkHeader(std::string& out, std::uint64_t ref, std::int64_t mint, std::int64_t maxt) {
  PutVarint(out, ref);
  PutZVarint(out, mint);
  PutZVarint(out, maxt);
}

Status WriteSegmentIndex(const std::filesystem::path& path, std::int64_t mint, std::int64_t maxt,
                         std::vector<IndexEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const IndexEntry& a, const IndexEntry& b) { return a.labels < b.labels; });
  std::string out(kIndexMagic);
  PutZVarint(out, mint);
  PutZVarint(out, maxt);
  PutVarint(out, entries.size());
  for (const IndexEntry& e : entries) {
    PutLabels(out, e.labels);
    PutVarint(out, e.chunks.size());
    for (const ChunkLoc& c : e.chunks) {
      PutVarint(out, c.offset);
      PutVarint(out, c.length);
      PutZVarint(out, c.mint);
      PutZVarint(out, c.maxt);
    }
  }
  const std::uint32_t crc = Crc32(out);
  char b[4];
  std::memcpy(b, &crc, 4);
  out.append(b, 4);
  return WriteFileAtomic(path, out);
}

Result<std::shared_ptr<SegmentIndex>> ReadSegmentIndex(const std::filesystem::path& path) {
  auto contents = PosixFileSystem().ReadFile(path);
  if (!contents) return Error(contents.error());
  const std::string& data = *contents;
  if (data.size() < kIndexMagic.size() + 4 || data.compare(0, kIndexMagic.size(), kIndexMagic)) {
    return Error(Corrupt(path, "not a segment index (bad magic)"));
  }
  std::uint32_t crc = 0;
  std::memcpy(&crc, data.data() + data.size() - 4, 4);
  const std::string_view body(data.data(), data.size() - 4);
  if (crc != Crc32(body)) return Error(Corrupt(path, "bad crc"));

  auto index = std::make_shared<SegmentIndex>();
  std::size_t pos = kIndexMagic.size();
  std::uint64_t nseries = 0;
  if (!GetZVarint(body, pos, index->mint) || !GetZVarint(body, pos, index->maxt) ||
      !GetVarint(body, pos, nseries) || nseries > body.size()) {
    return Error(Corrupt(path, "truncated header"));
  }
  model::Labels labels;
  for (std::uint64_t i = 0; i < nseries; ++i) {
    std::uint64_t nchunks = 0;
    if (!GetLabels(body, pos, labels) || !GetVarint(body, pos, nchunks) ||
        nchunks > body.size() - pos) {
      return Error(Corrupt(path, "truncated series " + std::to_string(i)));
    }
    std::vector<ChunkLoc> chunks(nchunks);
    for (ChunkLoc& c : chunks) {
      std::uint64_t length = 0;
      if (!GetVarint(body, pos, c.offset) || !GetVarint(body, pos, length) ||
          !GetZVarint(body, pos, c.mint) || !GetZVarint(body, pos, c.maxt) ||
          length > std::numeric_limits<std::uint32_t>::max()) {
        return Error(Corrupt(path, "truncated chunks of series " + std::to_string(i)));
      }
      c.length = static_cast<std::uint32_t>(length);
    }
    index->labels.push_back(InternLabels(index->symbols, labels));
    index->memory_bytes += 8 * labels.size() + sizeof(ChunkLoc) * chunks.size() + 64;
    index->chunks.push_back(std::move(chunks));
  }
  BuildPostings(*index);
  return index;
}

Result<std::vector<IndexEntry>> ScanSegment(const std::filesystem::path& path,
                                            std::uint64_t* good_bytes, std::string* tail_error,
                                            std::int64_t* mint, std::int64_t* maxt,
                                            std::uint64_t* skipped_bytes) {
  std::map<std::uint64_t, IndexEntry> by_ref;
  std::int64_t lo = std::numeric_limits<std::int64_t>::max();
  std::int64_t hi = std::numeric_limits<std::int64_t>::min();
  auto scan = ReadLog(
      PosixFileSystem(), path, kSegmentMagic,
      [&](std::uint8_t type, std::string_view payload, std::uint64_t offset) {
        std::size_t pos = 0;
        std::uint64_t ref = 0;
        if (!GetVarint(payload, pos, ref)) {
          return Corrupt(path, "record without a series ref");
        }
        if (type == kSegSeriesRecord) {
          model::Labels labels;
          if (!GetLabels(payload, pos, labels)) {
            return Corrupt(path, "bad series record");
          }
          by_ref[ref].labels = std::move(labels);
          return Status::Ok();
        }
        if (type != kSegChunkRecord) return Corrupt(path, "unknown record type");
        ChunkLoc c;
        if (!GetZVarint(payload, pos, c.mint) || !GetZVarint(payload, pos, c.maxt)) {
          return Corrupt(path, "bad chunk record");
        }
        auto it = by_ref.find(ref);
        if (it == by_ref.end()) return Corrupt(path, "chunk of an unknown series");
        c.offset = offset + pos;
        c.length = static_cast<std::uint32_t>(payload.size() - pos);
        it->second.chunks.push_back(c);
        lo = std::min(lo, c.mint);
        hi = std::max(hi, c.maxt);
        return Status::Ok();
      },
      /*skip_damaged=*/true);
  if (!scan) return Error(scan.error());
  if (good_bytes != nullptr) *good_bytes = scan->good_bytes;
  if (skipped_bytes != nullptr) *skipped_bytes = scan->skipped_bytes;
  if (tail_error != nullptr) *tail_error = scan->tail_error;
  if (mint != nullptr) *mint = lo;
  if (maxt != nullptr) *maxt = hi;
  std::vector<IndexEntry> out;
  for (auto& [ref, e] : by_ref) {
    if (!e.chunks.empty()) out.push_back(std::move(e));
  }
  return out;
}

Result<std::unique_ptr<SealedSegment>> SealedSegment::Open(
    const std::filesystem::path& dir, std::uint32_t id,
    const std::function<void(std::string_view)>& log) {
  std::unique_ptr<SealedSegment> seg(new SealedSegment());
  seg->id_ = id;
  seg->path_ = dir / SegmentFileName(id);
  seg->index_path_ = dir / (SegmentFileName(id) + ".idx");
  std::error_code ec;
  seg->bytes_ = std::filesystem::file_size(seg->path_, ec);
  if (ec) return Error(StatusCode::kIoError, seg->path_.string() + ": " + ec.message());
  auto map = Mapping::Map(seg->path_, seg->bytes_);
  if (!map) return Error(map.error());
  seg->map_ = std::move(*map);

  auto index = ReadSegmentIndex(seg->index_path_);
  if (!index) {
    if (log) log("store: " + index.error().message() + "; rebuilding it from the segment");
    std::uint64_t good = 0;
    std::string tail;
    std::int64_t lo = 0;
    std::int64_t hi = 0;
    std::uint64_t skipped = 0;
    auto entries = ScanSegment(seg->path_, &good, &tail, &lo, &hi, &skipped);
    if (!entries) return Error(entries.error());
    if (skipped > 0 && log) {
      log("store: " + seg->path_.string() + ": " + std::to_string(skipped) +
          " damaged bytes skipped (their chunks are lost; the rest of the segment is kept)");
    }
    if (!tail.empty() && log) {
      log("store: " + seg->path_.string() + ": chunks after offset " + std::to_string(good) +
          " unreadable (" + tail + "), skipped");
    }
    if (Status s = WriteSegmentIndex(seg->index_path_, lo, hi, std::move(*entries)); !s.ok()) {
      return Error(s);
    }
    index = ReadSegmentIndex(seg->index_path_);
    if (!index) return Error(index.error());
  }
  seg->mint_ = (*index)->mint;
  seg->maxt_ = (*index)->maxt;
  seg->log_ = log;
  return seg;
}

bool SealedSegment::Intact(const ChunkLoc& loc) const {
  std::call_once(verified_, [this] {
    const std::string_view data(map_->data(), bytes_);
    auto scan = ScanRecords(
        data, path_, kSegmentMagic,
        [this](std::uint8_t, std::string_view payload, std::uint64_t offset) {
          // Consecutive good records are one stretch (their framing between).
          if (!intact_.empty() && intact_.back().second + kRecordOverhead >= offset) {
            intact_.back().second = offset + payload.size();
          } else {
            intact_.emplace_back(offset, offset + payload.size());
          }
          return Status::Ok();
        },
        /*skip_damaged=*/true);
    if (!scan) {
      intact_.clear();  // not even its header: nothing is read from it
      if (log_) log_("store: " + scan.error().message() + "; its chunks are not read");
      return;
    }
    if (log_ && (scan->skipped_bytes > 0 || !scan->tail_error.empty())) {
      log_("store: " + path_.string() + ": " + std::to_string(scan->skipped_bytes) +
           " damaged bytes from offset " + std::to_string(scan->first_skipped_offset) +
           (scan->tail_error.empty()
                ? std::string()
                : ", and the records after offset " + std::to_string(scan->good_bytes) + " (" +
                      scan->tail_error + ")") +
           ": the chunks there are left out of every answer; the rest of the segment is read");
    }
  });
  const std::uint64_t end = loc.offset + loc.length;
  auto it = std::upper_bound(
      intact_.begin(), intact_.end(), loc.offset,
      [](std::uint64_t offset, const auto& stretch) { return offset < stretch.first; });
  if (it == intact_.begin()) return false;
  --it;
  return loc.offset >= it->first && end <= it->second;
}

SealedSegment::~SealedSegment() = default;

Result<std::shared_ptr<const SegmentIndex>> SealedSegment::Index() const {
  MutexLock lock(mu_);
  if (index_ == nullptr) {
    auto index = ReadSegmentIndex(index_path_);
    if (!index) return Error(index.error());
    index_ = std::move(*index);
  }
  return index_;
}

void SealedSegment::ReleaseIndex() const {
  MutexLock lock(mu_);
  index_.reset();
}

bool SealedSegment::index_loaded() const {
  MutexLock lock(mu_);
  return index_ != nullptr;
}

Result<std::string_view> SealedSegment::Chunk(const ChunkLoc& loc) const {
  if (loc.offset > bytes_ || loc.length > bytes_ - loc.offset) {
    return Error(Corrupt(path_, "chunk at " + std::to_string(loc.offset) + " past the end"));
  }
  return std::string_view(map_->data() + loc.offset, loc.length);
}

void SealedSegment::Remove() {
  std::error_code ec;
  std::filesystem::remove(index_path_, ec);
  std::filesystem::remove(path_, ec);
}

}  // namespace gpucanary::store
