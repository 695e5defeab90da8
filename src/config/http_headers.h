#pragma once
// A YAML map of extra HTTP headers that a client of gpucanary's sends with
// every request (a webhook action's `headers`, canary.history_prometheus's,
// publish.otlp's), read and checked in one place:
//
//   headers:
//     X-Scope-OrgID: team-a
//     X-Api-Key: "s3cret"
//
// Each name must be an RFC 9110 token and not one the caller's client sets
// itself; each value a string without line breaks; duplicate names (spelled
// the same) are refused. Errors read "FILE:LINE:COL: field.Name: what"
// (config::Reporter), at the key for a name and at the value for a value.
//
// The callers differ in what they refuse and how they say it (HttpHeaderRules
// below); each keeps its own rules.

#include <yaml-cpp/yaml.h>

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/yaml_fields.h"
#include "core/status.h"

namespace gpucanary::config {

// Name, value, in file order.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpHeaderRules {
  // Names (compared ignoring ASCII case) the caller's client sets itself.
  std::span<const std::string_view> reserved;
  // The message for a name that is not a token, and for a reserved one.
  std::string_view bad_name = "not a header name gpucanary may set";
  std::string_view reserved_name = "not a header name gpucanary may set";
  // true: a value is a non-empty scalar (ReadString's "expected a name");
  // false: any scalar, "" included, else "expected a string".
  bool non_empty_value = true;
  // Whether a NUL in a value is refused like a line break.
  bool refuse_nul = true;
  // The message for a value with a line break (or a refused NUL).
  std::string_view line_break = "a header value must not hold line breaks";
};

// Reads the map `node` named `field` ("canary.history_prometheus.headers");
// an entry's errors name `field`.Name. Errors: kParseError.
Result<HttpHeaders> ReadHttpHeaders(const Reporter& r, const YAML::Node& node,
                                    std::string_view field, const HttpHeaderRules& rules);

}  // namespace gpucanary::config
