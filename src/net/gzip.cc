#include "net/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "net/http_message.h"

namespace gpucanary::net {
namespace {

// windowBits 15 (32 KiB, zlib's largest) + 16: write and read a gzip wrapper
// rather than a zlib one (zlib manual, deflateInit2 / inflateInit2).
constexpr int kGzipWindowBits = 15 + 16;
constexpr int kMemLevel = 8;  // zlib's default
constexpr std::size_t kInflateChunk = std::size_t{64} * 1024;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ): only whether
// it is zero matters. A malformed weight counts as non-zero (lenient, like
// browsers); `params` is what follows the coding, e.g. ";q=0.5".
bool WeightIsZero(std::string_view params) {
  while (!params.empty()) {
    const std::size_t semi = params.find(';');
    if (semi == std::string_view::npos) return false;
    params.remove_prefix(semi + 1);
    const std::string_view param = Trim(params.substr(0, params.find(';')));
    if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
      const std::string_view q = Trim(param.substr(2));
      if (q.empty() || q[0] != '0') return false;
      return q.find_first_not_of("0.", 1) == std::string_view::npos;
    }
  }
  return false;
}

// One deflate state per thread, reused. deflateInit2 allocates and zeroes
// about 270 KB, which on a 53 KB scrape at level 1 costs 40-50 us, as much as
// compressing it; deflateReset only clears the 64 KB hash heads (about 3 us).
// See docs/performance.md. An io thread keeps one for its lifetime.
class Deflater {
 public:
  Deflater() = default;
  ~Deflater() {
    if (ready_) deflateEnd(&zs_);
  }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  // A stream ready for a new gzip member at `level`; nullptr when zlib
  // cannot allocate.
  z_stream* Get(int level) {
    if (ready_ && level_ == level && deflateReset(&zs_) == Z_OK) return &zs_;
    if (ready_) deflateEnd(&zs_);
    zs_ = z_stream{};
    ready_ = deflateInit2(&zs_, level, Z_DEFLATED, kGzipWindowBits, kMemLevel,
                          Z_DEFAULT_STRATEGY) == Z_OK;
    level_ = level;
    return ready_ ? &zs_ : nullptr;
  }

 private:
  z_stream zs_{};
  bool ready_ = false;
  int level_ = 0;
};

}  // namespace

Result<std::string> GzipCompress(std::string_view data, int level) {
  if (level < 1 || level > 9) {
    return Error(StatusCode::kInvalidArgument,
                 "gzip level must be 1..9, not " + std::to_string(level));
  }
  // zlib counts in 32 bits; the bound on the output must fit too.
  if (data.size() >= std::numeric_limits<uInt>::max() / 2) {
    return Error(StatusCode::kInvalidArgument, "gzip input of 2 GiB or more");
  }
  thread_local Deflater deflater;
  z_stream* zs = deflater.Get(level);
  if (zs == nullptr) return Error(StatusCode::kInternal, "deflateInit2 failed");
  std::string out(deflateBound(zs, static_cast<uLong>(data.size())), '\0');
  // zlib's API is not const-correct; it never writes through next_in.
  zs->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs->avail_in = static_cast<uInt>(data.size());
  zs->next_out = reinterpret_cast<Bytef*>(out.data());
  zs->avail_out = static_cast<uInt>(out.size());
  // deflateBound guarantees one Z_FINISH call completes.
  const int rc = deflate(zs, Z_FINISH);
  out.resize(zs->total_out);
  if (rc != Z_STREAM_END) return Error(StatusCode::kInternal, "deflate failed");
  return out;
}

Result<std::string> GzipDecompress(std::string_view data, std::size_t max_bytes) {
  z_stream zs{};
  if (inflateInit2(&zs, kGzipWindowBits) != Z_OK) {
    return Error(StatusCode::kInternal, "inflateInit2 failed");
  }
  std::string out;
  std::size_t in_pos = 0;
  int rc = Z_OK;
  while (true) {
    if (zs.avail_in == 0 && in_pos < data.size()) {
      const std::size_t n = std::min<std::size_t>(data.size() - in_pos, 1U << 30);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_pos));
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    const std::size_t used = out.size();
    if (used >= max_bytes + 1) break;
    out.resize(std::min(used + kInflateChunk, max_bytes + 1));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    zs.avail_out = static_cast<uInt>(out.size() - used);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(out.size() - zs.avail_out);
    if (rc == Z_STREAM_END) {
      // Another member may follow (RFC 1952 §2.2).
      if (zs.avail_in == 0 && in_pos == data.size()) break;
      if (inflateReset(&zs) != Z_OK) break;
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_pos == data.size()) break;  // truncated
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
  }
  const char* msg = zs.msg;
  inflateEnd(&zs);
  if (out.size() > max_bytes) {
    return Error(StatusCode::kOutOfRange,
                 "gzip body decompresses to more than " + std::to_string(max_bytes) + " bytes");
  }
  if (rc != Z_STREAM_END) {
    return Error(StatusCode::kParseError,
                 std::string("bad gzip data: ") + (msg != nullptr ? msg : "truncated stream"));
  }
  return out;
}

bool IsGzipCoding(std::string_view coding) {
  return EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip");
}

bool AcceptsGzip(std::string_view accept_encoding) {
  int gzip = -1;  // -1 not listed, 0 refused, 1 accepted
  int star = -1;
  while (!accept_encoding.empty()) {
    const std::size_t comma = accept_encoding.find(',');
    const std::string_view element = accept_encoding.substr(0, comma);
    accept_encoding.remove_prefix(comma == std::string_view::npos ? accept_encoding.size()
                                                                  : comma + 1);
    const std::size_t semi = element.find(';');
    const std::string_view coding = Trim(element.substr(0, semi));
    const int verdict =
        WeightIsZero(semi == std::string_view::npos ? "" : element.substr(semi)) ? 0 : 1;
    if (IsGzipCoding(coding)) {
      gzip = std::max(gzip, verdict);
    } else if (coding == "*") {
      star = std::max(star, verdict);
    }
  }
  return gzip >= 0 ? gzip == 1 : star == 1;
}

}  // namespace gpucanary::net
