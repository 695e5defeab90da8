#include "store/chunk.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace gpucanary::store {
namespace {

constexpr int kMiniblock = 16;
// Each sample takes at least one bit of time or value unless regular and
// constant; a bound keeps a corrupt count from allocating without limit.
constexpr std::uint64_t kMaxChunkSamples = std::uint64_t{1} << 20;
constexpr std::int64_t kMaxMantissa = std::int64_t{1} << 52;
constexpr int kMaxExponent = 9;
constexpr double kPow10[kMaxExponent + 1] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};

Status Malformed(const char* what) {
  return Status(StatusCode::kParseError, std::string("chunk: ") + what);
}

// --- Gorilla delta-of-delta, with the millisecond buckets of Prometheus's
// xor.go: 0 | 10+14 | 110+17 | 1110+20 | 1111+64 bits.
struct DodBucket {
  int prefix_bits;
  std::uint64_t prefix;
  int payload;
};
constexpr DodBucket kDodBuckets[] = {{2, 0b10, 14}, {3, 0b110, 17}, {4, 0b1110, 20}};

void WriteDod(BitBuffer& w, std::int64_t dod) {
  if (dod == 0) {
    w.WriteBit(false);
    return;
  }
  for (const DodBucket& b : kDodBuckets) {
    const std::int64_t lo = -(std::int64_t{1} << (b.payload - 1)) + 1;
    const std::int64_t hi = std::int64_t{1} << (b.payload - 1);
    if (dod >= lo && dod <= hi) {
      w.Write(b.prefix, b.prefix_bits);
      w.Write(static_cast<std::uint64_t>(dod) & ((1ULL << b.payload) - 1), b.payload);
      return;
    }
  }
  w.Write(0b1111, 4);
  w.Write(static_cast<std::uint64_t>(dod), 64);
}

std::int64_t ReadDod(BitReader& r) {
  // The prefix is 0, 10, 110, 1110 or 1111: its leading ones in one peek.
  const auto head = static_cast<std::uint32_t>(r.Peek(4));
  const int ones = std::countl_one(head << 28);
  if (ones == 0) {
    r.Skip(1);
    return 0;
  }
  r.Skip(ones == 4 ? 4 : ones + 1);
  if (ones == 4) return static_cast<std::int64_t>(r.Read(64));
  const int payload = ones == 1 ? 14 : (ones == 2 ? 17 : 20);  // kDodBuckets
  std::uint64_t v = r.Read(payload);
  // Payloads hold (lo..hi] in two's complement; hi itself wraps to the
  // negative half, so values above hi are negative.
  if (v > (1ULL << (payload - 1))) v -= (1ULL << payload);
  return static_cast<std::int64_t>(v);
}

// --- Gorilla XOR values.
struct XorState {
  std::uint64_t last = 0;
  std::uint8_t leading = 0xff;  // 0xff: no window yet
  std::uint8_t trailing = 0;
};

void WriteXor(BitBuffer& w, XorState& s, std::uint64_t bits) {
  const std::uint64_t x = bits ^ s.last;
  s.last = bits;
  if (x == 0) {
    w.WriteBit(false);
    return;
  }
  w.WriteBit(true);
  int leading = std::countl_zero(x);
  const int trailing = std::countr_zero(x);
  if (leading > 31) leading = 31;  // 5 bits
  if (s.leading != 0xff && leading >= s.leading && trailing >= s.trailing) {
    w.WriteBit(false);
    w.Write(x >> s.trailing, 64 - s.leading - s.trailing);
    return;
  }
  s.leading = static_cast<std::uint8_t>(leading);
  s.trailing = static_cast<std::uint8_t>(trailing);
  const int sig = 64 - leading - trailing;
  w.WriteBit(true);
  w.Write(static_cast<std::uint64_t>(leading), 5);
  w.Write(static_cast<std::uint64_t>(sig & 63), 6);  // 64 is written as 0
  w.Write(x >> trailing, sig);
}

