// The client against a fake query API on a net::HttpServer: request shapes
// (GET and form POST, parameters, headers), splitting and joining, errors.
// tests/promql_prometheus_test.cc runs it against a real Prometheus.

#include "promql/client.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "net/http_server.h"

namespace gpucanary::promql {
namespace {

std::string UrlDecode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

std::map<std::string, std::string> ParseForm(std::string_view form) {
  std::map<std::string, std::string> out;
  while (!form.empty()) {
    const std::size_t amp = form.find('&');
    const std::string_view kv = form.substr(0, amp);
    const std::size_t eq = kv.find('=');
    out[UrlDecode(kv.substr(0, eq))] =
        eq == std::string_view::npos ? "" : UrlDecode(kv.substr(eq + 1));
    form = amp == std::string_view::npos ? std::string_view() : form.substr(amp + 1);
  }
  return out;
}

std::int64_t Ms(const std::string& seconds) { return std::llround(std::stod(seconds) * 1000); }

std::string Seconds(std::int64_t ms) { return FormatApiTime(ms); }

// A fake query API. Raw data: series "a" has a sample every 1000 ms from
// t = 0 to 100000 with value t/1000; series "b" every 7000 ms. A raw query
// `x[Wms]` at time T returns the samples in [T-W, T] (Prometheus 2's
// closed range). query_range answers value = t for each point of the grid.
class FakeApi {
 public:
  FakeApi() {
    const Result<std::uint16_t> port = server_.Listen(
        "127.0.0.1", 0,
        [this](const net::HttpRequest& req, net::HttpResponse& resp) { Serve(req, resp); });
    EXPECT_TRUE(port.has_value());
    EXPECT_TRUE(server_.Start().ok());
    url_ = "http://127.0.0.1:" + std::to_string(*port);
  }

  struct Seen {
    std::string method;
    std::string path;
    std::map<std::string, std::string> params;
    std::string authorization;
    std::string tenant;
  };

  const std::string& url() const { return url_; }
  std::vector<Seen> seen() {
    MutexLock lock(mu_);
    return seen_;
  }

 private:
  void Serve(const net::HttpRequest& req, net::HttpResponse& resp) {
    Seen s{req.method, req.path,
           ParseForm(req.method == "POST" ? std::string_view(req.body) : req.query),
           std::string(req.Header("authorization")), std::string(req.Header("x-scope-orgid"))};
    {
      MutexLock lock(mu_);
      seen_.push_back(s);
    }
    resp.content_type = "application/json";
    std::string path = s.path;
    if (path.starts_with("/prometheus/")) path.erase(0, 11);  // a Mimir-style prefix
    const std::string& q = s.params["query"];
    if (q == "bad(") {
      resp.status = 400;
      resp.body = R"({"status":"error","errorType":"bad_data","error":"parse error"})";
      return;
    }
    if (path == "/api/v1/query_range") {
      std::string values;
      const std::int64_t step = Ms(s.params["step"]);
      for (std::int64_t t = Ms(s.params["start"]); t <= Ms(s.params["end"]); t += step) {
        if (!values.empty()) values += ',';
        values += "[" + Seconds(t) + ",\"" + std::to_string(t) + "\"]";
      }
      resp.body = R"({"status":"success","data":{"resultType":"matrix","result":[)"
                  R"({"metric":{"job":"x"},"values":[)" +
                  values + "]}]}}";
      return;
    }
    if (path == "/api/v1/query") {
      const std::size_t open = q.find('[');
      if (open == std::string::npos) {
        resp.body = R"({"status":"success","data":{"resultType":"scalar","result":[1,"1"]}})";
        return;
      }
      const std::int64_t w = std::stoll(q.substr(open + 1));
      const std::int64_t t = Ms(s.params["time"]);
      std::string result;
      for (const auto& [name, every] :
           {std::pair<std::string, std::int64_t>{"a", 1000}, {"b", 7000}}) {
        std::string values;
        for (std::int64_t ts = 0; ts <= 100000; ts += every) {
          if (ts < t - w || ts > t) continue;
          if (!values.empty()) values += ',';
          values += "[" + Seconds(ts) + ",\"" + std::to_string(ts / 1000) + "\"]";
        }
        if (values.empty()) continue;
        if (!result.empty()) result += ',';
        result += R"({"metric":{"__name__":"m","s":")" + name + R"("},"values":[)" + values + "]}";
      }
      resp.body = R"({"status":"success","data":{"resultType":"matrix","result":[)" + result +
                  "]},\"warnings\":[\"w1\"]}";
      return;
    }
    resp.status = 404;
    resp.content_type = "text/plain";
    resp.body = "404 page not found";
  }

