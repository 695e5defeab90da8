#include "daemon/query_api.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/api_format.h"
#include "model/matcher.h"
#include "model/names.h"
#include "net/url.h"
#include "scrape/config.h"

namespace gpucanary::daemon {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

struct ApiError {
  int status;
  const char* type;
  std::string message;
};

ApiError BadData(std::string message) { return {400, "bad_data", std::move(message)}; }

template <typename T>
using Answer = tl::expected<T, ApiError>;

// What an endpoint reads: the store, the limits, the request's parameters
// (query string, then a POSTed form), the time it arrived and the route's
// placeholder (the label name of /api/v1/label/{name}/values, undecoded).
struct Call {
  const store::Store& store;
  const QueryApiOptions& options;
  const Params& params;
  std::int64_t now;
  std::string_view arg;
};

// ---- Parameters -------------------------------------------------------------

const std::string* Param(const Params& params, std::string_view name) {
  for (const auto& [k, v] : params) {
    if (k == name) return &v;
  }
  return nullptr;
}

// The parameters of the query string and, for a POSTed form, of the body.
Result<Params> ReadParams(const net::HttpRequest& request) {
  auto params = net::ParseForm(request.query);
  if (params && request.method == "POST" &&
      request.Header("content-type").starts_with("application/x-www-form-urlencoded")) {
    auto body = net::ParseForm(request.body);
    if (!body) return tl::unexpected<Status>(body.error());
    params->insert(params->end(), body->begin(), body->end());
  }
  return params;
}

// A time parameter; `fallback` when absent, or an error naming it when there
// is no fallback.
Answer<std::int64_t> TimeParam(const Params& params, std::string_view name,
                               std::optional<std::int64_t> fallback) {
  const std::string* v = Param(params, name);
  if (v == nullptr && fallback) return *fallback;
  auto t = v == nullptr ? std::nullopt : ParseApiTime(*v);
  if (!t) {
    return tl::unexpected(BadData("invalid parameter \"" + std::string(name) +
                                  "\": cannot parse \"" + (v == nullptr ? "" : *v) +
                                  "\" to a valid timestamp"));
  }
  return *t;
}

// [start, end] of a metadata endpoint: all time when absent, as Prometheus.
Answer<std::pair<std::int64_t, std::int64_t>> MetadataRange(const Params& params) {
  auto start = TimeParam(params, "start", std::numeric_limits<std::int64_t>::min() / 2);
  if (!start) return tl::unexpected(start.error());
  auto end = TimeParam(params, "end", std::numeric_limits<std::int64_t>::max() / 2);
  if (!end) return tl::unexpected(end.error());
  return std::pair{*start, *end};
}

// A query: a vector selector, optionally with a range.
struct Selection {
  std::vector<model::Matcher> matchers;
  std::optional<std::int64_t> range_ms;
};

Answer<Selection> ParseQuery(const Params& params) {
  const std::string* text = Param(params, "query");
  std::string_view q = text == nullptr ? std::string_view() : std::string_view(*text);
  while (!q.empty() && std::isspace(static_cast<unsigned char>(q.back())) != 0) q.remove_suffix(1);
  Selection out;
  if (!q.empty() && q.back() == ']') {
    const std::size_t open = q.rfind('[');
    if (open == std::string_view::npos) {
      return tl::unexpected(BadData("invalid parameter \"query\": unbalanced ']'"));
    }
    const std::string_view dur = q.substr(open + 1, q.size() - open - 2);
    std::int64_t ms = 0;
    if (!scrape::ParsePrometheusDuration(dur, &ms) || ms <= 0) {
      return tl::unexpected(
          BadData("invalid parameter \"query\": bad range duration \"" + std::string(dur) + "\""));
    }
    out.range_ms = ms;
    q = q.substr(0, open);
  }
  auto matchers = model::ParseSelector(q);
  if (!matchers) {
    return tl::unexpected(
        BadData("invalid parameter \"query\": " + matchers.error().message() +
                " (gpucanary answers vector selectors, optionally with a range; not functions "
                "or operators)"));
  }
  out.matchers = std::move(*matchers);
  return out;
}

// query_range's step: a duration ("15s") or a number of seconds; positive.
Answer<std::int64_t> StepParam(const Params& params) {
  const std::string* text = Param(params, "step");
  std::optional<std::int64_t> step;
  if (text != nullptr) {
    std::int64_t ms = 0;
    step = scrape::ParsePrometheusDuration(*text, &ms) ? std::optional<std::int64_t>(ms)
                                                       : ParseApiTime(*text);  // seconds
  }
  if (!step || *step <= 0) {
    return tl::unexpected(
        BadData("invalid parameter \"step\": zero or negative query resolution "
                "step widths are not accepted. Try a positive integer"));
  }
  return *step;
}

// ---- Reading the store ------------------------------------------------------

// The series `matchers` select with their samples in [lo, hi], within the
// per-query sample limit.
Answer<std::vector<store::SeriesSamples>> ReadSeries(const Call& c,
                                                     const std::vector<model::Matcher>& matchers,
                                                     std::int64_t lo, std::int64_t hi) {
  auto q = c.store.Query(matchers, lo, hi);
  if (!q) return tl::unexpected(ApiError{500, "internal", q.error().message()});
  std::vector<store::SeriesSamples> out;
  std::uint64_t total = 0;
  for (store::SeriesData& s : q->series) {
    store::SeriesSamples ss;
    if (Status st = q->Collect(s, ss.samples); !st.ok()) {
      return tl::unexpected(ApiError{500, "internal", st.message()});
    }
    total += ss.samples.size();
    if (total > c.options.max_samples) {
      return tl::unexpected(
          ApiError{422, "execution", "query processing would load too many samples into memory"});
    }
    ss.labels = std::move(s.labels);
    out.push_back(std::move(ss));
  }
  return out;
}

// The newest sample at or before `t` within the lookback, [t - lookback, t]
// closed at both ends as in Prometheus 2.42 (promql/engine.go
// vectorSelectorSingle drops only t < ref - lookback), unless it is a
// staleness marker. `samples` in time order.
const store::Sample* LatestAt(const std::vector<store::Sample>& samples, std::int64_t t,
                              std::int64_t lookback_ms) {
  auto it = std::upper_bound(samples.begin(), samples.end(), t,
                             [](std::int64_t x, const store::Sample& s) { return x < s.t; });
  if (it == samples.begin()) return nullptr;
  --it;
  if (it->t < t - lookback_ms || store::IsStaleNaN(it->v)) return nullptr;
  return &*it;
}

// ---- JSON -------------------------------------------------------------------

void AppendMetric(std::string& out, const model::Labels& labels) {
  out += "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(out, labels[i].name);
    out += ':';
    AppendJsonString(out, labels[i].value);
  }
  out += "}";
}

