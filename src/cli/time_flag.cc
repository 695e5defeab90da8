#include "cli/time_flag.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include "core/time_format.h"

namespace gpucanary::cli {

// --release-start, --from, --to: Unix seconds (a fraction is allowed) or RFC 3339. The judge
// works in whole 1 s ticks; a fractional start is rounded down, so the tick
// the release starts in is judged with the release rather than counted as the
// canary's history (history must not hold the release's own samples).
Result<std::int64_t> ParseTimeFlag(std::string_view flag, std::string_view text) {
  double seconds = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, seconds);
  if (ec == std::errc() && ptr == end && std::isfinite(seconds) && std::abs(seconds) < 1e15) {
    return static_cast<std::int64_t>(std::floor(seconds));
  }
  if (const std::optional<std::int64_t> ms = ParseRfc3339Millis(text)) {
    return *ms >= 0 ? *ms / 1000 : -((-*ms + 999) / 1000);
  }
  return Error(StatusCode::kInvalidArgument,
               std::string(flag) +
                   ": expected Unix seconds (1764680060, 1764680060.5) or an RFC 3339 "
                   "time (2025-12-02T13:00:00Z), got '" +
                   std::string(text) + "'");
}

}  // namespace gpucanary::cli
