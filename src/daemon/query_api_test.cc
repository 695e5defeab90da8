#include "daemon/query_api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <latch>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/api_format.h"
#include "daemon/serve_config.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "promql/client.h"

namespace gpucanary::daemon {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr std::int64_t kT0 = 1764680000000;

TEST(PromFormatTest, ValuesAndTimesAsPrometheusPrintsThem) {
  auto v = [](double x) {
    std::string s;
    AppendPromValue(s, x);
    return s;
  };
  EXPECT_EQ(v(300.709), "300.709");
  EXPECT_EQ(v(1e20), "100000000000000000000");
  EXPECT_EQ(v(1.5e-10), "0.00000000015");
  EXPECT_EQ(v(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(v(-0.0), "-0");
  EXPECT_EQ(v(std::nan("")), "NaN");
  EXPECT_EQ(v(-INFINITY), "-Inf");
  auto t = [](std::int64_t ms) {
    std::string s;
    AppendPromTime(s, ms);
    return s;
  };
  EXPECT_EQ(t(1796214070000), "1796214070");
  EXPECT_EQ(t(1796214071500), "1796214071.500");
  EXPECT_EQ(t(-1500), "-1.500");
}

TEST(PromFormatTest, Times) {
  EXPECT_EQ(ParseApiTime("1796214000.123456"), 1796214000123);
  EXPECT_EQ(ParseApiTime("2026-12-02T00:00:00Z"), 1796169600000);
  EXPECT_FALSE(ParseApiTime("yesterday"));
}

class QueryApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gc_query_api_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    store::StoreOptions o;
    o.sync_interval_ms = 0;
    store_ = std::move(*store::Store::Open(dir_, o));
    // Two GPUs' SM clock at 1 s for 10 minutes; gpu 1 ends with a staleness
    // marker at 300 s.
    auto app = store_->NewAppender();
    for (int gpu = 0; gpu < 2; ++gpu) {
      model::Labels l = {{"Hostname", "node-1"},
                         {"__name__", "DCGM_FI_DEV_SM_CLOCK"},
                         {"gpu", std::to_string(gpu)}};
      const store::SeriesRef ref = *app->Series(l);
      for (int s = 0; s < 600; ++s) {
        if (gpu == 1 && s > 300) break;
        const double v = gpu == 1 && s == 300 ? store::StaleNaN() : 1980 - gpu * 930 + s % 3;
        ASSERT_TRUE(app->Append(ref, kT0 + s * 1000LL, v).ok());
      }
    }
    ASSERT_TRUE(app->Commit()->first_error.ok());
    clock_.Advance(kT0 + 600 * 1000);
    api_ = std::make_unique<QueryApi>(*store_, clock_);
    auto port = server_.Listen("127.0.0.1", 0,
                               [this](const net::HttpRequest& req, net::HttpResponse& resp) {
                                 if (!api_->Handle(req, resp)) resp.status = 404;
                               });
    ASSERT_TRUE(port.has_value());
    ASSERT_TRUE(server_.Start().ok());
    url_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  void TearDown() override {
    server_.Stop();
    store_.reset();
    fs::remove_all(dir_);
  }

  Json Get(const std::string& target, int* status = nullptr) {
    auto r = net::Fetch(url_ + target);
    EXPECT_TRUE(r.has_value());
    if (status != nullptr) *status = r->status;
    return Json::parse(r->body, nullptr, false);
  }

  fs::path dir_;
  std::unique_ptr<store::Store> store_;
  ManualClock clock_{0};
  std::unique_ptr<QueryApi> api_;
  net::HttpServer server_{net::HttpServer::Options{}};
  std::string url_;
};

TEST_F(QueryApiTest, OurPromqlClientReadsRawSamplesBack) {
  auto got = promql::QueryRaw(url_, R"(DCGM_FI_DEV_SM_CLOCK{gpu="0"})", kT0 + 100 * 1000,
                              kT0 + 199 * 1000);
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  ASSERT_EQ(got->series.size(), 1U);
  ASSERT_EQ(got->series[0].samples.size(), 100U);
  EXPECT_EQ(got->series[0].samples[0].t_ms, kT0 + 100 * 1000);
  EXPECT_EQ(got->series[0].samples[0].value, 1980 + 100 % 3);
}

TEST_F(QueryApiTest, StalenessEndsASeriesAndIsNeverReturned) {
  // Instant query at 400 s: gpu 1 ended with a marker at 300 s.
  Json j = Get("/api/v1/query?query=DCGM_FI_DEV_SM_CLOCK&time=" + std::to_string(kT0 / 1000 + 400));
  ASSERT_EQ(j["status"], "success");
  ASSERT_EQ(j["data"]["result"].size(), 1U);
  EXPECT_EQ(j["data"]["result"][0]["metric"]["gpu"], "0");
  // A raw range over the marker: gpu 1's samples up to 299 s, no NaN.
  j = Get("/api/v1/query?query=DCGM_FI_DEV_SM_CLOCK%7Bgpu%3D%221%22%7D%5B1m%5D&time=" +
          std::to_string(kT0 / 1000 + 310));
  ASSERT_EQ(j["data"]["resultType"], "matrix");
  const Json& values = j["data"]["result"][0]["values"];
  // [250, 310] closed at both ends, as Prometheus 2.42: 250..299; the
  // marker at 300 is not a sample.
  EXPECT_EQ(values.size(), 50U);
  EXPECT_EQ(values.front()[0], kT0 / 1000 + 250);
  EXPECT_EQ(values.back()[0], kT0 / 1000 + 299);
}

TEST_F(QueryApiTest, RangeQueryUsesTheLookbackLikePrometheus) {
  auto got =
      promql::QueryRange(url_, "DCGM_FI_DEV_SM_CLOCK", kT0 + 290 * 1000, kT0 + 310 * 1000, 5000);
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  ASSERT_EQ(got->series.size(), 2U);
  EXPECT_EQ(got->series[0].samples.size(), 5U);  // gpu 0 at 290..310
  EXPECT_EQ(got->series[1].samples.size(), 2U);  // gpu 1 at 290, 295; stale from 300
}

TEST_F(QueryApiTest, ErrorsUsePrometheusTypesAndCodes) {
  int status = 0;
  Json j = Get("/api/v1/query?query=rate(x%5B5m%5D)", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(j["errorType"], "bad_data");
  j = Get("/api/v1/query_range?query=up&start=10&end=5&step=1", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(j["error"], "invalid parameter \"end\": end timestamp must not be before start time");
  j = Get("/api/v1/query_range?query=up&start=0&end=100000&step=1", &status);
  EXPECT_EQ(status, 400);
  j = Get("/api/v1/query?query=up&time=soon", &status);
  EXPECT_EQ(j["error"], "invalid parameter \"time\": cannot parse \"soon\" to a valid timestamp");
  j = Get("/api/v1/series", &status);
  EXPECT_EQ(status, 400);
}

TEST_F(QueryApiTest, SeriesLabelsAndValues) {
  Json j = Get("/api/v1/series?match[]=DCGM_FI_DEV_SM_CLOCK");
  ASSERT_EQ(j["data"].size(), 2U);
  EXPECT_EQ(j["data"][1]["gpu"], "1");
  j = Get("/api/v1/labels");
  EXPECT_EQ(j["data"], Json({"Hostname", "__name__", "gpu"}));
  j = Get("/api/v1/label/gpu/values");
  EXPECT_EQ(j["data"], Json({"0", "1"}));
  // The name is a percent-encoded path segment.
  j = Get("/api/v1/label/%5F%5Fname%5F%5F/values");
  EXPECT_EQ(j["data"], Json({"DCGM_FI_DEV_SM_CLOCK"}));
  int status = 0;
  j = Get("/api/v1/label/gpu-id/values", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(j["errorType"], "bad_data");
  EXPECT_EQ(j["error"], "invalid label name: \"gpu-id\"");
  j = Get("/api/v1/label/g%zzpu/values", &status);
  EXPECT_EQ(status, 400);
  // match[] narrows /labels and /label/<name>/values; a bad one is 400
  // bad_data naming the parameter.
  j = Get("/api/v1/label/gpu/values?match[]=DCGM_FI_DEV_SM_CLOCK%7Bgpu%3D%221%22%7D");
  EXPECT_EQ(j["data"], Json({"1"}));
  j = Get("/api/v1/labels?match[]=nothing_here");
  EXPECT_EQ(j["data"], Json::array());
  for (const char* path : {"/api/v1/labels?match[]=%7B", "/api/v1/label/gpu/values?match[]=%7B"}) {
    j = Get(path, &status);
    EXPECT_EQ(status, 400) << path;
    EXPECT_EQ(j["errorType"], "bad_data") << path;
    EXPECT_TRUE(j["error"].get<std::string>().starts_with("invalid parameter \"match[]\": "))
        << j.dump();
  }
}

TEST_F(QueryApiTest, OtherMethodsAre405AndOtherPathsNotOurs) {
  net::FetchOptions o;
  o.method = "DELETE";
  auto r = net::Fetch(url_ + "/api/v1/query", o);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->Header("allow"), "GET, POST");
  EXPECT_EQ(r->body, "method not allowed\n");
  o.method = "HEAD";
  r = net::Fetch(url_ + "/api/v1/labels", o);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 405);
  for (const char* path : {"/api/v1/nothing", "/api/v1/query/", "/api/v1/label/gpu"}) {
    r = net::Fetch(url_ + path);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 404) << path;  // the test server's answer when Handle declines
  }
}

TEST_F(QueryApiTest, APostedFormAddsToTheQueryString) {
  net::FetchOptions o;
  o.method = "POST";
  o.content_type = "application/x-www-form-urlencoded";
  o.body = "time=" + std::to_string(kT0 / 1000 + 400);
  auto r = net::Fetch(url_ + "/api/v1/query?query=DCGM_FI_DEV_SM_CLOCK", o);
  ASSERT_TRUE(r.has_value());
  Json j = Json::parse(r->body, nullptr, false);
  ASSERT_EQ(j["status"], "success");
  EXPECT_EQ(j["data"]["result"].size(), 1U);  // gpu 1 is stale at 400 s
  o.body = "query=%zz";
  r = net::Fetch(url_ + "/api/v1/query", o);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400);
}

TEST_F(QueryApiTest, LabelNamesAreReadFromThePathAsWritten) {
  int status = 0;
  // "/api/v1/label/values" reads as the label "values" (none here).
  Json j = Get("/api/v1/label/values", &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(j["data"], Json::array());
  j = Get("/api/v1/label/a/b/values", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(j["error"], "invalid label name: \"a/b\"");
}

TEST_F(QueryApiTest, QueryRangeParameterErrors) {
  int status = 0;
  Json j = Get("/api/v1/query_range?query=up&end=5&step=1", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(j["error"], "invalid parameter \"start\": cannot parse \"\" to a valid timestamp");
  j = Get("/api/v1/query_range?query=up&start=1&end=5&step=0", &status);
  EXPECT_EQ(j["error"],
            "invalid parameter \"step\": zero or negative query resolution step widths are not "
            "accepted. Try a positive integer");
  j = Get("/api/v1/query_range?query=up%5B1m%5D&start=1&end=5&step=1", &status);
  EXPECT_EQ(j["error"],
            "invalid expression type \"range vector\" for range query, must be Scalar or instant "
            "Vector");
}

// Asks `api` directly, without HTTP.
net::HttpResponse Ask(const QueryApi& api, const std::string& target) {
  net::HttpRequest req;
  req.method = "GET";
  req.target = target;
  const std::size_t q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) req.query = target.substr(q + 1);
  net::HttpResponse resp;
  EXPECT_TRUE(api.Handle(req, resp)) << target;
  return resp;
}

std::string At(std::int64_t seconds_after_t0) {
  return std::to_string(kT0 / 1000 + seconds_after_t0);
}

// Prometheus's --query.max-samples: the samples a query holds in memory at
// once, which for Prometheus are the points of its answer, not the raw
// samples read to find them; over it, 422 execution with Prometheus's words.
TEST_F(QueryApiTest, SampleBudgetCountsThePointsAQueryHolds) {
  auto status_with_budget = [&](std::uint64_t budget, const std::string& target) {
    QueryApiOptions o;
    o.max_samples = budget;
    QueryApi api(*store_, clock_, o);
    const net::HttpResponse r = Ask(api, target);
    if (r.status == 422) {
      EXPECT_EQ(r.body,
                R"({"status":"error","errorType":"execution","error":"query processing would )"
                R"(load too many samples into memory in query execution"})");
    }
    return r.status;
  };
  // A raw range: gpu 0's 600 samples and gpu 1's 300 (its staleness marker is
  // not one): 900.
  const std::string raw = "/api/v1/query?query=DCGM_FI_DEV_SM_CLOCK%5B10m%5D&time=" + At(599);
  EXPECT_EQ(status_with_budget(899, raw), 422);
  EXPECT_EQ(status_with_budget(900, raw), 200);
  // Instant: one point per series, however many samples the lookback holds.
  const std::string instant = "/api/v1/query?query=DCGM_FI_DEV_SM_CLOCK&time=" + At(299);
  EXPECT_EQ(status_with_budget(1, instant), 422);
  EXPECT_EQ(status_with_budget(2, instant), 200);
  // A range query: its points, 10 of gpu 0 and 5 of gpu 1 (stale from 300 s),
  // though it reads all 901 raw samples to find them.
  const std::string range = "/api/v1/query_range?query=DCGM_FI_DEV_SM_CLOCK&start=" + At(0) +
                            "&end=" + At(599) + "&step=60";
  EXPECT_EQ(status_with_budget(14, range), 422);
  EXPECT_EQ(status_with_budget(15, range), 200);
}

TEST_F(QueryApiTest, ARangeQueryTakesEachStepsNewestSampleWithinTheLookback) {
  // gpu g's sample at s seconds is 1980 - 930 g + s % 3, for s in 0..599
  // (gpu 0) or 0..299 (gpu 1, then a staleness marker at 300 s). Steps on a
  // sample and between samples; a lookback shorter than the step, where most
  // chunks hold no step's answer and are skipped, must not change a point.
  for (const std::int64_t lookback_s : {300, 5}) {
    QueryApiOptions o;
    o.lookback_ms = lookback_s * 1000;
    QueryApi api(*store_, clock_, o);
    for (const double step : {1.0, 7.0, 60.0, 0.5}) {
      std::ostringstream target;
      target << "/api/v1/query_range?query=DCGM_FI_DEV_SM_CLOCK&start=" << At(-10)
             << "&end=" << At(700) << "&step=" << step;
      const net::HttpResponse r = Ask(api, target.str());
      ASSERT_EQ(r.status, 200) << r.body;
      std::map<int, std::vector<std::pair<double, std::string>>> got;
      const Json answer = Json::parse(r.body);
      for (const Json& series : answer["data"]["result"]) {
        const int gpu = series["metric"]["gpu"] == "0" ? 0 : 1;
        for (const Json& point : series["values"]) {
          got[gpu].emplace_back(point[0].get<double>() - static_cast<double>(kT0 / 1000),
                                point[1].get<std::string>());
        }
      }
      for (int gpu = 0; gpu < 2; ++gpu) {
        std::vector<std::pair<double, std::string>> expected;
        for (int i = 0; - 10 + i * step <= 700; ++i) {
          const double t = -10 + i * step;
          const double newest = std::floor(t);
          if (newest < 0 || (gpu == 1 && newest >= 300)) continue;  // none yet, or stale
          const int s = static_cast<int>(std::min(newest, 599.0));
          if (t - s > static_cast<double>(lookback_s)) continue;
          expected.emplace_back(t, std::to_string(1980 - gpu * 930 + s % 3));
        }
        EXPECT_EQ(got[gpu], expected) << "lookback " << lookback_s << " step " << step;
      }
    }
  }
}

// --query.max-concurrency: a query over the limit waits for a slot (one
// waiter here), and is served once the running one ends; a query beyond the
// queue, or one whose wait runs out, is answered 503 unavailable. The limit
// counts every endpoint of the query API.
TEST_F(QueryApiTest, QueriesOverTheConcurrencyLimitWaitThenGet503) {
  std::latch entered(1);
  std::latch release(1);
  std::atomic<int> hooks{0};
  QueryApiOptions o;
  o.max_concurrency = 1;
  o.max_queued = 1;
  o.queue_wait_ms = 60'000;  // the waiter is released by the test, not by time
  o.on_slot_taken = [&] {
    if (hooks.fetch_add(1) == 0) {
      entered.count_down();
      release.wait();
    }
  };
  QueryApi api(*store_, clock_, o);
  const std::string query = "/api/v1/query?query=DCGM_FI_DEV_SM_CLOCK&time=" + At(299);
  std::thread first([&] { EXPECT_EQ(Ask(api, query).status, 200); });
  std::atomic<int> waiter_status{0};
  std::thread waiter;
  struct Finally {  // on every path out, so that a failure cannot hang the test
    std::latch& release;
    std::thread& first;
    std::thread& waiter;
    ~Finally() {
      if (first.joinable()) {
        release.count_down();
        first.join();
      }
      if (waiter.joinable()) waiter.join();
    }
  } finally{release, first, waiter};
  const auto wait_until = [](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return done();
  };
  // The first query holds the only slot; the second waits for it.
  ASSERT_TRUE(wait_until([&] { return entered.try_wait(); }));
  waiter = std::thread([&] { waiter_status = Ask(api, "/api/v1/labels").status; });
  ASSERT_TRUE(wait_until([&] { return api.waiting_for_a_slot() == 1; }));
  // The queue is full: the third is turned away at once.
  for (const std::string& target : {query, std::string("/api/v1/labels")}) {
    const net::HttpResponse busy = Ask(api, target);
    EXPECT_EQ(busy.status, 503) << target;
    EXPECT_EQ(busy.Header("retry-after"), "1");
    Json j = Json::parse(busy.body, nullptr, false);
    EXPECT_EQ(j["errorType"], "unavailable");
    EXPECT_EQ(j["error"],
              "too many concurrent queries (query.max_concurrency: 1, 1 waiting at most); "
              "try again");
  }
  EXPECT_EQ(waiter_status.load(), 0);  // still waiting
  release.count_down();
  first.join();
  waiter.join();
  EXPECT_EQ(waiter_status.load(), 200);    // served once the slot was free
  EXPECT_EQ(Ask(api, query).status, 200);  // and the slot is free again
  EXPECT_EQ(hooks.load(), 3);
}

// A query that waits longer than queue_wait_ms for a slot gets 503.
TEST_F(QueryApiTest, AWaitForASlotEndsIn503WhenItRunsOut) {
  std::latch entered(1);
  std::latch release(1);
  QueryApiOptions o;
  o.max_concurrency = 1;
  o.max_queued = 4;
  o.queue_wait_ms = 50;
  std::atomic<int> hooks{0};
  o.on_slot_taken = [&] {
    if (hooks.fetch_add(1) == 0) {
      entered.count_down();
      release.wait();
    }
  };
  QueryApi api(*store_, clock_, o);
  std::thread first([&] { EXPECT_EQ(Ask(api, "/api/v1/labels").status, 200); });
  entered.wait();
  const auto started = std::chrono::steady_clock::now();
  const net::HttpResponse busy = Ask(api, "/api/v1/labels");
  const auto waited = std::chrono::steady_clock::now() - started;
  release.count_down();
  first.join();
  EXPECT_EQ(busy.status, 503);
  EXPECT_GE(waited, std::chrono::milliseconds(50));  // it did wait
  EXPECT_EQ(api.waiting_for_a_slot(), 0);
  EXPECT_EQ(hooks.load(), 1);
}

// The `http:` and `query:` sections of the serve configuration
// (docs/configuration.md), which size the limits above and the server's.
TEST(ServeConfigLimitsTest, DefaultsAndValues) {
  auto d = ParseServeConfig("listen: 127.0.0.1:0\n", "serve.yaml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->http.max_connections, 512U);
  EXPECT_EQ(d->http.max_connections_per_client, 64U);
  EXPECT_EQ(d->http.idle_timeout_s, 30);
  EXPECT_EQ(d->http.handler_threads, 8);
  EXPECT_EQ(d->query.max_samples, 5'000'000U);
  EXPECT_EQ(d->query.max_concurrency, 2);
  auto c = ParseServeConfig(
      "http:\n"
      "  max_connections: 100\n"
      "  max_connections_per_client: 10\n"
      "  idle_timeout: 1m\n"
      "  handler_threads: 8\n"
      "query:\n"
      "  max_samples: 1000000\n"
      "  max_concurrency: 6\n",
      "serve.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->http.max_connections, 100U);
  EXPECT_EQ(c->http.max_connections_per_client, 10U);
  EXPECT_EQ(c->http.idle_timeout_s, 60);
  EXPECT_EQ(c->http.handler_threads, 8);
  EXPECT_EQ(c->query.max_samples, 1'000'000U);
  EXPECT_EQ(c->query.max_concurrency, 6);
}

TEST(ServeConfigLimitsTest, ErrorsSayWhere) {
  auto error_of = [](const std::string& yaml) {
    auto c = ParseServeConfig(yaml, "serve.yaml");
    return c ? std::string("(parsed)") : c.error().message();
  };
  EXPECT_EQ(error_of("http:\n  idle_timeout: 500ms\n"),
            "serve.yaml:2:17: http.idle_timeout: must be from 1s to 1h");
  EXPECT_EQ(error_of("http:\n  max_connections_per_client: 0\n"),
            "serve.yaml:2:31: http.max_connections_per_client: must be in 1..1000000");
  EXPECT_EQ(error_of("http:\n  max_connections: 10\n  max_connections_per_client: 20\n"),
            "serve.yaml:3:31: http.max_connections_per_client: must not exceed "
            "http.max_connections (10)");
  EXPECT_EQ(error_of("query:\n  max_samples: 0\n"),
            "serve.yaml:2:16: query.max_samples: must be in 1..1000000000");
  EXPECT_EQ(error_of("query:\n  max_concurrency: 4\nhttp:\n  handler_threads: 4\n"),
            "serve.yaml:2:20: query.max_concurrency: must be below http.handler_threads (4), "
            "so that queries never hold every handler thread");
  EXPECT_EQ(error_of("query:\n  timeout: 2m\n"),
            "serve.yaml:2:3: query.timeout: unknown field (expected one of max_samples, "
            "max_concurrency)");
}

}  // namespace
}  // namespace gpucanary::daemon