bool ReadXor(BitReader& r, XorState& s) {
  // 0: the value repeats; 10: the previous window; 11: a new window.
  const auto head = static_cast<int>(r.Peek(2));
  if (head < 2) {
    r.Skip(1);
    return !r.error();
  }
  r.Skip(2);
  if (head == 3) {
    // 5 bits of leading zeros and 6 of length in one read.
    const auto header = static_cast<int>(r.Read(11));
    const int leading = header >> 6;
    int sig = header & 63;
    if (sig == 0) sig = 64;
    if (leading + sig > 64) return false;
    s.leading = static_cast<std::uint8_t>(leading);
    s.trailing = static_cast<std::uint8_t>(64 - leading - sig);
  } else if (s.leading == 0xff) {
    return false;  // a window reused before one was set
  }
  const int sig = 64 - s.leading - s.trailing;
  s.last ^= r.Read(sig) << s.trailing;
  return !r.error();
}

// --- Timestamps.
void EncodeTimes(std::span<const Sample> samples, std::string& out) {
  const std::size_t n = samples.size();
  PutZVarint(out, samples[0].t);
  const std::int64_t delta = n > 1 ? WrapSub(samples[1].t, samples[0].t) : 0;
  PutZVarint(out, delta);
  bool regular = true;
  for (std::size_t i = 2; i < n && regular; ++i) {
    regular = WrapSub(samples[i].t, samples[i - 1].t) == delta;
  }
  out.push_back(regular ? 1 : 0);
  if (regular) return;
  BitBuffer w;
  for (std::size_t i = 2; i < n; ++i) {
    WriteDod(w, WrapSub(WrapSub(samples[i].t, samples[i - 1].t),
                        WrapSub(samples[i - 1].t, samples[i - 2].t)));
  }
  w.AppendTo(out);
}

// Fills out[0..n).t.
Status DecodeTimes(std::string_view in, std::size_t& pos, std::size_t n, Sample* out) {
  std::int64_t t = 0;
  std::int64_t delta = 0;
  if (!GetZVarint(in, pos, t) || !GetZVarint(in, pos, delta) || pos >= in.size()) {
    return Malformed("truncated time header");
  }
  const auto regular = static_cast<std::uint8_t>(in[pos++]);
  if (regular > 1) return Malformed("bad time flag");
  out[0].t = t;
  if (n > 1) {
    t = WrapAdd(t, delta);
    out[1].t = t;
  }
  if (regular == 1) {
    for (std::size_t i = 2; i < n; ++i) {
      t = WrapAdd(t, delta);
      out[i].t = t;
    }
    return Status::Ok();
  }
  BitReader r(in.substr(pos));
  for (std::size_t i = 2; i < n; ++i) {
    delta = WrapAdd(delta, ReadDod(r));
    t = WrapAdd(t, delta);
    out[i].t = t;
  }
  if (r.error()) return Malformed("truncated timestamps");
  pos += r.bytes_used();
  return Status::Ok();
}

// --- Decimal values.

// The smallest e (0..9) with v == m / 10^e exactly for an integer |m| < 2^52;
// -1 when there is none. m / 10^e is one correctly rounded division of exact
// operands, so it equals what parsing the decimal text gives.
int DecimalExponent(double v) {
  if (!std::isfinite(v)) return -1;
  for (int e = 0; e <= kMaxExponent; ++e) {
    const double scaled = v * kPow10[e];
    if (std::fabs(scaled) >= static_cast<double>(kMaxMantissa)) return -1;
    const auto m = static_cast<std::int64_t>(std::llround(scaled));
    if (std::bit_cast<std::uint64_t>(static_cast<double>(m) / kPow10[e]) ==
        std::bit_cast<std::uint64_t>(v)) {
      return e;
    }
  }
  return -1;
}

