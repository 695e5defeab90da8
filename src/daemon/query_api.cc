#include "daemon/query_api.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/time_format.h"
#include "net/url.h"
#include "recording/openmetrics_text.h"
#include "scrape/config.h"
#include "store/matcher.h"

namespace gpucanary::daemon {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

struct ApiError {
  int status;
  const char* type;
  std::string message;
};

ApiError BadData(std::string message) { return {400, "bad_data", std::move(message)}; }

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

namespace {

void AppendMetric(std::string& out, const store::Labels& labels) {
  out += "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(out, labels[i].name);
    out += ':';
    AppendJsonString(out, labels[i].value);
  }
  out += "}";
}

void Reply(net::HttpResponse& response, const std::string& data) {
  response.status = 200;
  response.content_type = "application/json";
  response.body = R"({"status":"success","data":)" + data + "}";
}

void ReplyError(net::HttpResponse& response, const ApiError& e) {
  response.status = e.status;
  response.content_type = "application/json";
  std::string body = R"({"status":"error","errorType":")";
  body += e.type;
  body += R"(","error":)";
  AppendJsonString(body, e.message);
  body += "}";
  response.body = std::move(body);
}

const std::string* Param(const Params& params, std::string_view name) {
  for (const auto& [k, v] : params) {
    if (k == name) return &v;
  }
  return nullptr;
}

// A time parameter, or `fallback` when absent.
std::optional<ApiError> TimeParam(const Params& params, std::string_view name,
                                  std::int64_t fallback, std::int64_t& out) {
  const std::string* v = Param(params, name);
  if (v == nullptr) {
    out = fallback;
    return std::nullopt;
  }
  auto t = ParseApiTime(*v);
  if (!t) {
    return BadData("invalid parameter \"" + std::string(name) + "\": cannot parse \"" + *v +
                   "\" to a valid timestamp");
  }
  out = *t;
  return std::nullopt;
}

// A query: a vector selector, optionally with a range.
struct Selection {
  std::vector<store::Matcher> matchers;
  std::optional<std::int64_t> range_ms;
};

std::optional<ApiError> ParseQuery(std::string_view text, Selection& out) {
  std::string_view q = text;
  while (!q.empty() && std::isspace(static_cast<unsigned char>(q.back())) != 0) q.remove_suffix(1);
  if (!q.empty() && q.back() == ']') {
    const std::size_t open = q.rfind('[');
    if (open == std::string_view::npos)
      return BadData("invalid parameter \"query\": unbalanced ']'");
    const std::string_view dur = q.substr(open + 1, q.size() - open - 2);
    std::int64_t ms = 0;
    if (!scrape::ParsePrometheusDuration(dur, &ms) || ms <= 0) {
      return BadData("invalid parameter \"query\": bad range duration \"" + std::string(dur) +
                     "\"");
    }
    out.range_ms = ms;
    q = q.substr(0, open);
  }
  auto matchers = store::ParseSelector(q);
  if (!matchers) {
    return BadData("invalid parameter \"query\": " + matchers.error().message() +
                   " (gpucanary answers vector selectors, optionally with a range; not functions "
                   "or operators)");
  }
  out.matchers = std::move(*matchers);
  return std::nullopt;
}

// The newest sample at or before `t` within the lookback, unless it is a
// staleness marker. `samples` in time order.
const store::Sample* LatestAt(const std::vector<store::Sample>& samples, std::int64_t t,
                              std::int64_t lookback_ms) {
  auto it = std::upper_bound(samples.begin(), samples.end(), t,
                             [](std::int64_t x, const store::Sample& s) { return x < s.t; });
  if (it == samples.begin()) return nullptr;
  --it;
  if (it->t <= t - lookback_ms || store::IsStaleNaN(it->v)) return nullptr;
  return &*it;
}

}  // namespace

std::optional<std::int64_t> ParseApiTime(std::string_view text) {
  if (auto t = ParseRfc3339Millis(text)) return t;
  double seconds = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(seconds)) {
    return std::nullopt;
  }
  // Sub-millisecond digits are truncated, as Prometheus does.
  return static_cast<std::int64_t>(std::floor(seconds * 1000 + 1e-6));
}

void AppendPromValue(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[400];  // the longest fixed-notation double (denormals) fits
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  out.append(buf, ec == std::errc() ? end : buf);
}

void AppendPromTime(std::string& out, std::int64_t t_ms) {
  char buf[32];
  const bool negative = t_ms < 0;
  const std::uint64_t abs_ms =
      negative ? ~static_cast<std::uint64_t>(t_ms) + 1 : static_cast<std::uint64_t>(t_ms);
  int n = 0;
  if (abs_ms % 1000 == 0) {
    n = std::snprintf(
        buf, sizeof buf, "%s%llu", negative ? "-" : "",
        static_cast<unsigned long long>(abs_ms / 1000));  // NOLINT(google-runtime-int)
  } else {
    n = std::snprintf(
        buf, sizeof buf, "%s%llu.%03llu", negative ? "-" : "",
        static_cast<unsigned long long>(abs_ms / 1000),   // NOLINT(google-runtime-int)
        static_cast<unsigned long long>(abs_ms % 1000));  // NOLINT(google-runtime-int)
  }
  out.append(buf, static_cast<std::size_t>(std::max(n, 0)));
}

