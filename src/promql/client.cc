#include "promql/client.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "core/base64.h"
#include "net/http_client.h"

namespace gpucanary::promql {
namespace {

constexpr std::string_view kQueryPath = "/api/v1/query";
constexpr std::string_view kQueryRangePath = "/api/v1/query_range";

// The query as error messages quote it: long expressions cut short.
std::string Quoted(std::string_view query) {
  constexpr std::size_t kMax = 160;
  std::string out = "\"" + std::string(query.substr(0, kMax));
  if (query.size() > kMax) out += "...";
  return out + "\"";
}

std::string FormatSeconds(double seconds) {
  std::array<char, 32> buf{};
  const int n = std::snprintf(buf.data(), buf.size(), "%.9f", seconds);
  return std::string(buf.data(), static_cast<std::size_t>(std::max(n, 0)));
}

// One server, one kept-alive connection, the options turned into headers.
class Api {
 public:
  static Result<Api> Open(std::string_view base_url, const ClientOptions& options) {
    if (options.max_raw_window_ms < 1 || options.max_points < 1) {
      return Error(StatusCode::kInvalidArgument,
                   "promql: max_raw_window_ms and max_points must be at least 1");
    }
    std::string base(base_url);
    while (!base.empty() && base.back() == '/') base.pop_back();
    Result<net::HttpUrl> url = net::ParseHttpUrl(base);
    if (!url) return Error(url.error());
    if (url->target.find('?') != std::string::npos) {
      return Error(StatusCode::kInvalidArgument,
                   "bad base URL '" + std::string(base_url) + "': it must not have a query");
    }
    std::string prefix = url->target == "/" ? std::string() : url->target;
    return Api(std::move(base), std::move(prefix), *url, options);
  }

  // One API call: `form` holds the parameters, already encoded.
  Result<QueryResult> Call(std::string_view path, std::string form, std::string_view query) {
    net::FetchOptions fetch = fetch_;
    std::string target = prefix_ + std::string(path);
    if (target.size() + 1 + form.size() <= max_get_bytes_) {
      target += '?';
      target += form;
    } else {
      fetch.method = "POST";
      fetch.content_type = "application/x-www-form-urlencoded";
      fetch.body = std::move(form);
    }
    Result<net::HttpResponse> response = connection_.Request(target, fetch);
    if (!response) return Error(response.error());
    const std::string what =
        fetch.method + " " + base_ + std::string(path) + " (query " + Quoted(query) + ")";
    return ParseQueryResponse(response->status, response->body, what);
  }

 private:
  Api(std::string base, std::string prefix, const net::HttpUrl& url, const ClientOptions& options)
      : base_(std::move(base)),
        prefix_(std::move(prefix)),
        connection_(url.https ? net::HttpConnection(url.host, url.port, options.tls)
                              : net::HttpConnection(url.host, url.port)),
        max_get_bytes_(options.max_get_bytes) {
    fetch_.timeout_ms = options.timeout_ms;
    fetch_.max_body_bytes = options.max_body_bytes;
    fetch_.accept_gzip = true;
    fetch_.headers = options.headers;
    fetch_.headers.emplace_back("Accept", "application/json");
    if (!options.bearer_token.empty()) {
      fetch_.headers.emplace_back("Authorization", "Bearer " + options.bearer_token);
    } else if (!options.basic_auth_user.empty()) {
      fetch_.headers.emplace_back(
          "Authorization",
          "Basic " + Base64Encode(options.basic_auth_user + ":" + options.basic_auth_password));
    }
  }

  std::string base_;    // the base URL, for messages
  std::string prefix_;  // its path ("/prometheus" for Mimir), "" at the root
  net::HttpConnection connection_;
  net::FetchOptions fetch_;
  std::size_t max_get_bytes_;
};

// Orders label sets as std::vector<Label>'s operator< would, comparing the
// strings directly (clang-tidy 14 misreads the defaulted operator<=> of
// model::Label, modernize-use-nullptr).
struct LabelsLess {
  bool operator()(const model::Labels& a, const model::Labels& b) const {
    return std::lexicographical_compare(
        a.begin(), a.end(), b.begin(), b.end(), [](const model::Label& x, const model::Label& y) {
          return x.name != y.name ? x.name < y.name : x.value < y.value;
        });
  }
};

// Joins the answers of a split query: series by label set, samples in the
// order the pieces came (pieces go forward in time and do not overlap).
class Joiner {
 public:
  // Adds the samples of `part` with lo <= t <= hi.
  void Add(QueryResult part, std::int64_t lo, std::int64_t hi) {
    for (std::string& w : part.warnings) {
      if (seen_warnings_.insert(w).second) out_.warnings.push_back(std::move(w));
    }
    for (Series& s : part.series) {
      auto first = std::lower_bound(s.samples.begin(), s.samples.end(), lo,
                                    [](const Sample& a, std::int64_t t) { return a.t_ms < t; });
      auto last = std::upper_bound(first, s.samples.end(), hi,
                                   [](std::int64_t t, const Sample& a) { return t < a.t_ms; });
      if (first == last) continue;
      auto [it, inserted] = index_.try_emplace(s.labels, out_.series.size());
      if (inserted) out_.series.push_back(Series{std::move(s.labels), {}});
      std::vector<Sample>& to = out_.series[it->second].samples;
      to.insert(to.end(), first, last);
    }
  }