  net::HttpServer server_{net::HttpServer::Options{}};
  std::string url_;
  Mutex mu_;
  std::vector<Seen> seen_ GUARDED_BY(mu_);
};

TEST(EncodingTest, UrlEncodeAndTime) {
  EXPECT_EQ(UrlEncode("up{job=\"a b\"}[5m] + ä~._-"),
            "up%7Bjob%3D%22a%20b%22%7D%5B5m%5D%20%2B%20%C3%A4~._-");
  EXPECT_EQ(FormatApiTime(1796214071445), "1796214071.445");
  EXPECT_EQ(FormatApiTime(1796214071000), "1796214071.000");
  EXPECT_EQ(FormatApiTime(5), "0.005");
  EXPECT_EQ(FormatApiTime(-1500), "-1.500");
  EXPECT_EQ(FormatApiTime(INT64_MIN), "-9223372036854775.808");
}

TEST(ClientTest, QueryRawSplitsLongWindowsAndJoinsTheSamplesExactly) {
  FakeApi api;
  ClientOptions options;
  options.max_raw_window_ms = 10000;
  const Result<QueryResult> r = QueryRaw(api.url(), "m", 2500, 50000, options);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), 2U);
  EXPECT_EQ(r->series[0].labels, (model::Labels{{"__name__", "m"}, {"s", "a"}}));
  std::vector<Sample> want_a;
  for (std::int64_t t = 3000; t <= 50000; t += 1000)
    want_a.push_back({t, static_cast<double>(t / 1000)});
  EXPECT_EQ(r->series[0].samples, want_a);
  std::vector<Sample> want_b;
  for (std::int64_t t = 7000; t <= 50000; t += 7000)
    want_b.push_back({t, static_cast<double>(t / 1000)});
  EXPECT_EQ(r->series[1].samples, want_b);
  EXPECT_EQ(r->warnings, (std::vector<std::string>{"w1"}));  // once, not per request

  const std::vector<FakeApi::Seen> seen = api.seen();
  ASSERT_EQ(seen.size(), 5U);  // 47,501 ms in windows of 10,000
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].params.at("query"), "m[10000ms]");
  EXPECT_EQ(seen[0].params.at("time"), "12.499");
  EXPECT_EQ(seen[4].params.at("query"), "m[7501ms]");
  EXPECT_EQ(seen[4].params.at("time"), "50.000");
}

TEST(ClientTest, QueryRangeSplitsAtMaxPointsKeepingTheGrid) {
  FakeApi api;
  ClientOptions options;
  options.max_points = 7;
  const Result<QueryResult> r = QueryRange(api.url(), "x", 1500, 61000, 2500, options);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), 1U);
  std::vector<Sample> want;
  for (std::int64_t t = 1500; t <= 61000; t += 2500) want.push_back({t, static_cast<double>(t)});
  EXPECT_EQ(r->series[0].samples, want);  // 24 points
  const std::vector<FakeApi::Seen> seen = api.seen();
  ASSERT_EQ(seen.size(), 4U);  // 7 + 7 + 7 + 3
  EXPECT_EQ(seen[0].params.at("start"), "1.500");
  EXPECT_EQ(seen[0].params.at("end"), "16.500");
  EXPECT_EQ(seen[0].params.at("step"), "2.500");
  EXPECT_EQ(seen[3].params.at("start"), "54.000");
  EXPECT_EQ(seen[3].params.at("end"), "59.000");
}

TEST(ClientTest, LongQueriesArePostedFormEncodedWithAuthAndHeaders) {
  FakeApi api;
  ClientOptions options;
  options.max_get_bytes = 64;
  options.basic_auth_user = "user";
  options.basic_auth_password = "pass";
  options.headers = {{"X-Scope-OrgID", "tenant-1"}};
  options.query_timeout_s = 0.5;
  const std::string query = "sum(rate(x{job=~\"a|b\", instance!=\"h & h\"}[5m])) + 1";
  ASSERT_TRUE(QueryInstant(api.url() + "/", query, 1000, options).has_value());
  ASSERT_TRUE(QueryInstant(api.url(), "x", 1000, options).has_value());
  const std::vector<FakeApi::Seen> seen = api.seen();
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/api/v1/query");
  EXPECT_EQ(seen[0].params.at("query"), query);
  EXPECT_EQ(seen[0].params.at("time"), "1.000");
  EXPECT_EQ(seen[0].params.at("timeout"), "0.500000000");
  EXPECT_EQ(seen[0].authorization, "Basic dXNlcjpwYXNz");
  EXPECT_EQ(seen[0].tenant, "tenant-1");
  EXPECT_EQ(seen[1].method, "GET");

  options.bearer_token = "t0k3n";
  ASSERT_TRUE(QueryInstant(api.url(), "x", 1000, options).has_value());
  EXPECT_EQ(api.seen()[2].authorization, "Bearer t0k3n");
}

TEST(ClientTest, BaseUrlWithAPathPrefix) {
  FakeApi api;
  const Result<QueryResult> r = QueryInstant(api.url() + "/prometheus", "x", 0);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(api.seen()[0].path, "/prometheus/api/v1/query");
}

TEST(ClientTest, ErrorsNameMethodUrlAndQuery) {
  FakeApi api;
  Result<QueryResult> r = QueryInstant(api.url(), "bad(", 0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.error().message(),
            "GET " + api.url() + "/api/v1/query (query \"bad(\"): HTTP 400 bad_data: parse error");

  r = QueryInstant(api.url() + "/nope/", "x", 0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);

  r = QueryRaw(api.url(), "m", 10, 5);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  r = QueryRange(api.url(), "m", 0, 5, 0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  r = QueryInstant("ftp://example.com", "x", 0);  // https:// is fine; other schemes are not
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  r = QueryInstant(api.url() + "/?x=1", "x", 0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
}

TEST(ClientTest, NetworkErrorsAreUnavailableAndNameTheUrl) {
  // A port nothing listens on: bind one, learn it, close it.
  std::string url;
  {
    net::HttpServer server(net::HttpServer::Options{});
    const Result<std::uint16_t> port =
        server.Listen("127.0.0.1", 0, [](const net::HttpRequest&, net::HttpResponse&) {});
    ASSERT_TRUE(port.has_value());
    url = "http://127.0.0.1:" + std::to_string(*port);
  }
  const Result<QueryResult> r = QueryInstant(url, "up", 0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.error().message().find(url + "/api/v1/query"), std::string::npos)
      << r.error().message();
}

}  // namespace
}  // namespace gpucanary::promql
