#include "sim/scenario_text.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <system_error>

namespace gpucanary::sim {

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end && std::isfinite(*out);
}

bool ParseInt(std::string_view s, std::int64_t* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

// "600s", "10m", "1h", "250ms" or a plain number of seconds. False if malformed.
bool ParseDurationText(std::string_view s, double* seconds) {
  std::size_t unit_at = s.size();
  while (unit_at > 0 && std::isalpha(static_cast<unsigned char>(s[unit_at - 1])) != 0) --unit_at;
  const std::string_view unit = s.substr(unit_at);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else {
    return false;
  }
  double value = 0;
  if (!ParseDouble(s.substr(0, unit_at), &value)) return false;
  *seconds = value * scale;
  return true;
}

// "1/5m", "30/m", "2/s" or a plain number per second. False if malformed.
bool ParseRateText(std::string_view s, double* per_s) {
  const std::size_t slash = s.find('/');
  if (slash == std::string_view::npos) return ParseDouble(s, per_s);
  double count = 0;
  if (!ParseDouble(s.substr(0, slash), &count)) return false;
  const std::string_view per = s.substr(slash + 1);
  // "/m" means "/1m".
  std::string window = !per.empty() && std::isalpha(static_cast<unsigned char>(per.front())) != 0
                           ? std::string("1")
                           : std::string();
  window.append(per);
  double window_s = 0;
  if (!ParseDurationText(window, &window_s) || window_s <= 0) return false;
  *per_s = count / window_s;
  return true;
}

// "a-b" or "a" in a comma list: the bounds, or false.
bool ParseRangeItem(std::string_view item, std::int64_t* lo, std::int64_t* hi) {
  const std::size_t dash = item.find('-');
  if (dash == std::string_view::npos) {
    if (!ParseInt(item, lo) || *lo < 0) return false;
    *hi = *lo;
    return true;
  }
  return ParseInt(item.substr(0, dash), lo) && ParseInt(item.substr(dash + 1), hi) && *lo >= 0 &&
         *lo <= *hi;
}

std::vector<std::string_view> SplitCommas(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

// "node-[1-8]" -> node-1 .. node-8; "gpu-[01-12]" keeps the zero padding;
// "node-[1,3,5-6]" lists; a name without brackets is itself.
Result<std::vector<std::string>> ExpandHostPattern(std::string_view pattern) {
  const std::size_t open = pattern.find('[');
  if (open == std::string_view::npos) {
    if (pattern.find(']') != std::string_view::npos) {
      return Error(StatusCode::kParseError, "unbalanced ']' in '" + std::string(pattern) + "'");
    }
    return std::vector<std::string>{std::string(pattern)};
  }
  const std::size_t close = pattern.find(']', open);
  if (close == std::string_view::npos ||
      pattern.find_first_of("[]", close + 1) != std::string_view::npos) {
    return Error(StatusCode::kParseError,
                 "bad host pattern '" + std::string(pattern) + "' (expected e.g. node-[1-8])");
  }
  const std::string_view prefix = pattern.substr(0, open);
  const std::string_view suffix = pattern.substr(close + 1);
  std::vector<std::string> out;
  for (std::string_view item : SplitCommas(pattern.substr(open + 1, close - open - 1))) {
    std::int64_t lo = 0;
    std::int64_t hi = 0;
    if (!ParseRangeItem(item, &lo, &hi) ||
        static_cast<std::uint64_t>(hi - lo) + out.size() >= kMaxHostsPerPattern) {
      return Error(StatusCode::kParseError, "bad range '" + std::string(item) +
                                                "' in host pattern '" + std::string(pattern) + "'");
    }
    const std::string_view first = item.substr(0, item.find('-'));
    const std::size_t width = first.size() > 1 && first.front() == '0' ? first.size() : 0;
    for (std::int64_t i = lo; i <= hi; ++i) {
      std::string number = std::to_string(i);
      if (number.size() < width) {
        number.insert(0, width - number.size(), '0');
      }
      out.push_back(std::string(prefix) + number + std::string(suffix));
    }
  }
  return out;
}

}  // namespace gpucanary::sim