  QueryResult Finish() && {
    std::sort(out_.series.begin(), out_.series.end(),
              [](const Series& a, const Series& b) { return LabelsLess()(a.labels, b.labels); });
    return std::move(out_);
  }

 private:
  QueryResult out_;
  std::map<model::Labels, std::size_t, LabelsLess> index_;
  std::set<std::string> seen_warnings_;
};

std::string TimeoutParam(const ClientOptions& options) {
  return options.query_timeout_s > 0 ? "&timeout=" + FormatSeconds(options.query_timeout_s) : "";
}

}  // namespace

std::string FormatApiTime(std::int64_t t_ms) {
  const bool negative = t_ms < 0;
  // Unsigned, so that the most negative int64 negates without overflow.
  const std::uint64_t abs_ms =
      negative ? ~static_cast<std::uint64_t>(t_ms) + 1 : static_cast<std::uint64_t>(t_ms);
  std::array<char, 32> buf{};
  const int n =
      std::snprintf(buf.data(), buf.size(), "%s%llu.%03llu", negative ? "-" : "",
                    static_cast<unsigned long long>(abs_ms / 1000),   // NOLINT(google-runtime-int)
                    static_cast<unsigned long long>(abs_ms % 1000));  // NOLINT(google-runtime-int)
  return std::string(buf.data(), static_cast<std::size_t>(std::max(n, 0)));
}

Result<QueryResult> QueryInstant(std::string_view base_url, std::string_view query,
                                 std::int64_t time_ms, const ClientOptions& options) {
  Result<Api> api = Api::Open(base_url, options);
  if (!api) return Error(api.error());
  return api->Call(
      kQueryPath,
      "query=" + UrlEncode(query) + "&time=" + FormatApiTime(time_ms) + TimeoutParam(options),
      query);
}

Result<QueryResult> QueryRaw(std::string_view base_url, std::string_view selector,
                             std::int64_t start_ms, std::int64_t end_ms,
                             const ClientOptions& options) {
  if (end_ms < start_ms) {
    return Error(StatusCode::kInvalidArgument, "promql: QueryRaw " + Quoted(selector) + ": end " +
                                                   FormatApiTime(end_ms) + " before start " +
                                                   FormatApiTime(start_ms));
  }
  Result<Api> api = Api::Open(base_url, options);
  if (!api) return Error(api.error());
  Joiner joiner;
  const std::int64_t window = options.max_raw_window_ms;
  for (std::int64_t lo = start_ms;;) {
    const std::int64_t hi = end_ms - lo >= window - 1 ? lo + (window - 1) : end_ms;
    // `s[w]` at time t selects [t-w, t] in Prometheus 2 and (t-w, t] in 3;
    // asking one millisecond more and keeping [lo, hi] is right for both.
    const std::string expr = std::string(selector) + "[" + std::to_string(hi - lo + 1) + "ms]";
    Result<QueryResult> part = api->Call(
        kQueryPath,
        "query=" + UrlEncode(expr) + "&time=" + FormatApiTime(hi) + TimeoutParam(options), expr);
    if (!part) return Error(part.error());
    if (part->type != ResultType::kMatrix) {
      return Error(StatusCode::kParseError, "promql: " + Quoted(expr) +
                                                " did not answer a matrix: is " + Quoted(selector) +
                                                " a plain series selector?");
    }
    joiner.Add(std::move(*part), lo, hi);
    if (hi == end_ms) break;
    lo = hi + 1;
  }
  return std::move(joiner).Finish();
}

Result<QueryResult> QueryRange(std::string_view base_url, std::string_view query,
                               std::int64_t start_ms, std::int64_t end_ms, std::int64_t step_ms,
                               const ClientOptions& options) {
  if (step_ms <= 0 || end_ms < start_ms) {
    return Error(StatusCode::kInvalidArgument, "promql: QueryRange " + Quoted(query) +
                                                   ": needs step > 0 and end >= start (step " +
                                                   std::to_string(step_ms) + " ms, start " +
                                                   FormatApiTime(start_ms) + ", end " +
                                                   FormatApiTime(end_ms) + ")");
  }
  Result<Api> api = Api::Open(base_url, options);
  if (!api) return Error(api.error());
  Joiner joiner;
  const std::int64_t last_index = (end_ms - start_ms) / step_ms;
  for (std::int64_t first = 0; first <= last_index; first += options.max_points) {
    const std::int64_t last = std::min(last_index, first + (options.max_points - 1));
    const std::int64_t lo = start_ms + first * step_ms;
    const std::int64_t hi = start_ms + last * step_ms;
    Result<QueryResult> part = api->Call(
        kQueryRangePath,
        "query=" + UrlEncode(query) + "&start=" + FormatApiTime(lo) + "&end=" + FormatApiTime(hi) +
            "&step=" + FormatApiTime(step_ms) + TimeoutParam(options),
        query);
    if (!part) return Error(part.error());
    joiner.Add(std::move(*part), lo, hi);
    if (last == last_index) break;
  }
  return std::move(joiner).Finish();
}

}  // namespace gpucanary::promql