// [1764680000,"1980"]
void AppendPoint(std::string& out, std::int64_t t, double v) {
  out += '[';
  AppendPromTime(out, t);
  out += ",\"";
  AppendPromValue(out, v);
  out += "\"]";
}

// A matrix result: every series for which `points(series, values)` wrote at
// least one point into `values`.
template <typename Points>
std::string Matrix(const std::vector<store::SeriesSamples>& series, Points&& points) {
  std::string data = R"({"resultType":"matrix","result":[)";
  bool first = true;
  for (const store::SeriesSamples& s : series) {
    std::string values;
    points(s, values);
    if (values.empty()) continue;
    if (!first) data += ',';
    first = false;
    data += R"({"metric":)";
    AppendMetric(data, s.labels);
    data += R"(,"values":[)" + values + "]}";
  }
  return data + "]}";
}

// A vector result at `t`: every series with a sample within the lookback.
std::string Vector(const std::vector<store::SeriesSamples>& series, std::int64_t t,
                   std::int64_t lookback_ms) {
  std::string data = R"({"resultType":"vector","result":[)";
  bool first = true;
  for (const store::SeriesSamples& s : series) {
    const store::Sample* x = LatestAt(s.samples, t, lookback_ms);
    if (x == nullptr) continue;
    if (!first) data += ',';
    first = false;
    data += R"({"metric":)";
    AppendMetric(data, s.labels);
    data += R"(,"value":)";
    AppendPoint(data, t, x->v);
    data += "}";
  }
  return data + "]}";
}