// Mantissas of every value at one exponent; false when some value has none.
bool ToMantissas(std::span<const Sample> samples, int& e, std::vector<std::int64_t>& m) {
  e = 0;
  for (const Sample& s : samples) {
    const int ei = DecimalExponent(s.v);
    if (ei < 0) return false;
    e = std::max(e, ei);
  }
  m.clear();
  m.reserve(samples.size());
  for (const Sample& s : samples) {
    const double scaled = s.v * kPow10[e];
    if (std::fabs(scaled) >= static_cast<double>(kMaxMantissa)) return false;
    const auto mi = static_cast<std::int64_t>(std::llround(scaled));
    if (std::bit_cast<std::uint64_t>(static_cast<double>(mi) / kPow10[e]) !=
        std::bit_cast<std::uint64_t>(s.v)) {
      return false;
    }
    m.push_back(mi);
  }
  return true;
}

int BitWidth(std::uint64_t v) { return 64 - std::countl_zero(v); }

// Zigzagged residuals of order 1 or 2 (from index `order` on).
void Residuals(const std::vector<std::int64_t>& m, int order, std::vector<std::uint64_t>& r) {
  r.clear();
  for (std::size_t i = static_cast<std::size_t>(order); i < m.size(); ++i) {
    const std::int64_t d = m[i] - m[i - 1];
    r.push_back(ZigZag(order == 1 ? d : d - (m[i - 1] - m[i - 2])));
  }
}

std::size_t MiniblockBytes(const std::vector<std::uint64_t>& r) {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < r.size(); i += kMiniblock) {
    const std::size_t count = std::min<std::size_t>(kMiniblock, r.size() - i);
    std::uint64_t all = 0;
    for (std::size_t j = 0; j < count; ++j) all |= r[i + j];
    bytes += 1 + (count * static_cast<std::size_t>(BitWidth(all)) + 7) / 8;
  }
  return bytes;
}

void PutMiniblocks(const std::vector<std::uint64_t>& r, std::string& out) {
  for (std::size_t i = 0; i < r.size(); i += kMiniblock) {
    const int count = static_cast<int>(std::min<std::size_t>(kMiniblock, r.size() - i));
    std::uint64_t all = 0;
    for (int j = 0; j < count; ++j) all |= r[i + static_cast<std::size_t>(j)];
    const int width = BitWidth(all);
    out.push_back(static_cast<char>(width));
    PackBits(out, r.data() + i, count, width);
  }
}

void EncodeDecimal(const std::vector<std::int64_t>& m, int e, std::string& out) {
  std::vector<std::uint64_t> r1;
  std::vector<std::uint64_t> r2;
  Residuals(m, 1, r1);
  int order = 1;
  if (m.size() > 2) {
    Residuals(m, 2, r2);
    // The second-order form also stores d1.
    if (MiniblockBytes(r2) + 3 < MiniblockBytes(r1)) order = 2;
  }
  out.push_back(static_cast<char>(e));
  out.push_back(static_cast<char>(order));
  PutZVarint(out, m[0]);
  if (order == 2) {
    PutZVarint(out, m[1] - m[0]);
    PutMiniblocks(r2, out);
  } else {
    PutMiniblocks(r1, out);
  }
}

Status DecodeDecimal(std::string_view in, std::size_t& pos, std::size_t n, std::span<Sample> out) {
  if (pos + 2 > in.size()) return Malformed("truncated decimal header");
  const int e = static_cast<std::uint8_t>(in[pos++]);
  const int order = static_cast<std::uint8_t>(in[pos++]);
  if (e > kMaxExponent || (order != 1 && order != 2)) return Malformed("bad decimal header");
  std::int64_t m = 0;
  if (!GetZVarint(in, pos, m)) return Malformed("truncated decimal header");
  std::int64_t d = 0;
  if (order == 2 && n > 1 && !GetZVarint(in, pos, d)) return Malformed("truncated decimal header");
  const double scale = kPow10[e];
  out[0].v = static_cast<double>(m) / scale;
  std::size_t i = 1;
  if (order == 2 && n > 1) {
    m = WrapAdd(m, d);
    out[1].v = static_cast<double>(m) / scale;
    i = 2;
  }
  std::uint64_t r[kMiniblock];
  while (i < n) {
    const int count = static_cast<int>(std::min<std::size_t>(kMiniblock, n - i));
    if (pos >= in.size()) return Malformed("truncated miniblock");
    const int width = static_cast<std::uint8_t>(in[pos++]);
    if (width > 57) return Malformed("bad miniblock width");
    const std::size_t bytes = (static_cast<std::size_t>(count * width) + 7) / 8;
    if (pos + bytes > in.size()) return Malformed("truncated miniblock");
    // Bounded by the whole input, not the miniblock: 8-byte loads stay on
    // the fast path up to the chunk's end.
    UnpackBits(in.data() + pos, in.size() - pos, r, count, width);
    pos += bytes;
    if (order == 1 && e == 0) {
      for (int j = 0; j < count; ++j, ++i) {
        m = WrapAdd(m, UnZigZag(r[j]));
        out[i].v = static_cast<double>(m);
      }
    } else if (order == 1) {
      for (int j = 0; j < count; ++j, ++i) {
        m = WrapAdd(m, UnZigZag(r[j]));
        out[i].v = static_cast<double>(m) / scale;
      }
    } else {
      for (int j = 0; j < count; ++j, ++i) {
        d = WrapAdd(d, UnZigZag(r[j]));
        m = WrapAdd(m, d);
        out[i].v = static_cast<double>(m) / scale;
      }
    }
  }
  return Status::Ok();
}

