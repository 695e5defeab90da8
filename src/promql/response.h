#pragma once
// The JSON answers of the Prometheus HTTP query API (/api/v1/query and
// /api/v1/query_range), as Prometheus, Thanos, Mimir and VictoriaMetrics
// send them, turned into series. docs/promql-client.md.
//
// Spec: https://prometheus.io/docs/prometheus/latest/querying/api/ ("Format
// overview", "Expression query result formats"); the details below were
// checked against Prometheus 2.42 (shared/reference/prometheus-otel.md §4):
//   {"status":"success"|"error","data":{"resultType":...,"result":...},
//    "errorType":"...","error":"...","warnings":[...]}
//   timestamps: JSON numbers, Unix seconds with millisecond precision;
//   values: JSON strings, Go's FormatFloat(v,'f',-1,64): "300.709", "-0",
//   "NaN", "+Inf", "-Inf", never an exponent (one is accepted anyway).
//
// Pure functions, thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/labels.h"

namespace gpucanary::promql {

struct Sample {
  std::int64_t t_ms = 0;  // milliseconds since the Unix epoch
  double value = 0;

  friend bool operator==(const Sample&, const Sample&) = default;
};

struct Series {
  model::Labels labels;  // sorted by name; no __name__ after most functions
  std::vector<Sample> samples;
};

enum class ResultType : std::uint8_t { kMatrix, kVector, kScalar, kString };

struct QueryResult {
  ResultType type = ResultType::kMatrix;
  // kMatrix: one entry per series, samples in time order. kVector: one
  // sample each. kScalar: one series without labels and one sample.
  std::vector<Series> series;
  std::string string_value;  // kString only (its time is not kept)
  // The server's "warnings" (a Thanos partial response, a dropped native
  // histogram): the answer is usable but may be incomplete.
  std::vector<std::string> warnings;
};

// A sample value as the API writes it: "NaN", "+Inf", "-Inf", decimal text
// (bit-exact for what Go printed with FormatFloat). Errors: kParseError.
Result<double> ParseSampleValue(std::string_view text);

// Reads one API answer: its HTTP status and body (gzip already undone).
// Errors name `what` (method and URL) and the server's own text, with the
// code saying whether a retry can help:
//   kInvalidArgument  400 bad_data, 422 execution: the query is wrong, and
//                     other 4xx (401/403: credentials, 405, ...);
//   kNotFound         404 (not_found, or no API at that URL);
//   kUnavailable      503 timeout / canceled, 429, other 5xx: may pass later;
//   kParseError       a 2xx whose body is not a well-formed API answer.
// Example: "GET http://127.0.0.1:9090/api/v1/query: HTTP 400 bad_data:
// invalid parameter \"query\": 1:6: parse error: unclosed left parenthesis".
Result<QueryResult> ParseQueryResponse(int http_status, std::string_view body,
                                       std::string_view what);

}  // namespace gpucanary::promql
