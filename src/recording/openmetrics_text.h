#pragma once
// Low-level pieces of OpenMetrics 1.0 text output: name checks, escaping, and
// number and timestamp rendering. RecordingWriter uses them; they are public so
// that tests and other writers produce byte-identical text.
//
// Spec: OpenMetrics 1.0, "Text format / ABNF"
// (https://github.com/prometheus/OpenMetrics/blob/main/specification/OpenMetrics.md)
//   metricname = metricname-initial-char 0*metricname-char
//   metricname-initial-char = ALPHA / "_" / ":"     metricname-char = initial / DIGIT
//   label-name = label-name-initial-char *label-name-char   (ALPHA / "_", then also DIGIT)
//   escaped-string = *escaped-char ; escaped-char = normal-char / bs ("\" / "n" / dq)
//   timestamp = realnumber  (seconds)
//
// All functions are pure and thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

namespace gpucanary::recording {

// Prometheus metric-name regex [a-zA-Z_:][a-zA-Z0-9_:]*.
bool IsValidMetricName(std::string_view name);

// Prometheus label-name regex [a-zA-Z_][a-zA-Z0-9_]*. Names starting with "__"
// are reserved for Prometheus's internal use but match the regex and are accepted.
bool IsValidLabelName(std::string_view name);

// True when `text` is well-formed UTF-8 (no overlong forms, no surrogates, at
// most U+10FFFF). OpenMetrics text is UTF-8 and Prometheus rejects label values
// that are not.
bool IsValidUtf8(std::string_view text);

// Appends `text` escaped as an OpenMetrics escaped-string: backslash -> \\,
// double quote -> \", line feed -> \n. Everything else is copied unchanged.
void AppendEscaped(std::string& out, std::string_view text);

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
