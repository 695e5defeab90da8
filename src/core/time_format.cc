#include "core/time_format.h"

#include <chrono>
#include <cstddef>
#include <cstdio>

namespace gpucanary {

std::string FormatUtcMillis(std::int64_t timestamp_ms) {
  using std::chrono::days;
  using std::chrono::floor;
  using std::chrono::hh_mm_ss;
  using std::chrono::milliseconds;
  using std::chrono::sys_days;
  using std::chrono::sys_time;
  using std::chrono::year_month_day;
  const sys_time<milliseconds> time{milliseconds(timestamp_ms)};
  const sys_days day = floor<days>(time);
  const year_month_day ymd{day};
  const hh_mm_ss<milliseconds> clock{time - day};
  char text[48];
  std::snprintf(
      text, sizeof(text), "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(ymd.year()),
      static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
      static_cast<int>(clock.hours().count()), static_cast<int>(clock.minutes().count()),
      static_cast<int>(clock.seconds().count()), static_cast<int>(clock.subseconds().count()));
  return text;
}

namespace {

// Reads exactly `n` digits at text[pos...] into `out`.
bool Digits(std::string_view text, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > text.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

}  // namespace

std::optional<std::int64_t> ParseRfc3339Millis(std::string_view text) {
  // date-fullyear "-" date-month "-" date-mday ("T" / "t" / " ") time-hour ":" time-minute ":"
  // time-second; every field fixed width.
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (text.size() < 20 || !Digits(text, 0, 4, year) || text[4] != '-' ||
      !Digits(text, 5, 2, month) || text[7] != '-' || !Digits(text, 8, 2, day) ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || !Digits(text, 11, 2, hour) ||
      text[13] != ':' || !Digits(text, 14, 2, minute) || text[16] != ':' ||
      !Digits(text, 17, 2, second)) {
    return std::nullopt;
  }
  if (hour > 23 || minute > 59 || second > 60) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(year),
                                        std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) return std::nullopt;
  std::size_t pos = 19;
  std::int64_t millis = 0;
  if (text[pos] == '.') {  // time-secfrac = "." 1*DIGIT
    const std::size_t first = ++pos;
    std::int64_t scale = 100;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      millis += std::int64_t{text[pos] - '0'} * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == first) return std::nullopt;
  }
  // time-offset = "Z" / time-numoffset ("+" / "-") HH ":" MM
  std::int64_t offset_min = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int off_h = 0, off_m = 0;
    if (!Digits(text, pos + 1, 2, off_h) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !Digits(text, pos + 4, 2, off_m) || off_h > 23 || off_m > 59) {
      return std::nullopt;
    }
    offset_min = std::int64_t{text[pos] == '-' ? -1 : 1} * (off_h * 60 + off_m);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  const std::int64_t days = std::chrono::sys_days(ymd).time_since_epoch().count();
  const std::int64_t local_s = ((days * 24 + hour) * 60 + minute) * 60 + second;
  return (local_s - offset_min * 60) * 1000 + millis;
}

}  // namespace gpucanary
