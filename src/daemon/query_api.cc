#include "daemon/query_api.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <span>
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

// Prometheus's words (promql/engine.go ErrTooManySamples("query execution")).
ApiError TooManySamples() {
  return {422, "execution",
          "query processing would load too many samples into memory in query execution"};
}

// What a query keeps of one series: appends to `points` the points its
// answer needs, from the series' samples in the query's range. May stop
// early once `points` holds more than `room`: the query is refused then. May
// drop chunks of `s` it does not need.
using Keep = std::function<Status(const store::QueryResult& q, store::SeriesData& s,
                                  std::uint64_t room, std::vector<store::Sample>& points)>;

// The series `matchers` select in [lo, hi], each with the points `keep`
// keeps; every series' points together count against max_samples, as
// Prometheus counts the samples a query holds (not the raw ones it reads).
// Series without points are left out.
Answer<std::vector<store::SeriesSamples>> ReadSeries(const Call& c,
                                                     const std::vector<model::Matcher>& matchers,
                                                     std::int64_t lo, std::int64_t hi,
                                                     const Keep& keep) {
  auto q = c.store.Query(matchers, lo, hi);
  if (!q) return tl::unexpected(ApiError{500, "internal", q.error().message()});
  std::vector<store::SeriesSamples> out;
  std::uint64_t total = 0;
  for (store::SeriesData& s : q->series) {
    store::SeriesSamples ss;
    if (Status st = keep(*q, s, c.options.max_samples - total, ss.samples); !st.ok()) {
      return tl::unexpected(ApiError{500, "internal", st.message()});
    }
    total += ss.samples.size();
    if (total > c.options.max_samples) return tl::unexpected(TooManySamples());
    if (ss.samples.empty()) continue;
    ss.labels = std::move(s.labels);
    out.push_back(std::move(ss));
  }
  return out;
}

// A range selector's points: every sample but staleness markers.
Status KeepRaw(const store::QueryResult& q, store::SeriesData& s, std::uint64_t room,
               std::vector<store::Sample>& points) {
  return q.ForEach(s, [&](std::span<const store::Sample> run) {
    for (const store::Sample& x : run) {
      if (points.size() > room) return;
      if (!store::IsStaleNaN(x.v)) points.push_back(x);
    }
  });
}

// An instant selector's point at `t`, read over [t - lookback, t]: the
// newest sample, [t - lookback, t] closed at both ends as in Prometheus 2.42
// (promql/engine.go vectorSelectorSingle drops only t < ref - lookback),
// unless it is a staleness marker.
Status KeepLatest(const store::QueryResult& q, const store::SeriesData& s, std::int64_t t,
                  std::vector<store::Sample>& points) {
  std::optional<store::Sample> newest;
  Status st = q.ForEach(s, [&](std::span<const store::Sample> run) { newest = run.back(); });
  if (st.ok() && newest && !store::IsStaleNaN(newest->v)) points.push_back({t, newest->v});
  return st;
}

// A range query's steps: start, start + step, ... up to end.
struct Steps {
  std::int64_t start;
  std::int64_t end;
  std::int64_t step;
};

// Whether some step's lookback window [t - lookback, t] meets [mint, maxt]:
// a chunk that meets none holds no step's newest sample (and a sample newer
// than the one a step takes would be in that step's window too), so it need
// not be decoded. The first step at or after mint has the earliest window
// that can reach the chunk.
bool SomeStepReads(const Steps& steps, std::int64_t lookback_ms, std::int64_t mint,
                   std::int64_t maxt) {
  std::int64_t t = steps.start;
  if (mint > steps.start) {
    t += (mint - steps.start + steps.step - 1) / steps.step * steps.step;
  }
  return t <= steps.end && t - lookback_ms <= maxt;
}

// A range query's points: at each step t, the newest sample at or before t
// within the lookback, unless a staleness marker (as KeepLatest), from one
// pass over the series' samples in [start - lookback, end].
Status KeepSteps(const store::QueryResult& q, store::SeriesData& s, const Steps& steps,
                 std::int64_t lookback_ms, std::vector<store::Sample>& points) {
  std::erase_if(s.chunks, [&](const store::ChunkView& c) {
    return !SomeStepReads(steps, lookback_ms, c.mint, c.maxt);
  });
  std::int64_t t = steps.start;
  std::optional<store::Sample> prev;  // the newest sample before the current step's end
  // Answers every step before `until` (exclusive) from `prev`.
  auto answer_until = [&](std::int64_t until) {
    for (; t <= steps.end && t < until; t += steps.step) {
      if (prev && prev->t >= t - lookback_ms && !store::IsStaleNaN(prev->v)) {
        points.push_back({t, prev->v});
      }
    }
  };
  Status st = q.ForEach(s, [&](std::span<const store::Sample> run) {
    for (const store::Sample& x : run) {
      answer_until(x.t);
      prev = x;
    }
  });
  answer_until(std::numeric_limits<std::int64_t>::max());
  return st;
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

// A matrix result: each series with its points. REQUIRES: none without.
std::string Matrix(const std::vector<store::SeriesSamples>& series) {
  std::string data = R"({"resultType":"matrix","result":[)";
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (i > 0) data += ',';
    data += R"({"metric":)";
    AppendMetric(data, series[i].labels);
    data += R"(,"values":[)";
    for (std::size_t k = 0; k < series[i].samples.size(); ++k) {
      if (k > 0) data += ',';
      AppendPoint(data, series[i].samples[k].t, series[i].samples[k].v);
    }
    data += "]}";
  }
  return data + "]}";
}