QueryApi::QueryApi(const store::Store& store, const Clock& clock, QueryApiOptions options)
    : store_(store), clock_(clock), options_(options) {}

bool QueryApi::Handle(const net::HttpRequest& request, net::HttpResponse& response) const {
  static constexpr std::string_view kPrefix = "/api/v1/";
  const std::string_view path = request.path;
  if (path.substr(0, kPrefix.size()) != kPrefix) return false;
  const std::string_view endpoint = path.substr(kPrefix.size());
  const bool label_values = endpoint.starts_with("label/") && endpoint.ends_with("/values");
  if (endpoint != "query" && endpoint != "query_range" && endpoint != "series" &&
      endpoint != "labels" && !label_values) {
    return false;
  }
  if (request.method != "GET" && request.method != "POST") {
    response.status = 405;
    response.headers.emplace_back("Allow", "GET, POST");
    response.content_type = "text/plain";
    response.body = "method not allowed\n";
    return true;
  }
  auto params = net::ParseForm(request.query);
  if (params && request.method == "POST" &&
      request.Header("content-type").starts_with("application/x-www-form-urlencoded")) {
    auto body = net::ParseForm(request.body);
    if (!body) {
      params = tl::unexpected<Status>(body.error());
    } else {
      params->insert(params->end(), body->begin(), body->end());
    }
  }
  if (!params) {
    ReplyError(response, BadData(params.error().message()));
    return true;
  }
  const std::int64_t now = clock_.NowMs();

  // Reads the series a selection needs with their samples in [lo, hi].
  auto read = [&](const std::vector<store::Matcher>& matchers, std::int64_t lo, std::int64_t hi,
                  std::vector<store::SeriesSamples>& out) -> std::optional<ApiError> {
    auto q = store_.Query(matchers, lo, hi);
    if (!q) return ApiError{500, "internal", q.error().message()};
    std::uint64_t total = 0;
    for (store::SeriesData& s : q->series) {
      store::SeriesSamples ss;
      if (Status st = q->Collect(s, ss.samples); !st.ok()) {
        return ApiError{500, "internal", st.message()};
      }
      total += ss.samples.size();
      if (total > options_.max_samples) {
        return ApiError{422, "execution",
                        "query processing would load too many samples into memory"};
      }
      ss.labels = std::move(s.labels);
      out.push_back(std::move(ss));
    }
    return std::nullopt;
  };

  if (endpoint == "query" || endpoint == "query_range") {
    const std::string* query = Param(*params, "query");
    Selection sel;
    if (auto e = ParseQuery(query == nullptr ? "" : *query, sel)) {
      ReplyError(response, *e);
      return true;
    }
    std::string data;
    if (endpoint == "query") {
      std::int64_t t = 0;
      if (auto e = TimeParam(*params, "time", now, t)) {
        ReplyError(response, *e);
        return true;
      }
      std::vector<store::SeriesSamples> series;
      const std::int64_t lo = sel.range_ms ? t - *sel.range_ms + 1 : t - options_.lookback_ms + 1;
      if (auto e = read(sel.matchers, lo, t, series)) {
        ReplyError(response, *e);
        return true;
      }
      if (sel.range_ms) {
        data = R"({"resultType":"matrix","result":[)";
        bool first = true;
        for (const store::SeriesSamples& s : series) {
          std::string values;
          for (const store::Sample& x : s.samples) {
            if (store::IsStaleNaN(x.v)) continue;
            if (!values.empty()) values += ',';
            values += '[';
            AppendPromTime(values, x.t);
            values += ",\"";
            AppendPromValue(values, x.v);
            values += "\"]";
          }
          if (values.empty()) continue;
          if (!first) data += ',';
          first = false;
          data += R"({"metric":)";
          AppendMetric(data, s.labels);
          data += R"(,"values":[)" + values + "]}";
        }
      } else {
        data = R"({"resultType":"vector","result":[)";
        bool first = true;
        for (const store::SeriesSamples& s : series) {
          const store::Sample* x = LatestAt(s.samples, t, options_.lookback_ms);
          if (x == nullptr) continue;
          if (!first) data += ',';
          first = false;
          data += R"({"metric":)";
          AppendMetric(data, s.labels);
          data += R"(,"value":[)";
          AppendPromTime(data, t);
          data += ",\"";
          AppendPromValue(data, x->v);
          data += "\"]}";
        }
      }
      data += "]}";
      Reply(response, data);
      return true;
    }
    // query_range
    if (sel.range_ms) {
      ReplyError(response, BadData("invalid expression type \"range vector\" for range query, "
                                   "must be Scalar or instant Vector"));
      return true;
    }
    std::int64_t start = 0;
    std::int64_t end = 0;
    for (auto [name, out] :
         {std::pair<const char*, std::int64_t*>{"start", &start}, {"end", &end}}) {
      const std::string* v = Param(*params, name);
      auto t = v == nullptr ? std::nullopt : ParseApiTime(*v);
      if (!t) {
        ReplyError(response,
                   BadData(std::string("invalid parameter \"") + name + "\": cannot parse \"" +
                           (v == nullptr ? "" : *v) + "\" to a valid timestamp"));
        return true;
      }
      *out = *t;
    }
    if (end < start) {
      ReplyError(response,
                 BadData("invalid parameter \"end\": end timestamp must not be before start time"));
      return true;
    }
    const std::string* step_text = Param(*params, "step");
    std::optional<std::int64_t> step;
    if (step_text != nullptr) {
      std::int64_t ms = 0;
      step = scrape::ParsePrometheusDuration(*step_text, &ms)
                 ? std::optional<std::int64_t>(ms)
                 : ParseApiTime(*step_text);  // seconds
    }
    if (!step || *step <= 0) {
      ReplyError(response, BadData("invalid parameter \"step\": zero or negative query resolution "
                                   "step widths are not accepted. Try a positive integer"));
      return true;
    }
    if ((end - start) / *step > options_.max_points) {
      ReplyError(response,
                 BadData("exceeded maximum resolution of 11,000 points per timeseries. Try "
                         "decreasing the query resolution (?step=XX)"));
      return true;
    }
    std::vector<store::SeriesSamples> series;
    if (auto e = read(sel.matchers, start - options_.lookback_ms + 1, end, series)) {
      ReplyError(response, *e);
      return true;
    }
    data = R"({"resultType":"matrix","result":[)";
    bool first = true;
    for (const store::SeriesSamples& s : series) {
      std::string values;
      for (std::int64_t t = start; t <= end; t += *step) {
        const store::Sample* x = LatestAt(s.samples, t, options_.lookback_ms);
        if (x == nullptr) continue;
        if (!values.empty()) values += ',';
        values += '[';
        AppendPromTime(values, t);
        values += ",\"";
        AppendPromValue(values, x->v);
        values += "\"]";
      }
      if (values.empty()) continue;
      if (!first) data += ',';
      first = false;
      data += R"({"metric":)";
      AppendMetric(data, s.labels);
      data += R"(,"values":[)" + values + "]}";
    }
    data += "]}";
    Reply(response, data);
    return true;
  }

  // Metadata endpoints: series, labels, label values over [start, end]
  // (default: all time, as Prometheus).
  std::int64_t start = 0;
  std::int64_t end = 0;
  if (auto e = TimeParam(*params, "start", std::numeric_limits<std::int64_t>::min() / 2, start)) {
    ReplyError(response, *e);
    return true;
  }
  if (auto e = TimeParam(*params, "end", std::numeric_limits<std::int64_t>::max() / 2, end)) {
    ReplyError(response, *e);
    return true;
  }
  if (endpoint == "series") {
    std::vector<std::vector<store::Matcher>> sets;
    for (const auto& [k, v] : *params) {
      if (k != "match[]") continue;
      auto m = store::ParseSelector(v);
      if (!m) {
        ReplyError(response, BadData("invalid parameter \"match[]\": " + m.error().message()));
        return true;
      }
      sets.push_back(std::move(*m));
    }
    if (sets.empty()) {
      ReplyError(response, BadData("no match[] parameter provided"));
      return true;
    }
    std::vector<store::Labels> all;
    for (const auto& m : sets) {
      auto found = store_.SeriesIn(m, start, end);
      if (!found) {
        ReplyError(response, ApiError{500, "internal", found.error().message()});
        return true;
      }
      all.insert(all.end(), found->begin(), found->end());
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    std::string data = "[";
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i > 0) data += ',';
      AppendMetric(data, all[i]);
    }
    Reply(response, data + "]");
    return true;
  }
  std::string label_name;
  if (label_values) {
    // The name is a path segment: percent-decoded, then checked like Prometheus.
    auto decoded = net::PathDecode(endpoint.substr(6, endpoint.size() - 6 - 7));
    if (!decoded || !recording::IsValidLabelName(*decoded)) {
      ReplyError(response, BadData("invalid label name: \"" +
                                   std::string(endpoint.substr(6, endpoint.size() - 13)) + "\""));
      return true;
    }
    label_name = std::move(*decoded);
  }
  auto names =
      label_values ? store_.LabelValues(label_name, start, end) : store_.LabelNames(start, end);
  if (!names) {
    ReplyError(response, ApiError{500, "internal", names.error().message()});
    return true;
  }
  std::string data = "[";
  for (std::size_t i = 0; i < names->size(); ++i) {
    if (i > 0) data += ',';
    AppendJsonString(data, (*names)[i]);
  }
  Reply(response, data + "]");
  return true;
}

}  // namespace gpucanary::daemon
