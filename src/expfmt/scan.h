#pragma once
// Byte-scanning kernels of the exposition parser: 16 bytes per step with SSE2
// (part of every x86-64 CPU), one byte per step elsewhere. Each returns the
// first position in [p, e) that stops the scan, or e.

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gpucanary::expfmt::scan {

// Metric name characters: [a-zA-Z0-9_:] (label names: without ':').
inline bool IsNameChar(char c, bool allow_colon) {
  const auto u = static_cast<unsigned char>(c);
  const unsigned char l = static_cast<unsigned char>(u | 0x20);
  return (l >= 'a' && l <= 'z') || (u >= '0' && u <= '9') || u == '_' || (allow_colon && u == ':');
}

inline const char* SkipNameChars(const char* p, const char* e, bool allow_colon) {
#if defined(__SSE2__)
  const __m128i k20 = _mm_set1_epi8(0x20);
  const __m128i ka = _mm_set1_epi8(static_cast<char>(-128 - 'a'));
  const __m128i k26 = _mm_set1_epi8(static_cast<char>(-128 + 26));
  const __m128i k0 = _mm_set1_epi8(static_cast<char>(-128 - '0'));
  const __m128i k10 = _mm_set1_epi8(static_cast<char>(-128 + 10));
  const __m128i kUnderscore = _mm_set1_epi8('_');
  const __m128i kColon = _mm_set1_epi8(allow_colon ? ':' : '_');
  while (e - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i lower = _mm_or_si128(v, k20);
    // x in [lo, lo+n) <=> (x - lo - 128) < (n - 128) as signed bytes.
    const __m128i alpha = _mm_cmplt_epi8(_mm_add_epi8(lower, ka), k26);
    const __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(v, k0), k10);
    const __m128i other = _mm_or_si128(_mm_cmpeq_epi8(v, kUnderscore), _mm_cmpeq_epi8(v, kColon));
    const int ok = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(alpha, digit), other));
    if (ok != 0xFFFF) return p + __builtin_ctz(static_cast<unsigned>(~ok));
    p += 16;
  }
#endif
  while (p < e && IsNameChar(*p, allow_colon)) ++p;
  return p;
}

// First '"', '\\', '\n' or non-ASCII byte: the end of a plain label value (a
// label value never spans lines).
inline const char* FindQuoteOrSpecial(const char* p, const char* e) {
#if defined(__SSE2__)
  const __m128i kQuote = _mm_set1_epi8('"');
  const __m128i kBackslash = _mm_set1_epi8('\\');
  const __m128i kNl = _mm_set1_epi8('\n');
  while (e - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i special =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, kQuote), _mm_cmpeq_epi8(v, kBackslash)),
                     _mm_cmpeq_epi8(v, kNl));
    const int hit = _mm_movemask_epi8(_mm_or_si128(special, v));
    if (hit != 0) return p + __builtin_ctz(static_cast<unsigned>(hit));
    p += 16;
  }
#endif
  while (p < e && *p != '"' && *p != '\\' && *p != '\n' && static_cast<unsigned char>(*p) < 0x80) {
    ++p;
  }
  return p;
}

// First '\\' or non-ASCII byte (HELP text needs work only then).
inline const char* FindBackslashOrHigh(const char* p, const char* e) {
#if defined(__SSE2__)
  const __m128i kBackslash = _mm_set1_epi8('\\');
  while (e - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int hit = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, kBackslash), v));
    if (hit != 0) return p + __builtin_ctz(static_cast<unsigned>(hit));
    p += 16;
  }
#endif
  while (p < e && *p != '\\' && static_cast<unsigned char>(*p) < 0x80) ++p;
  return p;
}

// First '\n'.
inline const char* FindNewline(const char* p, const char* e) {
#if defined(__SSE2__)
  const __m128i kNl = _mm_set1_epi8('\n');
  while (e - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int hit = _mm_movemask_epi8(_mm_cmpeq_epi8(v, kNl));
    if (hit != 0) return p + __builtin_ctz(static_cast<unsigned>(hit));
    p += 16;
  }
#endif
  while (p < e && *p != '\n') ++p;
  return p;
}

}  // namespace gpucanary::expfmt::scan