void EncodeXorValues(std::span<const Sample> samples, std::string& out) {
  BitBuffer w;
  XorState s;
  w.Write(std::bit_cast<std::uint64_t>(samples[0].v), 64);
  s.last = std::bit_cast<std::uint64_t>(samples[0].v);
  for (std::size_t i = 1; i < samples.size(); ++i) {
    WriteXor(w, s, std::bit_cast<std::uint64_t>(samples[i].v));
  }
  w.AppendTo(out);
}

Status DecodeXorValues(std::string_view in, std::size_t& pos, std::span<Sample> out) {
  BitReader r(in.substr(pos));
  XorState s;
  s.last = r.Read(64);
  out[0].v = std::bit_cast<double>(s.last);
  for (std::size_t i = 1; i < out.size(); ++i) {
    if (!ReadXor(r, s)) return Malformed("bad xor values");
    out[i].v = std::bit_cast<double>(s.last);
  }
  if (r.error()) return Malformed("truncated xor values");
  pos += r.bytes_used();
  return Status::Ok();
}

}  // namespace

ValueEncoding EncodeChunk(std::span<const Sample> samples, std::string& out) {
  PutVarint(out, samples.size());
  const std::size_t encoding_at = out.size();
  out.push_back(0);
  EncodeTimes(samples, out);

  const std::uint64_t first = std::bit_cast<std::uint64_t>(samples[0].v);
  const bool constant = std::all_of(samples.begin(), samples.end(), [&](const Sample& s) {
    return std::bit_cast<std::uint64_t>(s.v) == first;
  });
  ValueEncoding encoding = ValueEncoding::kXor;
  if (constant) {
    encoding = ValueEncoding::kConst;
    PutFixed64(out, first);
  } else {
    std::string xor_values;
    EncodeXorValues(samples, xor_values);
    int e = 0;
    std::vector<std::int64_t> m;
    std::string decimal;
    if (ToMantissas(samples, e, m)) EncodeDecimal(m, e, decimal);
    if (!decimal.empty() && decimal.size() <= xor_values.size()) {
      encoding = ValueEncoding::kDecimal;
      out += decimal;
    } else {
      out += xor_values;
    }
  }
  out[encoding_at] = static_cast<char>(encoding);
  return encoding;
}

std::size_t ChunkSampleCount(std::string_view in) {
  std::size_t pos = 0;
  std::uint64_t n = 0;
  if (!GetVarint(in, pos, n) || n > kMaxChunkSamples) return 0;
  return static_cast<std::size_t>(n);
}

