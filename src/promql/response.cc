#include "promql/response.h"

#include <charconv>
#include <cmath>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace gpucanary::promql {
namespace {

using Json = nlohmann::json;

// Beyond this many Unix seconds, milliseconds no longer fit in an int64.
constexpr double kMaxSeconds = 9.2e15;

std::string Snippet(std::string_view body) {
  constexpr std::size_t kMax = 200;
  std::string out(body.substr(0, kMax));
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (body.size() > kMax) out += "...";
  return out;
}

StatusCode CodeForHttp(int status) {
  if (status == 404) return StatusCode::kNotFound;
  if (status == 429 || status >= 500) return StatusCode::kUnavailable;
  return StatusCode::kInvalidArgument;
}

StatusCode CodeForErrorType(const std::string& type, int status) {
  if (type == "bad_data" || type == "execution") return StatusCode::kInvalidArgument;
  if (type == "timeout" || type == "canceled" || type == "unavailable" || type == "internal") {
    return StatusCode::kUnavailable;
  }
  if (type == "not_found") return StatusCode::kNotFound;
  return CodeForHttp(status);
}

Result<std::int64_t> ParseTime(const Json& j) {
  if (!j.is_number()) return Error(StatusCode::kParseError, "timestamp is not a number");
  const double seconds = j.get<double>();
  if (!std::isfinite(seconds) || std::fabs(seconds) > kMaxSeconds) {
    return Error(StatusCode::kParseError, "timestamp out of range");
  }
  // Prometheus prints seconds with at most 3 decimals; the nearest
  // millisecond undoes the binary rounding of the JSON number.
  return std::llround(seconds * 1000.0);
}

Result<Sample> ParsePair(const Json& j) {
  if (!j.is_array() || j.size() != 2 || !j[1].is_string()) {
    return Error(StatusCode::kParseError, "sample is not [<time>, \"<value>\"]");
  }
  Result<std::int64_t> t = ParseTime(j[0]);
  if (!t) return Error(t.error());
  Result<double> v = ParseSampleValue(j[1].get_ref<const std::string&>());
  if (!v) return Error(v.error());
  return Sample{*t, *v};
}

Result<model::Labels> ParseMetric(const Json& j) {
  if (!j.is_object()) return Error(StatusCode::kParseError, "\"metric\" is not an object");
  model::Labels labels;
  labels.reserve(j.size());
  for (const auto& [name, value] : j.items()) {
    if (!value.is_string()) {
      return Error(StatusCode::kParseError, "label '" + name + "' is not a string");
    }
    labels.push_back({name, value.get<std::string>()});
  }
  model::SortLabels(labels);
  return labels;
}

// One element of a matrix ("values") or vector ("value") result.
Status ParseSeries(const Json& j, ResultType type, QueryResult& out) {
  if (!j.is_object()) return Status(StatusCode::kParseError, "result element is not an object");
  Series series;
  if (j.contains("metric")) {
    Result<model::Labels> labels = ParseMetric(j["metric"]);
    if (!labels) return labels.error();
    series.labels = std::move(*labels);
  }
  if (type == ResultType::kVector) {
    if (!j.contains("value")) {
      if (j.contains("histogram")) {
        out.warnings.push_back("a native histogram sample was ignored");
        return Status::Ok();
      }
      return Status(StatusCode::kParseError, "vector element without \"value\"");
    }
    Result<Sample> s = ParsePair(j["value"]);
    if (!s) return s.error();
    series.samples.push_back(*s);
  } else {
    if (j.contains("histograms")) out.warnings.push_back("native histogram samples were ignored");
    if (j.contains("values")) {
      const Json& values = j["values"];
      if (!values.is_array()) return Status(StatusCode::kParseError, "\"values\" is not an array");
      series.samples.reserve(values.size());
      for (const Json& v : values) {
        Result<Sample> s = ParsePair(v);
        if (!s) return s.error();
        series.samples.push_back(*s);
      }
    }
  }
  out.series.push_back(std::move(series));
  return Status::Ok();
}

Status ParseData(const Json& data, QueryResult& out) {
  if (!data.is_object() || !data.contains("resultType") || !data.contains("result") ||
      !data["resultType"].is_string()) {
    return Status(StatusCode::kParseError, "\"data\" without \"resultType\" and \"result\"");
  }
  const std::string& type = data["resultType"].get_ref<const std::string&>();
  const Json& result = data["result"];
  if (type == "matrix" || type == "vector") {
    out.type = type == "matrix" ? ResultType::kMatrix : ResultType::kVector;
    if (!result.is_array()) return Status(StatusCode::kParseError, "\"result\" is not an array");
    out.series.reserve(result.size());
    for (const Json& element : result) GC_RETURN_IF_ERROR(ParseSeries(element, out.type, out));
    return Status::Ok();
  }
  if (type == "scalar") {
    out.type = ResultType::kScalar;
    Result<Sample> s = ParsePair(result);
    if (!s) return s.error();
    out.series.push_back(Series{{}, {*s}});
    return Status::Ok();
  }
  if (type == "string") {
    out.type = ResultType::kString;
    if (!result.is_array() || result.size() != 2 || !result[1].is_string()) {
      return Status(StatusCode::kParseError, "string result is not [<time>, \"<text>\"]");
    }
    out.string_value = result[1].get<std::string>();
    return Status::Ok();
  }
  return Status(StatusCode::kParseError, "unknown resultType '" + type + "'");
}

std::string HttpPrefix(std::string_view what, int status) {
  return std::string(what) + ": HTTP " + std::to_string(status);
}

}  // namespace

Result<double> ParseSampleValue(std::string_view text) {
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "+Inf" || text == "Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return Error(StatusCode::kParseError, "bad sample value \"" + std::string(text) + "\"");
  }
  return v;
}

Result<QueryResult> ParseQueryResponse(int http_status, std::string_view body,
                                       std::string_view what) {
  // Field access on the wrong JSON type throws; nothing may escape.
  try {
    const Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    const bool api = j.is_object() && j.contains("status") && j["status"].is_string();
    if (!api) {
      if (http_status >= 200 && http_status < 300) {
        return Error(
            StatusCode::kParseError,
            HttpPrefix(what, http_status) + ": not a Prometheus API answer: " + Snippet(body));
      }
      return Error(CodeForHttp(http_status), HttpPrefix(what, http_status) + ": " + Snippet(body));
    }
    if (j["status"] != "success" || http_status < 200 || http_status >= 300) {
      const std::string type = j.value("errorType", std::string());
      const std::string error = j.value("error", std::string());
      return Error(CodeForErrorType(type, http_status),
                   HttpPrefix(what, http_status) + " " + (type.empty() ? "error" : type) + ": " +
                       (error.empty() ? Snippet(body) : error));
    }
    QueryResult out;
    if (j.contains("warnings") && j["warnings"].is_array()) {
      for (const Json& w : j["warnings"]) {
        if (w.is_string()) out.warnings.push_back(w.get<std::string>());
      }
    }
    if (!j.contains("data")) {
      return Error(StatusCode::kParseError, HttpPrefix(what, http_status) + ": no \"data\"");
    }
    if (Status st = ParseData(j["data"], out); !st.ok()) {
      return Error(st.WithPrefix(HttpPrefix(what, http_status)));
    }
    return out;
  } catch (const std::exception& e) {
    return Error(StatusCode::kParseError,
                 HttpPrefix(what, http_status) + ": malformed answer: " + e.what());
  }
}

}  // namespace gpucanary::promql