// A vector result: each series with its one point.
std::string Vector(const std::vector<store::SeriesSamples>& series) {
  std::string data = R"({"resultType":"vector","result":[)";
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (i > 0) data += ',';
    data += R"({"metric":)";
    AppendMetric(data, series[i].labels);
    data += R"(,"value":)";
    AppendPoint(data, series[i].samples.front().t, series[i].samples.front().v);
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
  if (sel->range_ms) {
    auto series = ReadSeries(c, sel->matchers, *t - *sel->range_ms, *t, KeepRaw);
    if (!series) return tl::unexpected(series.error());
    return Matrix(*series);
  }
  auto series =
      ReadSeries(c, sel->matchers, *t - c.options.lookback_ms, *t,
                 [&](const store::QueryResult& q, store::SeriesData& s, std::uint64_t,
                     std::vector<store::Sample>& points) { return KeepLatest(q, s, *t, points); });
  if (!series) return tl::unexpected(series.error());
  return Vector(*series);
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
  const Steps steps{*start, *end, *step};
  auto series = ReadSeries(c, sel->matchers, *start - c.options.lookback_ms, *end,
                           [&](const store::QueryResult& q, store::SeriesData& s, std::uint64_t,
                               std::vector<store::Sample>& points) {
                             return KeepSteps(q, s, steps, c.options.lookback_ms, points);
                           });
  if (!series) return tl::unexpected(series.error());
  return Matrix(*series);
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

// The steps every endpoint shares: a slot, its parameters, the time, the
// envelope.
void Serve(const store::Store& store, const QueryApiOptions& options, const Clock& clock,
           AnswerFn answer, const net::HttpRequest& request, std::string_view arg,
           net::HttpResponse& response) {
  if (options.on_slot_taken) options.on_slot_taken();
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

QueryApi::QueryApi(const store::Store& store, const Clock& clock, QueryApiOptions options)
    : options_(std::move(options)) {
  for (const Endpoint& e : kEndpoints) {
    router_.Add(
        "GET, POST", e.pattern,
        [this, &store, &clock, answer = e.answer](
            const net::HttpRequest& request, std::string_view arg, net::HttpResponse& response) {
          const Slot slot(options_, gate_);
          if (!slot.held()) {
            ReplyApiError(response, 503, "unavailable",
                          "too many concurrent queries (query.max_concurrency: " +
                              std::to_string(options_.max_concurrency) + ", " +
                              std::to_string(options_.max_queued) + " waiting at most); try again");
            response.headers.emplace_back("Retry-After", "1");
            return;
          }
          Serve(store, options_, clock, answer, request, arg, response);
        });
  }
}

// One of max_concurrency slots, held while it lives: taken at once when one
// is free, else after waiting (one of max_queued waiters, queue_wait_ms at
// most); none when the queue is full or the wait ran out.
QueryApi::Slot::Slot(const QueryApiOptions& options, Gate& gate) : gate_(gate) {
  MutexLock lock(gate.mu);
  if (gate.running < options.max_concurrency) {
    ++gate.running;
    held_ = true;
    return;
  }
  if (gate.waiting >= options.max_queued) return;
  ++gate.waiting;
  held_ = gate.freed.WaitFor(
      gate.mu, std::chrono::milliseconds(options.queue_wait_ms),
      [&]() REQUIRES(gate.mu) { return gate.running < options.max_concurrency; });
  --gate.waiting;
  if (held_) ++gate.running;
}

QueryApi::Slot::~Slot() {
  if (!held_) return;
  {
    MutexLock lock(gate_.mu);
    --gate_.running;
  }
  gate_.freed.NotifyOne();
}

int QueryApi::waiting_for_a_slot() const {
  MutexLock lock(gate_.mu);
  return gate_.waiting;
}

bool QueryApi::Handle(const net::HttpRequest& request, net::HttpResponse& response) const {
  return router_.Handle(request, response);
}

}  // namespace gpucanary::daemon
