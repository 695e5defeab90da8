#include "core/time_format.h"

#include <chrono>
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

}  // namespace gpucanary
