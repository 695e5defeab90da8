#pragma once
// Low-level pieces of OpenMetrics 1.0 text output: family headers, number and
// timestamp rendering. RecordingWriter uses them; they are public so that tests
// and other writers produce byte-identical text. Name checks, UTF-8 and
// escaping are the data model's (src/model).
//
// Spec: OpenMetrics 1.0, "Text format / ABNF"
// (https://github.com/prometheus/OpenMetrics/blob/main/specification/OpenMetrics.md)
//   timestamp = realnumber  (seconds)
//
// All functions are pure and thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

namespace gpucanary::recording {

// Appends a metric family's text-format header: "# HELP <name> <help>\n# TYPE
// <name> <type>\n". `help` is written as given (the caller escapes it where
// it may hold a backslash or a line feed).
void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view type,
                        std::string_view help);

// Appends a sample value: "NaN", "+Inf", "-Inf", or the shortest decimal text
// that parses back to exactly `value` (std::to_chars without a precision, so
// 0.5 -> "0.5", 5e-06 -> "5e-06", 238749445947 -> "238749445947").
void AppendValue(std::string& out, double value);

// Appends an int64 millisecond timestamp as seconds with exactly three
// decimals: 1775016266006 -> "1775016266.006", -1500 -> "-1.500", -1 -> "-0.001".
// Every int64 is representable (INT64_MIN included).
void AppendTimestamp(std::string& out, std::int64_t timestamp_ms);

}  // namespace gpucanary::recording
