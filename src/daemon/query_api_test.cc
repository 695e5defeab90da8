#include "daemon/query_api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "daemon/api_format.h"
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

}  // namespace
}  // namespace gpucanary::daemon
