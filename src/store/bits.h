#pragma once
// Bit-level writers and readers for chunk encodings (docs/storage-format.md).
// BitBuffer/BitReader are MSB-first, for Gorilla's prefix codes; PackBits /
// UnpackBits put fixed-width integers LSB-first, for miniblocks. Readers never
// read past the end of their input: running out sets a sticky error flag.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpucanary::store {

// Bits, most significant first: whole bytes plus a partial last byte, kept
// apart so writing can resume after the buffer is read (an open chunk).
struct BitBuffer {
  std::string bytes;
  std::uint8_t cur = 0;  // the partial byte, its high `used` bits meaningful
  int used = 0;

  // Appends the low `n` bits of `v` (n in 0..64).
  void Write(std::uint64_t v, int n) {
    while (n > 0) {
      const int take = n < 8 - used ? n : 8 - used;
      // take is 1..8 (used is 0..7); the analyzer cannot see that bound.
      const std::uint64_t part =
          (v >> (n - take)) &
          ((1ULL << take) - 1);  // NOLINT(clang-analyzer-core.UndefinedBinaryOperatorResult)
      cur = static_cast<std::uint8_t>(cur | (part << (8 - used - take)));
      used += take;
      n -= take;
      if (used == 8) {
        bytes.push_back(static_cast<char>(cur));
        cur = 0;
        used = 0;
      }
    }
  }
  void WriteBit(bool b) { Write(b ? 1 : 0, 1); }

  // Appends the bits to `out`, the partial byte padded with zeros.
  void AppendTo(std::string& out) const {
    out.append(bytes);
    if (used > 0) out.push_back(static_cast<char>(cur));
  }
  void Clear() {
    bytes.clear();
    cur = 0;
    used = 0;
  }
};

// Reads what BitBuffer wrote, through a 64-bit buffer refilled a byte at a
// time (Gorilla decoding reads a few bits per call).
class BitReader {
 public:
  explicit BitReader(std::string_view in)
      : start_(in.data()), p_(in.data()), end_(in.data() + in.size()) {}

  // Reads `n` bits (0..64); 0 and error() once the input runs out.
  std::uint64_t Read(int n) {
    if (n > 56) {
      const std::uint64_t hi = Read(n - 32);
      return (hi << 32) | Read(32);
    }
    if (n == 0) return 0;
    if (avail_ < n) {
      Refill();
      if (avail_ < n) {
        error_ = true;
        return 0;
      }
    }
    const std::uint64_t v = buf_ >> (64 - n);
    buf_ <<= n;
    avail_ -= n;
    return v;
  }
  bool ReadBit() { return Read(1) != 0; }

  // The next `n` bits (1..56) without consuming them; bits past the end of
  // the input read as 0 (Skip then reports the error).
  std::uint64_t Peek(int n) {
    if (avail_ < n) Refill();
    return buf_ >> (64 - n);
  }
  // Consumes `n` bits (0..avail) that Peek has shown.
  void Skip(int n) {
    if (avail_ < n) {
      error_ = true;
      avail_ = 0;
      buf_ = 0;
      return;
    }
    buf_ = n == 64 ? 0 : buf_ << n;
    avail_ -= n;
  }
  bool error() const { return error_; }

  // Tops the buffer up to 57..64 bits: whole bytes, eight at a time when
  // the input has them.
  void Refill() {
    if (end_ - p_ >= 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, p_, 8);
      word = __builtin_bswap64(word);  // the stream is most significant bit first
      const int bytes = (63 - avail_) >> 3;
      const int keep = avail_ + bytes * 8;  // 57..63 bits valid after this
      buf_ |= (word >> avail_) & ~(~std::uint64_t{0} >> keep);
      p_ += bytes;
      avail_ = keep;
      return;
    }
    while (avail_ <= 56 && p_ < end_) {
      buf_ |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(*p_++)) << (56 - avail_);
      avail_ += 8;
    }
  }

  // Bytes consumed, counting a partly read byte as whole.
  std::size_t bytes_used() const {
    const std::size_t bits =
        static_cast<std::size_t>(p_ - start_) * 8 - static_cast<std::size_t>(avail_);
    return (bits + 7) / 8;
  }

 private:
  const char* start_;
  const char* p_;
  const char* end_;
  std::uint64_t buf_ = 0;  // unread bits, most significant first
  int avail_ = 0;
  bool error_ = false;
};

// Appends `count` values of `width` bits each (width 0..57), LSB-first,
// taking ceil(count * width / 8) bytes.
inline void PackBits(std::string& out, const std::uint64_t* values, int count, int width) {
  if (width == 0) return;
  // Fewer than 8 bits wait in `acc` before each value, so 57-bit values fit.
  std::uint64_t acc = 0;
  int bits = 0;
  for (int i = 0; i < count; ++i) {
    acc |= values[i] << bits;
    bits += width;
    while (bits >= 8) {
      out.push_back(static_cast<char>(static_cast<std::uint8_t>(acc)));
      acc >>= 8;
      bits -= 8;
    }
  }
  if (bits > 0) out.push_back(static_cast<char>(static_cast<std::uint8_t>(acc)));
}

// Reads `count` values of `width` bits (0..57) from `in`, which holds at
// least ceil(count * width / 8) bytes (the caller checks).
inline void UnpackBits(const char* in, std::size_t in_size, std::uint64_t* values, int count,
                       int width) {
  if (width == 0) {
    for (int i = 0; i < count; ++i) values[i] = 0;
    return;
  }
  const std::uint64_t mask = (1ULL << width) - 1;
  std::size_t bit = 0;
  for (int i = 0; i < count; ++i, bit += static_cast<std::size_t>(width)) {
    const std::size_t byte = bit >> 3;
    std::uint64_t word = 0;
    if (byte + 8 <= in_size) {
      std::memcpy(&word, in + byte, 8);
    } else {
      std::memcpy(&word, in + byte, in_size - byte);
    }
    values[i] = (word >> (bit & 7)) & mask;
  }
}

// LEB128 varints and zigzag.
inline void PutVarint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline std::uint64_t ZigZag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t UnZigZag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}
inline void PutZVarint(std::string& out, std::int64_t v) { PutVarint(out, ZigZag(v)); }

// a + b and a - b with two's-complement wrap-around. Deltas of valid data
// wrap at the extremes (a WAL record with one sample near the minimum
// timestamp and the next near the maximum); the wrapped delta decodes back
// exactly, and decoding corrupt input is never undefined behaviour.
inline std::int64_t WrapAdd(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
inline std::int64_t WrapSub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}

// Reads a varint at in[pos], advancing pos; false when truncated or longer
// than 10 bytes.
inline bool GetVarint(std::string_view in, std::size_t& pos, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos >= in.size()) return false;
    const auto b = static_cast<std::uint8_t>(in[pos++]);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}
inline bool GetZVarint(std::string_view in, std::size_t& pos, std::int64_t& v) {
  std::uint64_t u = 0;
  if (!GetVarint(in, pos, u)) return false;
  v = UnZigZag(u);
  return true;
}

inline void PutFixed64(std::string& out, std::uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);  // little-endian hosts only (x86-64, arm64)
  out.append(b, 8);
}
inline bool GetFixed64(std::string_view in, std::size_t& pos, std::uint64_t& v) {
  if (pos + 8 > in.size()) return false;
  std::memcpy(&v, in.data() + pos, 8);
  pos += 8;
  return true;
}

}  // namespace gpucanary::store
