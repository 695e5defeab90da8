// gpucanary's query API side by side with Debian's Prometheus 2.42 on the
// same samples (written to Prometheus through its remote_write receiver and
// to gpucanary's store), compared answer for answer where the boundaries
// decide: a vector selector exactly 5 minutes after a sample (the lookback's
// edge, kept by 2.42), a range whose start falls on a sample (kept by 2.42),
// a grid whose first step's lookback starts on a sample, and /labels and
// /label/<name>/values narrowed by match[]. docs/http-api.md claims these.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "daemon/query_api.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "prometheus_process.h"
#include "remote/write_request.h"
#include "store/appender.h"
#include "store/store.h"

namespace gpucanary {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
constexpr std::int64_t kMinute = 60 * 1000;

class QueryApiPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    prometheus_ = test::PrometheusProcess::Start("global:\n  scrape_interval: 1m\n",
                                                 {"--web.enable-remote-write-receiver"}, &error);
    ASSERT_NE(prometheus_, nullptr) << error;
    dir_ = fs::temp_directory_path() / ("gc_query_prom_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    store::StoreOptions o;
    o.sync_interval_ms = 0;
    store_ = std::move(*store::Store::Open(dir_, o));

    // Two GPUs, 10 minutes ending 2 minutes ago: gpu 0 every 15 s, gpu 1
    // every 15 s for 5 minutes, then ended by a stale marker.
    base_ = (test::NowMs() - 12 * kMinute) / 1000 * 1000;
    remote::WriteRequest request;
    auto app = store_->NewAppender();
    for (int gpu = 0; gpu < 2; ++gpu) {
      remote::TimeSeries ts{{{"Hostname", "node-1"},
                             {"__name__", "DCGM_FI_DEV_SM_CLOCK"},
                             {"gpu", std::to_string(gpu)}},
                            {},
                            0,
                            0};
      const store::SeriesRef ref = *app->Series(ts.labels);
      for (int i = 0; i < 40; ++i) {
        if (gpu == 1 && i > 20) break;
        const std::int64_t t = base_ + i * 15000;
        const double v = gpu == 1 && i == 20 ? store::StaleNaN() : 1980.0 - gpu * 930 + i % 3;
        ts.samples.push_back({t, v});
        ASSERT_TRUE(app->Append(ref, t, v).ok());
      }
      request.timeseries.push_back(std::move(ts));
    }
    ASSERT_TRUE(app->Commit()->first_error.ok());
    net::FetchOptions post;
    post.method = "POST";
    post.content_type = "application/x-protobuf";
    post.headers = {{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
    post.body = remote::EncodeWriteRequest(request);
    const Result<net::HttpResponse> w = net::Fetch(prometheus_->url() + "/api/v1/write", post);
    ASSERT_TRUE(w.has_value()) << w.error().ToString();
    ASSERT_EQ(w->status, 204) << w->body;

    clock_ = std::make_unique<ManualClock>(test::NowMs());
    api_ = std::make_unique<daemon::QueryApi>(*store_, *clock_);
    auto port = server_.Listen("127.0.0.1", 0,
                               [this](const net::HttpRequest& req, net::HttpResponse& resp) {
                                 if (!api_->Handle(req, resp)) resp.status = 404;
                               });
    ASSERT_TRUE(port.has_value());
    ASSERT_TRUE(server_.Start().ok());
    ours_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  void TearDown() override {
    server_.Stop();
    prometheus_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  // The answer's data, results sorted by their labels so that order does
  // not count.
  static Json Data(const std::string& url, const std::string& target) {
    const Result<net::HttpResponse> r = net::Fetch(url + target);
    EXPECT_TRUE(r.has_value());
    if (!r) return nullptr;
    EXPECT_EQ(r->status, 200) << url << target << ": " << r->body;
    Json data = Json::parse(r->body, nullptr, false)["data"];
    if (data.is_object() && data.contains("result")) {
      std::sort(data["result"].begin(), data["result"].end(), [](const Json& a, const Json& b) {
        return a["metric"].dump() < b["metric"].dump();
      });
    }
    return data;
  }
  void ExpectSame(const std::string& target) {
    const Json theirs = Data(prometheus_->url(), target);
    const Json mine = Data(ours_, target);
    EXPECT_EQ(mine, theirs) << target;
  }
  static std::string At(std::int64_t ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ms / 1000),
                  static_cast<long long>(ms % 1000));
    return buf;
  }

  std::unique_ptr<test::PrometheusProcess> prometheus_;
  fs::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<ManualClock> clock_;
  std::unique_ptr<daemon::QueryApi> api_;
  net::HttpServer server_{net::HttpServer::Options{}};
  std::string ours_;
  std::int64_t base_ = 0;
};

TEST_F(QueryApiPrometheusTest, BoundariesAndMatchersAnswerAsPrometheus242) {
  const std::string sel = "DCGM_FI_DEV_SM_CLOCK";
  const std::int64_t last = base_ + 39 * 15000;  // gpu 0's last sample
  // The lookback's edge: exactly 5 minutes after the last sample (kept),
  // and a millisecond later (gone).
  ExpectSame("/api/v1/query?query=" + sel + "&time=" + At(last + 5 * kMinute));
  ExpectSame("/api/v1/query?query=" + sel + "&time=" + At(last + 5 * kMinute + 1));
  EXPECT_EQ(Data(ours_, "/api/v1/query?query=" + sel + "&time=" + At(last + 5 * kMinute))["result"]
                .size(),
            1U);
  // A range whose start falls on a sample: [t - 1m, t] closed.
  ExpectSame("/api/v1/query?query=" + sel + "%5B1m%5D&time=" + At(base_ + 10 * 15000));
  ExpectSame("/api/v1/query?query=" + sel + "%5B1m%5D&time=" + At(base_ + 10 * 15000 + 1));
  // Over the stale marker that ended gpu 1 (at base + 300 s).
  ExpectSame("/api/v1/query?query=" + sel + "%5B2m%5D&time=" + At(base_ + 330 * 1000));
  ExpectSame("/api/v1/query?query=" + sel + "&time=" + At(base_ + 300 * 1000));
  // A grid whose steps fall on samples and on the lookback's edge.
  ExpectSame("/api/v1/query_range?query=" + sel + "&start=" + At(base_) +
             "&end=" + At(last + 5 * kMinute) + "&step=15");
  ExpectSame("/api/v1/query_range?query=" + sel + "&start=" + At(base_ + 7000) +
             "&end=" + At(last + 5 * kMinute + 7000) + "&step=30");
  // Label names and values, narrowed by match[].
  const std::string range = "&start=" + At(base_) + "&end=" + At(last);
  ExpectSame("/api/v1/label/gpu/values?match[]=DCGM_FI_DEV_SM_CLOCK%7Bgpu%3D%221%22%7D" + range);
  ExpectSame("/api/v1/labels?match[]=DCGM_FI_DEV_SM_CLOCK" + range);
  ExpectSame("/api/v1/labels?match[]=nothing_here" + range);
}

}  // namespace
}  // namespace gpucanary
