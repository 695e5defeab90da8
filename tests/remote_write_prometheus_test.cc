// Integration: a real Prometheus 2.42 scrapes a small dcgm-exporter-style
// endpoint every second and remote_writes to three receivers (remote/) on a
// net::HttpServer in this process:
//   ok     a store that takes everything: every sample arrives with its labels
//          and value, stale markers bit-exact, and Prometheus counts no failure;
//   reject a store at its series limit: every request is answered 400, which
//          Prometheus drops without retrying (each sample arrives once);
//   flaky  a store whose first commits fail with an I/O error: 503, which
//          Prometheus retries until the samples are in.
// Prometheus's own counters are read through its /api/v1/query with the
// promql client.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "net/http_server.h"
#include "prometheus_process.h"
#include "promql/client.h"
#include "remote/receiver.h"
#include "remote/test_util.h"

namespace gpucanary {
namespace {

using remote::Receiver;
using remote::WriteError;
using test::WaitFor;

// The scraped endpoint: two GPUs, until gpu 1 is removed; a counter that
// counts the scrapes.
class Exporter {
 public:
  std::string Render() {
    MutexLock lock(mu_);
    ++scrapes_;
    std::string text =
        "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + Gauge("DCGM_FI_DEV_GPU_TEMP", "0", "41") +
        (gpu1_ ? Gauge("DCGM_FI_DEV_GPU_TEMP", "1", "52") : "") +
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n" +
        Gauge("DCGM_FI_DEV_POWER_USAGE", "0", "300.709000") +
        (gpu1_ ? Gauge("DCGM_FI_DEV_POWER_USAGE", "1", "0.100000") : "") +
        "# TYPE test_scrapes_total counter\ntest_scrapes_total " + std::to_string(scrapes_) + "\n";
    return text;
  }
  void RemoveGpu1() {
    MutexLock lock(mu_);
    gpu1_ = false;
  }

 private:
  static std::string Gauge(const std::string& name, const std::string& gpu,
                           const std::string& value) {
    return name + "{gpu=\"" + gpu + "\",UUID=\"GPU-" + gpu + "\",device=\"nvidia" + gpu +
           "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\"} " + value + "\n";
  }

  Mutex mu_;
  int scrapes_ GUARDED_BY(mu_) = 0;
  bool gpu1_ GUARDED_BY(mu_) = true;
};

model::Labels Gpu(const std::string& name, const std::string& gpu, const std::string& instance) {
  return {{"Hostname", "node-1"}, {"UUID", "GPU-" + gpu},
          {"__name__", name},     {"device", "nvidia" + gpu},
          {"gpu", gpu},           {"instance", instance},
          {"job", "dcgm"},        {"modelName", "NVIDIA H100 80GB HBM3"}};
}

class RemoteWritePrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reject_store_.SetMaxSeries(0);
    flaky_store_.FailCommits(3,
                             Status(StatusCode::kIoError, "wal: write: No space left on device"));
    net::HttpServer::Options options;
    options.threads = 2;
    server_ = std::make_unique<net::HttpServer>(options);
    const Result<std::uint16_t> port = server_->Listen(
        "127.0.0.1", 0,
        [this](const net::HttpRequest& req, net::HttpResponse& resp) { Route(req, resp); });
    ASSERT_TRUE(port.has_value());
    ASSERT_TRUE(server_->Start().ok());
    endpoint_ = "127.0.0.1:" + std::to_string(*port);
  }

  // Prometheus first (no more requests), then the server, before any member
  // a handler uses goes away.
  void TearDown() override {
    prometheus_.reset();
    if (server_ != nullptr) server_->Stop();
  }

  void Route(const net::HttpRequest& req, net::HttpResponse& resp) {
    if (req.path == "/metrics") {
      resp.content_type = "text/plain; version=0.0.4";
      resp.body = exporter_.Render();
    } else if (req.path == "/write/ok") {
      resp = ok_.Handle(req);
    } else if (req.path == "/write/flaky") {
      resp = flaky_.Handle(req);
    } else if (req.path == "/write/reject") {
      RecordRejected(req);
      resp = reject_.Handle(req);
    } else {
      resp.status = 404;
    }
  }

