#include "store/appender.h"

#include <bit>

namespace gpucanary::store {

bool IsStaleNaN(double v) { return std::bit_cast<std::uint64_t>(v) == kStaleNaNBits; }

double StaleNaN() { return std::bit_cast<double>(kStaleNaNBits); }

}  // namespace gpucanary::store
