#pragma once
// Publishing new releases where sites already look (docs/configuration.md,
// `publish`):
//
// - Grafana: POST {url}/api/annotations with a Bearer token, one annotation
//   per release at its start, and one region per live canary when it ends
//   (time..timeEnd, its verdict and causes) (Grafana's HTTP API,
//   https://grafana.com/docs/grafana/latest/developers/http_api/annotations/):
//     {"time":1764680000000,"tags":["gpucanary","release","chat-api"],
//      "text":"llama3-70b-2026-12-02.1: 2026.12.02-1 llama-3-70b-instruct fp8"}
// - OpenTelemetry: POST {endpoint}/v1/metrics in OTLP/HTTP's JSON encoding
//   (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding): one
//   resource per release (service.name, service.version and the release's
//   fields as gpucanary.release.* attributes) with one gauge,
//   gpucanary.release.info = 1 at started_at.
//
// Each sink has its own queue and thread, so a sink that is down delays only
// itself, and Publish never waits on the network. A delivery is retried on a
// connection failure, a timeout, 408, 429 and 5xx, with a doubling backoff;
// another 4xx is final. Every failed attempt is logged and counted. Pending
// deliveries are dropped at destruction (releases themselves live in the
// metadata database; publishing is not resumed after a restart).
//
// Thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/tls_options.h"
#include "releases/release.h"

namespace gpucanary::releases {

struct GrafanaSinkConfig {
  std::string url;  // http://grafana:3000 or https://
  std::string token;
  std::vector<std::string> tags;  // after gpucanary, release, the service and the environment
  std::string dashboard_uid;      // empty: an organization-wide annotation
  net::TlsClientOptions tls{};    // for https://
};

struct OtlpSinkConfig {
  std::string endpoint;  // http://collector:4318 or https://
  std::vector<std::pair<std::string, std::string>> headers;
  net::TlsClientOptions tls{};  // for https://
};

struct PublishConfig {
  std::optional<GrafanaSinkConfig> grafana;
  std::optional<OtlpSinkConfig> otlp;
  int timeout_ms = 5000;  // one HTTP attempt
  int attempts = 5;       // per release and sink
  int backoff_ms = 1000;  // before the second attempt; doubled after each, at most max_backoff_ms
  int max_backoff_ms = 30'000;
  std::size_t max_queue = 1000;  // pending deliveries per sink; more are dropped

  bool empty() const { return !grafana && !otlp; }
};

// A live canary that ended, for a region annotation: Grafana shades
// started_at..ended_at and shows the verdict and its causes.
struct CanaryOutcome {
  std::string canary_id;
  const Release* release = nullptr;  // its annotation, for the tags; may be null
  std::string release_id;
  double started_at = 0;  // Unix seconds
  double ended_at = 0;
  std::string state;                // passed, failed, inconclusive, aborted
  std::string verdict;              // pass, fail, inconclusive
  std::vector<std::string> causes;  // "kind (scope): sentence"
};

// The request bodies, exactly as sent (pure; tested byte for byte).
std::string GrafanaAnnotationBody(const Release& release, const GrafanaSinkConfig& sink);
// {"time": started_at, "timeEnd": ended_at (ms), "tags": ["gpucanary",
//  "canary", <state>, service, environment, sink tags...], "text": "canary
//  <id> (<release>): <state>; <cause>; ..."}
std::string GrafanaCanaryBody(const CanaryOutcome& outcome, const GrafanaSinkConfig& sink);
std::string OtlpMetricsBody(const Release& release);
// "<id>: <version> <model> <checkpoint> <quantization> <framework> <framework_version>
// CUDA <cuda_version> <git_sha>", the empty ones left out.
std::string ReleaseSummary(const Release& release);

class Publisher {
 public:
  enum class Sink : std::uint8_t { kGrafana, kOtlp };
  struct SinkStats {
    std::uint64_t sent = 0;
    std::uint64_t failures = 0;  // failed attempts, retried ones included
    std::uint64_t dropped = 0;   // deliveries given up (attempts spent, final 4xx, queue full)
  };

  // Starts a thread per configured sink. `log` may be empty.
  Publisher(PublishConfig config, const std::function<void(std::string_view)>& log);
  // Stops the threads: an attempt in flight ends within timeout_ms, waits for
  // a retry end at once, and pending deliveries are dropped.
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // Queues `release` for every configured sink and returns at once.
  void Publish(const Release& release);
  // Queues a canary's region annotation for Grafana (when configured).
  void PublishCanary(const CanaryOutcome& outcome);

  SinkStats stats(Sink sink) const;
  // Waits until every sink's queue is empty and no attempt is in flight.
  // False on timeout. For tests and orderly shutdown.
  bool WaitIdle(int timeout_ms) const;

  // gpucanary_publish_{sent,failures,dropped}_total{sink="grafana"|"otlp"} in
  // the Prometheus text format, for the configured sinks (nothing if none).
  void AppendMetrics(std::string& out) const;

 private:
  class Worker;
  PublishConfig config_;
  std::unique_ptr<Worker> grafana_;
  std::unique_ptr<Worker> otlp_;
};

}  // namespace gpucanary::releases