  // Every (series, timestamp) posted to /write/reject, to see retries.
  void RecordRejected(const net::HttpRequest& req) {
    Result<remote::WriteRequest> r = remote::DecodeWriteRequest(
        req.body, req.Header("content-encoding"), req.Header("content-type"));
    if (!r) return;
    MutexLock lock(mu_);
    for (const remote::TimeSeries& ts : r->timeseries) {
      for (const remote::Sample& s : ts.samples) {
        if (!rejected_seen_.insert({model::LabelsToString(ts.labels), s.timestamp_ms}).second) {
          ++rejected_twice_;
        }
      }
    }
  }

  // The value of an instant query that returns one series, or NaN.
  double Query(const std::string& promql) {
    Result<promql::QueryResult> r = promql::QueryInstant(prometheus_->url(), promql, test::NowMs());
    if (!r || r->series.size() != 1 || r->series[0].samples.empty()) return std::nan("");
    return r->series[0].samples[0].value;
  }

  std::string Config(int prometheus_port) const {
    return "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
           "scrape_configs:\n"
           "  - job_name: dcgm\n    static_configs: [{targets: ['" +
           endpoint_ +
           "']}]\n"
           "  - job_name: prometheus\n    static_configs: [{targets: ['127.0.0.1:" +
           std::to_string(prometheus_port) +
           "']}]\n"
           "remote_write:\n" +
           Queue("ok") + Queue("reject") + Queue("flaky");
  }

  // One remote_write queue, flushing within 200 ms, retrying from 30 ms.
  std::string Queue(const std::string& name) const {
    return "  - url: 'http://" + endpoint_ + "/write/" + name + "'\n    name: " + name +
           "\n    queue_config: {batch_send_deadline: 200ms, min_backoff: 30ms, "
           "max_backoff: 300ms}\n";
  }

  Exporter exporter_;
  remote::test::CaptureAppendable ok_store_, reject_store_, flaky_store_;
  Receiver ok_{ok_store_};
  Receiver reject_{reject_store_};
  Receiver flaky_{flaky_store_};
  std::unique_ptr<net::HttpServer> server_;
  std::string endpoint_;
  std::unique_ptr<test::PrometheusProcess> prometheus_;
  Mutex mu_;
  std::set<std::pair<std::string, std::int64_t>> rejected_seen_ GUARDED_BY(mu_);
  int rejected_twice_ GUARDED_BY(mu_) = 0;
};

