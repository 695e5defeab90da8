#pragma once
// The wire format every JSON endpoint of the daemon shares with Prometheus's
// HTTP API (docs/http-api.md): time parameters in, and out values, times and
// strings as Prometheus prints them, inside its status envelope
//
//   {"status":"success","data":<data>}
//   {"status":"error","errorType":"bad_data","error":"<message>"}
//
// Used by the query, release and correlation endpoints (and by the CLI for
// the times it accepts). Stateless and thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/http_message.h"

namespace gpucanary::daemon {

// A time parameter: Unix seconds (fractions allowed) or RFC 3339. Returns
// milliseconds; nullopt if malformed.
std::optional<std::int64_t> ParseApiTime(std::string_view text);

// Appends a sample value as Prometheus prints it (Go's FormatFloat 'f', -1):
// shortest round trip, never an exponent; "NaN", "+Inf", "-Inf".
void AppendPromValue(std::string& out, double v);

// Appends `s` as a JSON string: quotes, backslashes and control characters
// escaped, everything else (UTF-8) as is.
void AppendJsonString(std::string& out, std::string_view s);

// Appends a timestamp as a JSON number of seconds: "1764680000" or
// "1764680000.500".
void AppendPromTime(std::string& out, std::int64_t t_ms);

// Sets `response` to `status`, application/json and the success envelope
// around `data` (a JSON value, written as is).
void ReplyApiData(net::HttpResponse& response, int status, std::string_view data);

// Sets `response` to `status`, application/json and the error envelope:
// `type` is Prometheus's errorType ("bad_data" 400, "execution" 422,
// "internal" 500, or the endpoint's own: "not_found", "conflict", ...).
void ReplyApiError(net::HttpResponse& response, int status, std::string_view type,
                   std::string_view message);

}  // namespace gpucanary::daemon
