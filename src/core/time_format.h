#pragma once
// Timestamps for people: every output of gpucanary prints times the same way.

#include <cstdint>
#include <string>

namespace gpucanary {

// "2026-04-01T04:04:26.006Z" for int64 milliseconds since the epoch (UTC,
// proleptic Gregorian; negative values are before 1970).
std::string FormatUtcMillis(std::int64_t timestamp_ms);

}  // namespace gpucanary