TEST_F(RemoteWritePrometheusTest, SamplesArriveExactlyAndErrorsFollowTheSpec) {
  // Prometheus scrapes itself for its remote-write counters.
  std::string error;
  prometheus_ = test::PrometheusProcess::Start([&](int port) { return Config(port); }, {}, &error);
  ASSERT_NE(prometheus_, nullptr) << error;

  const model::Labels temp0 = Gpu("DCGM_FI_DEV_GPU_TEMP", "0", endpoint_);
  const model::Labels temp1 = Gpu("DCGM_FI_DEV_GPU_TEMP", "1", endpoint_);
  const model::Labels power0 = Gpu("DCGM_FI_DEV_POWER_USAGE", "0", endpoint_);
  const model::Labels scrapes = {
      {"__name__", "test_scrapes_total"}, {"instance", endpoint_}, {"job", "dcgm"}};

  // Five scrapes of everything arrive at the ok receiver.
  ASSERT_TRUE(WaitFor(60, [&] {
    return ok_store_.Samples(temp1).size() >= 5 && ok_store_.Samples(scrapes).size() >= 5;
  })) << prometheus_->Log();

  // Then gpu 1 goes away: Prometheus marks its series stale, and the marker
  // arrives bit-exact.
  exporter_.RemoveGpu1();
  ASSERT_TRUE(WaitFor(30, [&] {
    const std::vector<remote::Sample> s = ok_store_.Samples(temp1);
    return !s.empty() && store::IsStaleNaN(s.back().value);
  })) << prometheus_->Log();

  for (const remote::Sample& s : ok_store_.Samples(temp0)) EXPECT_EQ(s.value, 41);
  for (const remote::Sample& s : ok_store_.Samples(power0)) EXPECT_EQ(s.value, 300.709);
  const std::vector<remote::Sample> temp1_samples = ok_store_.Samples(temp1);
  for (std::size_t i = 0; i + 1 < temp1_samples.size(); ++i) EXPECT_EQ(temp1_samples[i].value, 52);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(temp1_samples.back().value), store::kStaleNaNBits);
  // The counter: 1 more per scrape, timestamps about a second apart.
  const std::vector<remote::Sample> counter = ok_store_.Samples(scrapes);
  for (std::size_t i = 1; i < counter.size(); ++i) {
    EXPECT_GE(counter[i].value, counter[i - 1].value + 1);
    EXPECT_NEAR(static_cast<double>(counter[i].timestamp_ms - counter[i - 1].timestamp_ms), 1000,
                500);
  }
  // Prometheus adds up, scrape_duration_seconds and friends per target.
  EXPECT_FALSE(
      ok_store_.Samples({{"__name__", "up"}, {"instance", endpoint_}, {"job", "dcgm"}}).empty());

  // The flaky store failed 3 commits (503), then took the retried samples.
  ASSERT_TRUE(WaitFor(30, [&] { return !flaky_store_.Samples(temp0).empty(); }));
  EXPECT_EQ(flaky_store_.failed_commits(), 3U);
  EXPECT_EQ(flaky_.stats().error(WriteError::kStoreUnavailable), 3U);

  // Prometheus's own view, once it has scraped itself after all that.
  ASSERT_TRUE(WaitFor(30, [&] {
    return Query("prometheus_remote_storage_samples_failed_total{remote_name=\"reject\"}") > 0 &&
           Query("prometheus_remote_storage_samples_retried_total{remote_name=\"flaky\"}") > 0;
  })) << prometheus_->Log();
  for (const char* name : {"ok", "flaky"}) {
    const std::string sel = std::string("{remote_name=\"") + name + "\"}";
    EXPECT_EQ(Query("prometheus_remote_storage_samples_failed_total" + sel), 0) << name;
    EXPECT_EQ(Query("prometheus_remote_storage_samples_dropped_total" + sel), 0) << name;
  }
  EXPECT_EQ(Query("prometheus_remote_storage_samples_retried_total{remote_name=\"ok\"}"), 0);
  EXPECT_EQ(Query("prometheus_remote_storage_samples_retried_total{remote_name=\"reject\"}"), 0);
  EXPECT_GT(Query("prometheus_remote_storage_samples_total{remote_name=\"ok\"}"), 0);

  // 400s are final: Prometheus never sent a rejected sample twice.
  const remote::ReceiverStats rejected = reject_.stats();
  EXPECT_GT(rejected.requests, 0U);
  EXPECT_EQ(rejected.requests_accepted, 0U);
  EXPECT_GT(rejected.error(WriteError::kSeriesLimit), 0U);
  {
    MutexLock lock(mu_);
    EXPECT_GT(rejected_seen_.size(), 0U);
    EXPECT_EQ(rejected_twice_, 0);
  }

  // The ok receiver refused nothing.
  const remote::ReceiverStats ok = ok_.stats();
  EXPECT_EQ(ok.samples_rejected, 0U);
  for (std::size_t i = 0; i < remote::kWriteErrorCount; ++i) {
    EXPECT_EQ(ok.errors[i], 0U) << remote::WriteErrorName(static_cast<WriteError>(i));
  }
  EXPECT_EQ(ok.requests, ok.requests_accepted);
  if (HasFailure()) prometheus_->KeepDir();
}

}  // namespace
}  // namespace gpucanary
