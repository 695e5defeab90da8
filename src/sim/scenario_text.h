#pragma once
// The small text grammars of scenario files, apart from the YAML structure:
// numbers, durations ("250ms", "90s", "10m", "1h"), rates ("1/5m"), comma
// lists of ranges ("0,2,5-7") and host patterns ("node-[1-8]").

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/yaml_fields.h"
#include "core/status.h"

namespace gpucanary::sim {

// The most hostnames one pattern may expand to (a typo like node-[1-99999999]
// is an error, not an allocation).
inline constexpr std::size_t kMaxHostsPerPattern = 100000;

// Numbers, durations and rates are config's (config/yaml_fields.h).
using config::ParseDouble;
using config::ParseDurationText;
using config::ParseInt;
using config::ParseRateText;

// Each returns false (or an error) for malformed text; nothing is partially set.
// "a-b" or "a": the bounds (lo <= hi, both >= 0).
bool ParseRangeItem(std::string_view item, std::int64_t* lo, std::int64_t* hi);
std::vector<std::string_view> SplitCommas(std::string_view s);
// "node-[1-8]" -> node-1 .. node-8; "gpu-[01-12]" keeps the zero padding;
// "node-[1,3,5-6]" lists; a name without brackets is itself.
Result<std::vector<std::string>> ExpandHostPattern(std::string_view pattern);

}  // namespace gpucanary::sim
