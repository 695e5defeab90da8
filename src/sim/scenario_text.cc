#include "sim/scenario_text.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <system_error>

namespace gpucanary::sim {

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
