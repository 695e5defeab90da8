#pragma once
// Time flags of the judge-style commands (--release-start, --from, --to).

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace gpucanary::cli {

// `text` as Unix seconds (a fraction is allowed, rounded down) or RFC 3339;
// the error names `flag` and shows both accepted forms.
Result<std::int64_t> ParseTimeFlag(std::string_view flag, std::string_view text);

}  // namespace gpucanary::cli