Answer<std::string> StringList(const Result<std::vector<std::string>>& names) {
  if (!names) return tl::unexpected(ApiError{500, "internal", names.error().message()});
  std::string data = "[";
  for (std::size_t i = 0; i < names->size(); ++i) {
    if (i > 0) data += ',';
    AppendJsonString(data, (*names)[i]);
  }
  return data + "]";
}

// ---- The endpoints ----------------------------------------------------------

// GET|POST /api/v1/query: query, time (default now). A selector with a range
// answers its raw samples (a matrix), one without the latest sample at time
// (a vector).
Answer<std::string> Query(const Call& c) {
  auto sel = ParseQuery(c.params);
  if (!sel) return tl::unexpected(sel.error());
  auto t = TimeParam(c.params, "time", c.now);
  if (!t) return tl::unexpected(t.error());
  // `s[r]` at t is [t - r, t], closed as in Prometheus 2.42 (matrixIterSlice
  // keeps T >= mint); Prometheus 3 made it (t - r, t].
  const std::int64_t lo = sel->range_ms ? *t - *sel->range_ms : *t - c.options.lookback_ms;
  auto series = ReadSeries(c, sel->matchers, lo, *t);
  if (!series) return tl::unexpected(series.error());
  if (!sel->range_ms) return Vector(*series, *t, c.options.lookback_ms);
  return Matrix(*series, [](const store::SeriesSamples& s, std::string& values) {
    for (const store::Sample& x : s.samples) {
      if (store::IsStaleNaN(x.v)) continue;
      if (!values.empty()) values += ',';
      AppendPoint(values, x.t, x.v);
    }
  });
}

// GET|POST /api/v1/query_range: query (no range), start, end, step; each
// step's latest sample within the lookback.
Answer<std::string> QueryRange(const Call& c) {
  auto sel = ParseQuery(c.params);
  if (!sel) return tl::unexpected(sel.error());
  if (sel->range_ms) {
    return tl::unexpected(BadData(
        "invalid expression type \"range vector\" for range query, must be Scalar or instant "
        "Vector"));
  }
  auto start = TimeParam(c.params, "start", std::nullopt);
  if (!start) return tl::unexpected(start.error());
  auto end = TimeParam(c.params, "end", std::nullopt);
  if (!end) return tl::unexpected(end.error());
  if (*end < *start) {
    return tl::unexpected(
        BadData("invalid parameter \"end\": end timestamp must not be before start time"));
  }
  auto step = StepParam(c.params);
  if (!step) return tl::unexpected(step.error());
  if ((*end - *start) / *step > c.options.max_points) {
    return tl::unexpected(BadData(
        "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
        "resolution (?step=XX)"));
  }
  auto series = ReadSeries(c, sel->matchers, *start - c.options.lookback_ms, *end);
  if (!series) return tl::unexpected(series.error());
  return Matrix(*series, [&](const store::SeriesSamples& s, std::string& values) {
    for (std::int64_t t = *start; t <= *end; t += *step) {
      const store::Sample* x = LatestAt(s.samples, t, c.options.lookback_ms);
      if (x == nullptr) continue;
      if (!values.empty()) values += ',';
      AppendPoint(values, t, x->v);
    }
  });
}

// The match[] selectors (repeated) of /series, /labels and
// /label/<name>/values; empty when none is given.
Answer<std::vector<std::vector<model::Matcher>>> MatchSets(const Call& c) {
  std::vector<std::vector<model::Matcher>> sets;
  for (const auto& [k, v] : c.params) {
    if (k != "match[]") continue;
    auto m = model::ParseSelector(v);
    if (!m) return tl::unexpected(BadData("invalid parameter \"match[]\": " + m.error().message()));
    sets.push_back(std::move(*m));
  }
  return sets;
}

