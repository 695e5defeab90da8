#pragma once
// URL query strings and form bodies (application/x-www-form-urlencoded, the
// WHATWG URL standard's rules): encoding one value, decoding a whole query.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace gpucanary::net {

// Percent-encodes everything but the unreserved characters A-Z a-z 0-9 - . _ ~
// (RFC 3986 §2.3), so the result is safe in a query value.
std::string UrlEncode(std::string_view text);

// Splits "a=1&b=x%20y&b=z" into (name, value) pairs in order, '+' read as a
// space and %XX decoded; a pair without '=' has an empty value. Errors:
// kInvalidArgument for a '%' not followed by two hex digits ("bad percent
// escape at offset 4").
Result<std::vector<std::pair<std::string, std::string>>> ParseForm(std::string_view query);

}  // namespace gpucanary::net
