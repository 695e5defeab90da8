#pragma once
// Timestamps for people: every output of gpucanary prints times the same way.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpucanary {

// "2026-04-01T04:04:26.006Z" for int64 milliseconds since the epoch (UTC,
// proleptic Gregorian; negative values are before 1970).
std::string FormatUtcMillis(std::int64_t timestamp_ms);

// Parses an RFC 3339 date-time (https://www.rfc-editor.org/rfc/rfc3339#section-5.6):
//   full-date "T" full-time, full-time = HH:MM:SS [.frac] ("Z" / ("+" / "-") HH:MM)
// e.g. "2025-12-02T13:00:00Z", "2025-12-02t14:00:00.250+01:00"; "T"/"Z" in
// either case and a space for "T" (RFC 3339 §5.6's note) are accepted.
// Returns milliseconds since the epoch (fraction beyond ms truncated toward
// the past), or nullopt for anything else (no offset, a bad field, trailing text).
// A leap second (:60) is read as the next minute's :00.
std::optional<std::int64_t> ParseRfc3339Millis(std::string_view text);

}  // namespace gpucanary