Status DecodeChunkTo(std::string_view in, std::span<Sample> out) {
  std::size_t pos = 0;
  std::uint64_t n = 0;
  if (!GetVarint(in, pos, n) || pos >= in.size()) return Malformed("truncated header");
  if (n == 0) return Malformed("no samples");
  if (n != out.size()) return Malformed("sample count differs from the buffer");
  const auto encoding = static_cast<std::uint8_t>(in[pos++]);
  if (Status status = DecodeTimes(in, pos, n, out.data()); !status.ok()) return status;
  switch (static_cast<ValueEncoding>(encoding)) {
    case ValueEncoding::kConst: {
      std::uint64_t bits = 0;
      if (!GetFixed64(in, pos, bits)) return Malformed("truncated const value");
      for (Sample& s : out) s.v = std::bit_cast<double>(bits);
      return Status::Ok();
    }
    case ValueEncoding::kDecimal:
      return DecodeDecimal(in, pos, n, out);
    case ValueEncoding::kXor:
      return DecodeXorValues(in, pos, out);
  }
  return Malformed("unknown value encoding");
}

Status DecodeChunk(std::string_view in, std::vector<Sample>& out) {
  const std::size_t n = ChunkSampleCount(in);
  if (n == 0) {
    std::size_t pos = 0;
    std::uint64_t count = 0;
    if (!GetVarint(in, pos, count)) return Malformed("truncated header");
    return Malformed(count == 0 ? "no samples" : "too many samples");
  }
  const std::size_t base = out.size();
  out.resize(base + n);
  Status status = DecodeChunkTo(in, std::span<Sample>(out.data() + base, n));
  if (!status.ok()) out.resize(base);
  return status;
}

Status DecodeChunkRange(std::string_view in, std::int64_t mint, std::int64_t maxt,
                        std::vector<Sample>& out) {
  const std::size_t base = out.size();
  if (Status s = DecodeChunk(in, out); !s.ok()) return s;
  auto begin = out.begin() + static_cast<std::ptrdiff_t>(base);
  auto lo = std::lower_bound(begin, out.end(), mint,
                             [](const Sample& s, std::int64_t t) { return s.t < t; });
  auto hi = std::upper_bound(lo, out.end(), maxt,
                             [](std::int64_t t, const Sample& s) { return t < s.t; });
  out.erase(hi, out.end());
  out.erase(begin, lo);
  return Status::Ok();
}

// --- OpenChunk: [t0:64][v0:64] then per sample: dod, xor.

void OpenChunk::Append(std::int64_t t, double v) {
  const auto bits = std::bit_cast<std::uint64_t>(v);
  if (count_ == 0) {
    stream_.Write(static_cast<std::uint64_t>(t), 64);
    stream_.Write(bits, 64);
    first_t_ = t;
    last_delta_ = 0;
  } else {
    const std::int64_t delta = WrapSub(t, last_t_);
    WriteDod(stream_, WrapSub(delta, last_delta_));
    last_delta_ = delta;
    XorState s{last_bits_, leading_, trailing_};
    WriteXor(stream_, s, bits);
    leading_ = s.leading;
    trailing_ = s.trailing;
  }
  last_t_ = t;
  last_bits_ = bits;
  ++count_;
}

double OpenChunk::last_value() const { return std::bit_cast<double>(last_bits_); }

void OpenChunk::Decode(std::vector<Sample>& out) const {
  if (count_ == 0) return;
  DecodeStream(Snapshot(), count_, out);
}

std::string OpenChunk::Snapshot() const {
  std::string bytes;
  stream_.AppendTo(bytes);
  return bytes;
}

void OpenChunk::DecodeStream(std::string_view stream, std::size_t count, std::vector<Sample>& out) {
  if (count == 0) return;
  BitReader r(stream);
  auto t = static_cast<std::int64_t>(r.Read(64));
  XorState s;
  s.last = r.Read(64);
  out.push_back({t, std::bit_cast<double>(s.last)});
  std::int64_t delta = 0;
  for (std::size_t i = 1; i < count && !r.error(); ++i) {
    delta = WrapAdd(delta, ReadDod(r));
    t = WrapAdd(t, delta);
    ReadXor(r, s);
    out.push_back({t, std::bit_cast<double>(s.last)});
  }
}

void OpenChunk::Clear() {
  stream_.Clear();
  stream_.bytes.shrink_to_fit();
  count_ = 0;
  leading_ = 0xff;
  trailing_ = 0;
}

}  // namespace gpucanary::store
