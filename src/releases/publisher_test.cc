// The publisher against real HTTP servers (net::HttpServer on 127.0.0.1:0)
// standing in for Grafana and an OpenTelemetry collector: the exact requests
// they receive, retries, final refusals, an unreachable sink, and Publish
// never waiting on a slow one.

#include "releases/publisher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "net/http_server.h"

namespace gpucanary::releases {
namespace {

constexpr std::string_view kExample =
    R"({"id": "llama3-70b-2026-12-02.1", "service": "chat-api", "version": "2026.12.02-1",
 "git_sha": "9f1c2e7", "model": "llama-3-70b-instruct", "checkpoint": "ckpt-18000",
 "quantization": "fp8", "cuda_version": "12.4", "framework": "vllm", "framework_version": "0.6.3",
 "environment": "prod", "started_at": 1764680000.0,
 "targets": ["node-4", "node-5"], "selector": "{Hostname=~\"node-[45]\"}",
 "previous": "llama3-70b-2026-11-28.2", "ticket": "OPS-1"})";

Release Example() {
  auto r = ParseRelease(kExample);
  EXPECT_TRUE(r.has_value());
  return *r;
}

// A real HTTP server that records every request and answers with the given
// statuses in turn (the last one repeated).
class RecordingServer {
 public:
  explicit RecordingServer(std::vector<int> statuses) : statuses_(std::move(statuses)) {
    auto port = server_.Listen(
        "127.0.0.1", 0,
        [this](const net::HttpRequest& req, net::HttpResponse& resp) { Handle(req, resp); });
    EXPECT_TRUE(port.has_value());
    port_ = port.value_or(0);
    EXPECT_TRUE(server_.Start().ok());
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::vector<net::HttpRequest> requests() const {
    MutexLock lock(mu_);
    return requests_;
  }

  // Holds every answer until Release() (a sink that hangs).
  void Hold() {
    MutexLock lock(mu_);
    hold_ = true;
  }
  void Release() {
    {
      MutexLock lock(mu_);
      hold_ = false;
    }
    cv_.NotifyAll();
  }
  bool WaitForRequests(std::size_t n) {
    MutexLock lock(mu_);
    return cv_.WaitFor(mu_, std::chrono::seconds(10),
                       [&]() REQUIRES(mu_) { return requests_.size() >= n; });
  }

 private:
  void Handle(const net::HttpRequest& req, net::HttpResponse& resp) {
    MutexLock lock(mu_);
    requests_.push_back(req);
    cv_.NotifyAll();
    cv_.Wait(mu_, [&]() REQUIRES(mu_) { return !hold_; });
    const std::size_t i = std::min(requests_.size(), statuses_.size()) - 1;
    resp.status = statuses_[i];
    resp.content_type = "application/json";
    resp.body =
        resp.status == 200 ? R"({"id":1,"message":"Annotation added"})" : R"({"message":"no"})";
  }

  mutable Mutex mu_;
  CondVar cv_;
  std::vector<net::HttpRequest> requests_ GUARDED_BY(mu_);
  std::vector<int> statuses_ GUARDED_BY(mu_);
  bool hold_ GUARDED_BY(mu_) = false;
  net::HttpServer server_{net::HttpServer::Options{}};
  std::uint16_t port_ = 0;
};

struct Logs {
  Mutex mu;
  std::vector<std::string> lines GUARDED_BY(mu);
  std::function<void(std::string_view)> Sink() {
    return [this](std::string_view line) {
      MutexLock lock(mu);
      lines.emplace_back(line);
    };
  }
  std::string All() {
    MutexLock lock(mu);
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

PublishConfig FastRetries() {
  PublishConfig c;
  c.attempts = 3;
  c.backoff_ms = 10;
  c.max_backoff_ms = 20;
  c.timeout_ms = 2000;
  return c;
}

TEST(PublisherTest, GrafanaGetsOneAnnotationWithTheToken) {
  RecordingServer grafana({200});
  PublishConfig config = FastRetries();
  config.grafana =
      GrafanaSinkConfig{grafana.url() + "/", "glsa_secret", {"prod-a", "chat-api"}, "gpu-fleet"};
  Publisher publisher(config, nullptr);
  publisher.Publish(Example());
  ASSERT_TRUE(publisher.WaitIdle(10'000));

  const auto requests = grafana.requests();
  ASSERT_EQ(requests.size(), 1U);
  const net::HttpRequest& req = requests[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/api/annotations");
  EXPECT_EQ(req.Header("authorization"), "Bearer glsa_secret");
  EXPECT_EQ(req.Header("content-type"), "application/json");
  EXPECT_EQ(req.body,
            R"({"dashboardUID":"gpu-fleet","time":1764680000000,)"
            R"("tags":["gpucanary","release","chat-api","prod","prod-a"],)"
            R"("text":"llama3-70b-2026-12-02.1: 2026.12.02-1 llama-3-70b-instruct ckpt-18000 )"
            R"(fp8 vllm 0.6.3 CUDA 12.4 9f1c2e7"})");
  EXPECT_EQ(publisher.stats(Publisher::Sink::kGrafana).sent, 1U);
  EXPECT_EQ(publisher.stats(Publisher::Sink::kGrafana).failures, 0U);
}

// A canary that ended: a region (time..timeEnd) with its state, verdict
// and causes, tagged so a dashboard can filter canaries by outcome.
TEST(PublisherTest, GrafanaGetsACanaryRegionWithItsVerdictAndCauses) {
  RecordingServer grafana({200});
  PublishConfig config = FastRetries();
  config.grafana = GrafanaSinkConfig{grafana.url(), "glsa_secret", {"prod-a"}, "gpu-fleet"};
  Publisher publisher(config, nullptr);
  const Release release = Example();
  CanaryOutcome o;
  o.canary_id = "llama3-70b-2026-12-02.1";
  o.release = &release;
  o.release_id = release.id;
  o.started_at = 1764680000.0;
  o.ended_at = 1764680047.5;
  o.state = "failed";
  o.verdict = "fail";
  o.causes = {"power_brake (release): HW power brake held SM clock at 1050 MHz on node-4/0"};
  publisher.PublishCanary(o);
  ASSERT_TRUE(publisher.WaitIdle(10'000));
  const auto requests = grafana.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].target, "/api/annotations");
  EXPECT_EQ(requests[0].body,
            R"({"dashboardUID":"gpu-fleet","time":1764680000000,"timeEnd":1764680047500,)"
            R"("tags":["gpucanary","canary","failed","chat-api","prod","prod-a"],)"
            R"("text":"canary llama3-70b-2026-12-02.1: failed (verdict fail); power_brake )"
            R"((release): HW power brake held SM clock at 1050 MHz on node-4/0"})");
  // Without the release's annotation, without causes, another id.
  CanaryOutcome bare;
  bare.canary_id = "c1";
  bare.release_id = "r1";
  bare.started_at = 10;
  bare.ended_at = 20;
  bare.state = "inconclusive";
  bare.verdict = "inconclusive";
  EXPECT_EQ(GrafanaCanaryBody(bare, GrafanaSinkConfig{}),
            R"({"time":10000,"timeEnd":20000,"tags":["gpucanary","canary","inconclusive"],)"
            R"("text":"canary c1 (r1): inconclusive"})");
}

TEST(PublisherTest, OtlpGetsOneResourceWithTheReleaseFields) {
  RecordingServer collector({200});
  PublishConfig config = FastRetries();
  config.otlp = OtlpSinkConfig{collector.url(), {{"X-Scope-OrgID", "tenant-1"}}};
  Publisher publisher(config, nullptr);
  publisher.Publish(Example());
  ASSERT_TRUE(publisher.WaitIdle(10'000));

  const auto requests = collector.requests();
  ASSERT_EQ(requests.size(), 1U);
  const net::HttpRequest& req = requests[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/v1/metrics");
  EXPECT_EQ(req.Header("x-scope-orgid"), "tenant-1");
  EXPECT_EQ(req.Header("authorization"), "");
  EXPECT_EQ(req.Header("content-type"), "application/json");
  auto attr = [](std::string_view key, std::string_view value) {
    return R"({"key":")" + std::string(key) + R"(","value":{"stringValue":")" + std::string(value) +
           R"("}})";
  };
  const std::string expected =
      R"({"resourceMetrics":[{"resource":{"attributes":[)" + attr("service.name", "chat-api") +
      "," + attr("service.version", "2026.12.02-1") + "," +
      attr("gpucanary.release.id", "llama3-70b-2026-12-02.1") + "," +
      attr("gpucanary.release.service", "chat-api") + "," +
      attr("gpucanary.release.version", "2026.12.02-1") + "," +
      attr("gpucanary.release.git_sha", "9f1c2e7") + "," +
      attr("gpucanary.release.model", "llama-3-70b-instruct") + "," +
      attr("gpucanary.release.checkpoint", "ckpt-18000") + "," +
      attr("gpucanary.release.quantization", "fp8") + "," +
      attr("gpucanary.release.cuda_version", "12.4") + "," +
      attr("gpucanary.release.framework", "vllm") + "," +
      attr("gpucanary.release.framework_version", "0.6.3") + "," +
      attr("gpucanary.release.environment", "prod") + "," +
      attr("gpucanary.release.previous", "llama3-70b-2026-11-28.2") + "," +
      attr("gpucanary.release.selector", R"({Hostname=~\"node-[45]\"})") +
      R"(,{"key":"gpucanary.release.targets","value":{"arrayValue":{"values":[)"
      R"({"stringValue":"node-4"},{"stringValue":"node-5"}]}}}]},)"
      R"("scopeMetrics":[{"scope":{"name":"gpucanary"},"metrics":[{"name":"gpucanary.release.info",)"
      R"("description":"A release announced to gpucanary; 1 from its start.","unit":"1",)"
      R"("gauge":{"dataPoints":[{"timeUnixNano":"1764680000000000000","asInt":"1","attributes":[)" +
      attr("gpucanary.release.id", "llama3-70b-2026-12-02.1") + "]}]}}]}]}]}";
  EXPECT_EQ(req.body, expected);
  // And it is JSON a collector reads.
  EXPECT_FALSE(nlohmann::json::parse(req.body, nullptr, false).is_discarded());
}

TEST(PublisherTest, RetriesServerErrorsThenDelivers) {
  RecordingServer grafana({503, 429, 200});
  Logs logs;
  PublishConfig config = FastRetries();
  config.grafana = GrafanaSinkConfig{grafana.url(), "t", {}, ""};
  Publisher publisher(config, logs.Sink());
  publisher.Publish(Example());
  ASSERT_TRUE(publisher.WaitIdle(10'000));
  ASSERT_EQ(grafana.requests().size(), 3U);
  EXPECT_EQ(grafana.requests()[0].body, grafana.requests()[2].body);
  const auto stats = publisher.stats(Publisher::Sink::kGrafana);
  EXPECT_EQ(stats.sent, 1U);
  EXPECT_EQ(stats.failures, 2U);
  EXPECT_EQ(stats.dropped, 0U);
  EXPECT_NE(logs.All().find("publish grafana: release 'llama3-70b-2026-12-02.1': attempt 1/3: "
                            "HTTP 503: {\"message\":\"no\"}; retrying in 10 ms"),
            std::string::npos)
      << logs.All();
  EXPECT_NE(logs.All().find("attempt 2/3: HTTP 429"), std::string::npos) << logs.All();
}

TEST(PublisherTest, AClientErrorIsFinal) {
  RecordingServer grafana({401});
  Logs logs;
  PublishConfig config = FastRetries();
  config.grafana = GrafanaSinkConfig{grafana.url(), "wrong", {}, ""};
  Publisher publisher(config, logs.Sink());
  publisher.Publish(Example());
  ASSERT_TRUE(publisher.WaitIdle(10'000));
  EXPECT_EQ(grafana.requests().size(), 1U);
  const auto stats = publisher.stats(Publisher::Sink::kGrafana);
  EXPECT_EQ(stats.sent, 0U);
  EXPECT_EQ(stats.failures, 1U);
  EXPECT_EQ(stats.dropped, 1U);
  EXPECT_NE(logs.All().find("attempt 1/3: HTTP 401: {\"message\":\"no\"}; giving up"),
            std::string::npos)
      << logs.All();
}

TEST(PublisherTest, AnUnreachableSinkIsRetriedThenGivenUp) {
  std::string url;
  {
    RecordingServer gone({200});
    url = gone.url();
  }  // stopped: connections to its port are refused now
  Logs logs;
  PublishConfig config = FastRetries();
  config.otlp = OtlpSinkConfig{url, {}};
  Publisher publisher(config, logs.Sink());
  publisher.Publish(Example());
  ASSERT_TRUE(publisher.WaitIdle(10'000));
  const auto stats = publisher.stats(Publisher::Sink::kOtlp);
  EXPECT_EQ(stats.sent, 0U);
  EXPECT_EQ(stats.failures, 3U);
  EXPECT_EQ(stats.dropped, 1U);
  EXPECT_NE(logs.All().find("Connection refused; giving up"), std::string::npos) << logs.All();

  std::string metrics;
  publisher.AppendMetrics(metrics);
  EXPECT_EQ(metrics,
            "# HELP gpucanary_publish_sent_total Releases delivered to a publish sink.\n"
            "# TYPE gpucanary_publish_sent_total counter\n"
            "gpucanary_publish_sent_total{sink=\"otlp\"} 0\n"
            "# HELP gpucanary_publish_failures_total Failed attempts to deliver a release to a "
            "publish sink (retried ones included).\n"
            "# TYPE gpucanary_publish_failures_total counter\n"
            "gpucanary_publish_failures_total{sink=\"otlp\"} 3\n"
            "# HELP gpucanary_publish_dropped_total Releases a publish sink never got (attempts "
            "spent, refused, or queue full).\n"
            "# TYPE gpucanary_publish_dropped_total counter\n"
            "gpucanary_publish_dropped_total{sink=\"otlp\"} 1\n");
}

TEST(PublisherTest, PublishNeverWaitsOnASlowSink) {
  RecordingServer grafana({200});
  RecordingServer collector({200});
  grafana.Hold();
  PublishConfig config = FastRetries();
  config.grafana = GrafanaSinkConfig{grafana.url(), "t", {}, ""};
  config.otlp = OtlpSinkConfig{collector.url(), {}};
  Publisher publisher(config, nullptr);
  Release first = Example();
  Release second = Example();
  second.id = "second";
  const auto start = std::chrono::steady_clock::now();
  publisher.Publish(first);
  ASSERT_TRUE(grafana.WaitForRequests(1));  // Grafana is now holding the first delivery
  publisher.Publish(second);
  const auto publish_time = std::chrono::steady_clock::now() - start;
  // The collector gets both while Grafana still hangs on the first.
  ASSERT_TRUE(collector.WaitForRequests(2));
  EXPECT_EQ(grafana.requests().size(), 1U);
  EXPECT_LT(publish_time, std::chrono::seconds(1));
  grafana.Release();
  ASSERT_TRUE(publisher.WaitIdle(10'000));
  EXPECT_EQ(grafana.requests().size(), 2U);
  EXPECT_EQ(publisher.stats(Publisher::Sink::kGrafana).sent, 2U);
  EXPECT_EQ(publisher.stats(Publisher::Sink::kOtlp).sent, 2U);
}

TEST(PublisherTest, SummaryLeavesOutEmptyFields) {
  Release r;
  r.id = "r1";
  EXPECT_EQ(ReleaseSummary(r), "r1:");
  r.model = "m";
  r.cuda_version = "12.4";
  EXPECT_EQ(ReleaseSummary(r), "r1: m CUDA 12.4");
  std::string metrics;
  Publisher(PublishConfig{}, nullptr).AppendMetrics(metrics);
  EXPECT_EQ(metrics, "");
}

}  // namespace
}  // namespace gpucanary::releases
