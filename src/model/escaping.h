#pragma once
// Escaping of text written into the exposition formats (Prometheus text 0.0.4
// and OpenMetrics 1.0). Label values, HELP text in OpenMetrics and the values
// of PromQL selector strings all use the same three escapes:
//   escaped-string = *escaped-char ; escaped-char = normal-char / bs ("\" / "n" / dq)
// (OpenMetrics 1.0 ABNF). Pure and thread-safe.

#include <string>
#include <string_view>

namespace gpucanary::model {

// Appends `text` escaped as an OpenMetrics escaped-string: backslash -> \\,
// double quote -> \", line feed -> \n. Everything else is copied unchanged.
void AppendEscaped(std::string& out, std::string_view text);

}  // namespace gpucanary::model