// The label sets of the series `sets` select in the range (deduplicated).
Answer<std::vector<model::Labels>> Selected(const Call& c,
                                            const std::vector<std::vector<model::Matcher>>& sets,
                                            std::int64_t from, std::int64_t to) {
  std::vector<model::Labels> all;
  for (const auto& m : sets) {
    auto found = c.store.SeriesIn(m, from, to);
    if (!found) return tl::unexpected(ApiError{500, "internal", found.error().message()});
    all.insert(all.end(), found->begin(), found->end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

// GET|POST /api/v1/series: match[] (repeated), start, end.
Answer<std::string> Series(const Call& c) {
  auto range = MetadataRange(c.params);
  if (!range) return tl::unexpected(range.error());
  auto sets = MatchSets(c);
  if (!sets) return tl::unexpected(sets.error());
  if (sets->empty()) return tl::unexpected(BadData("no match[] parameter provided"));
  auto selected = Selected(c, *sets, range->first, range->second);
  if (!selected) return tl::unexpected(selected.error());
  const std::vector<model::Labels>& all = *selected;
  std::string data = "[";
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i > 0) data += ',';
    AppendMetric(data, all[i]);
  }
  return data + "]";
}

// GET|POST /api/v1/labels: start, end, match[] (optional, repeated: only
// the names of the series they select, as Prometheus does).
Answer<std::string> Labels(const Call& c) {
  auto range = MetadataRange(c.params);
  if (!range) return tl::unexpected(range.error());
  auto sets = MatchSets(c);
  if (!sets) return tl::unexpected(sets.error());
  if (sets->empty()) return StringList(c.store.LabelNames(range->first, range->second));
  auto series = Selected(c, *sets, range->first, range->second);
  if (!series) return tl::unexpected(series.error());
  std::set<std::string> names;
  for (const model::Labels& labels : *series) {
    for (const auto& l : labels) names.insert(l.name);
  }
  return StringList(std::vector<std::string>(names.begin(), names.end()));
}

// GET|POST /api/v1/label/{name}/values: start, end, match[] (optional, as
// for /labels).
Answer<std::string> LabelValues(const Call& c) {
  auto range = MetadataRange(c.params);
  if (!range) return tl::unexpected(range.error());
  // The name is a path segment: percent-decoded, then checked like Prometheus.
  auto name = net::PathDecode(c.arg);
  if (!name || !model::IsValidLabelName(*name)) {
    return tl::unexpected(BadData("invalid label name: \"" + std::string(c.arg) + "\""));
  }
  auto sets = MatchSets(c);
  if (!sets) return tl::unexpected(sets.error());
  if (sets->empty()) return StringList(c.store.LabelValues(*name, range->first, range->second));
  auto series = Selected(c, *sets, range->first, range->second);
  if (!series) return tl::unexpected(series.error());
  std::set<std::string> values;
  for (const model::Labels& labels : *series) {
    const std::string_view v = model::LabelValue(labels, *name);
    if (!v.empty()) values.insert(std::string(v));
  }
  return StringList(std::vector<std::string>(values.begin(), values.end()));
}

// The route table.
using AnswerFn = Answer<std::string> (*)(const Call& c);
struct Endpoint {
  std::string_view pattern;
  AnswerFn answer;
};
constexpr std::array<Endpoint, 5> kEndpoints = {{
    {"/api/v1/query", &Query},
    {"/api/v1/query_range", &QueryRange},
    {"/api/v1/series", &Series},
    {"/api/v1/labels", &Labels},
    {"/api/v1/label/{name...}/values", &LabelValues},
}};

// The steps every endpoint shares: its parameters, the time, the envelope.
void Serve(const store::Store& store, const QueryApiOptions& options, const Clock& clock,
           AnswerFn answer, const net::HttpRequest& request, std::string_view arg,
           net::HttpResponse& response) {
  Result<Params> params = ReadParams(request);
  if (!params) {
    ReplyApiError(response, 400, "bad_data", params.error().message());
    return;
  }
  const Call call{store, options, *params, clock.NowMs(), arg};
  const Answer<std::string> data = answer(call);
  if (!data) {
    ReplyApiError(response, data.error().status, data.error().type, data.error().message);
    return;
  }
  ReplyApiData(response, 200, *data);
}

}  // namespace

QueryApi::QueryApi(const store::Store& store, const Clock& clock, QueryApiOptions options) {
  for (const Endpoint& e : kEndpoints) {
    router_.Add(
        "GET, POST", e.pattern,
        [&store, &clock, options, answer = e.answer](
            const net::HttpRequest& request, std::string_view arg, net::HttpResponse& response) {
          Serve(store, options, clock, answer, request, arg, response);
        });
  }
}

bool QueryApi::Handle(const net::HttpRequest& request, net::HttpResponse& response) const {
  return router_.Handle(request, response);
}

}  // namespace gpucanary::daemon
