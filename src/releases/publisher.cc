#include "releases/publisher.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/mutex.h"
#include "model/family_writer.h"
#include "net/http_client.h"

namespace gpucanary::releases {
namespace {

using OrderedJson = nlohmann::ordered_json;

std::int64_t StartedAtMs(const Release& r) {
  return static_cast<std::int64_t>(std::llround(r.started_at * 1000));
}

std::string WithoutTrailingSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

OrderedJson StringAttribute(std::string_view key, std::string_view value) {
  return {{"key", key}, {"value", {{"stringValue", value}}}};
}

// Retried: no answer (connection refused, timeout, broken connection), 408,
// 429 and 5xx. Other statuses are final.
bool Retryable(int status) {
  return status == 0 || status == 408 || status == 429 || status >= 500;
}

}  // namespace

std::string ReleaseSummary(const Release& r) {
  std::string out = r.id + ":";
  auto add = [&](std::string_view prefix, const std::string& value) {
    if (value.empty()) return;
    out += ' ';
    out += prefix;
    out += value;
  };
  add("", r.version);
  add("", r.model);
  add("", r.checkpoint);
  add("", r.quantization);
  add("", r.framework);
  add("", r.framework_version);
  add("CUDA ", r.cuda_version);
  add("", r.git_sha);
  return out;
}

namespace {

// An annotation's tags: `first`, then the release's service and
// environment (when there is a release), then the sink's own; empty ones and
// repeats left out.
std::vector<std::string> AnnotationTags(std::initializer_list<std::string> first,
                                        const Release* release, const GrafanaSinkConfig& sink) {
  std::vector<std::string> tags;
  auto add = [&](const std::string& tag) {
    if (!tag.empty() && std::find(tags.begin(), tags.end(), tag) == tags.end()) {
      tags.push_back(tag);
    }
  };
  for (const std::string& tag : first) add(tag);
  if (release != nullptr) {
    add(release->service);
    add(release->environment);
  }
  for (const std::string& tag : sink.tags) add(tag);
  return tags;
}

}  // namespace

std::string GrafanaCanaryBody(const CanaryOutcome& o, const GrafanaSinkConfig& sink) {
  const std::vector<std::string> tags =
      AnnotationTags({"gpucanary", "canary", o.state}, o.release, sink);
  std::string text = "canary " + o.canary_id;
  if (o.release_id != o.canary_id) text += " (" + o.release_id + ")";
  text += ": " + o.state;
  if (!o.verdict.empty() && o.verdict != o.state) text += " (verdict " + o.verdict + ")";
  for (const std::string& c : o.causes) text += "; " + c;
  OrderedJson body;
  if (!sink.dashboard_uid.empty()) body["dashboardUID"] = sink.dashboard_uid;
  body["time"] = static_cast<std::int64_t>(std::llround(o.started_at * 1000));
  body["timeEnd"] = static_cast<std::int64_t>(std::llround(o.ended_at * 1000));
  body["tags"] = tags;
  body["text"] = text;
  return body.dump();
}

std::string GrafanaAnnotationBody(const Release& r, const GrafanaSinkConfig& sink) {
  const std::vector<std::string> tags = AnnotationTags({"gpucanary", "release"}, &r, sink);
  OrderedJson body;
  if (!sink.dashboard_uid.empty()) body["dashboardUID"] = sink.dashboard_uid;
  body["time"] = StartedAtMs(r);
  body["tags"] = tags;
  body["text"] = ReleaseSummary(r);
  return body.dump();
}

std::string OtlpMetricsBody(const Release& r) {
  // Semantic conventions: service.name and service.version
  // (https://opentelemetry.io/docs/specs/semconv/resource/#service); an SDK
  // without a service name reports "unknown_service".
  OrderedJson attributes = OrderedJson::array();
  attributes.push_back(
      StringAttribute("service.name", r.service.empty() ? "unknown_service" : r.service));
  if (!r.version.empty()) attributes.push_back(StringAttribute("service.version", r.version));
  for (const StringField& f : StringFields()) {
    const std::string& value = r.*f.member;
    if (!value.empty()) {
      attributes.push_back(StringAttribute("gpucanary.release." + std::string(f.name), value));
    }
  }
  if (!r.selector.empty()) {
    attributes.push_back(StringAttribute("gpucanary.release.selector", r.selector));
  }
  if (!r.targets.empty()) {
    OrderedJson values = OrderedJson::array();
    for (const std::string& t : r.targets) values.push_back({{"stringValue", t}});
    attributes.push_back(
        {{"key", "gpucanary.release.targets"}, {"value", {{"arrayValue", {{"values", values}}}}}});
  }
  // OTLP/JSON writes 64-bit integers as decimal strings.
  const std::string time_ns = std::to_string(StartedAtMs(r)) + "000000";
  OrderedJson point = {{"timeUnixNano", time_ns},
                       {"asInt", "1"},
                       {"attributes", {StringAttribute("gpucanary.release.id", r.id)}}};
  OrderedJson metric = {{"name", "gpucanary.release.info"},
                        {"description", "A release announced to gpucanary; 1 from its start."},
                        {"unit", "1"},
                        {"gauge", {{"dataPoints", {point}}}}};
  OrderedJson scope = {{"scope", {{"name", "gpucanary"}}}, {"metrics", {metric}}};
  OrderedJson resource = {{"resource", {{"attributes", attributes}}}, {"scopeMetrics", {scope}}};
  OrderedJson body = {{"resourceMetrics", {resource}}};
  return body.dump();
}

// One sink: a queue of request bodies and the thread that delivers them.
class Publisher::Worker {
 public:
  Worker(std::string name, std::string url, net::FetchOptions request, const PublishConfig& config,
         std::function<void(std::string_view)> log)
      : name_(std::move(name)),
        url_(std::move(url)),
        request_(std::move(request)),
        config_(config),
        log_(std::move(log)) {
    request_.method = "POST";
    request_.content_type = "application/json";
    request_.timeout_ms = config_.timeout_ms;
    request_.accept_gzip = false;
    thread_ = std::thread([this] { Run(); });
  }

  ~Worker() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    cv_.NotifyAll();
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void Push(std::string release_id, std::string body) {
    {
      MutexLock lock(mu_);
      if (queue_.size() >= config_.max_queue) {
        ++stats_.dropped;
        Log("release '" + release_id + "': dropped, " + std::to_string(queue_.size()) +
            " deliveries already queued");
        return;
      }
      queue_.push_back({std::move(release_id), std::move(body)});
    }
    cv_.NotifyAll();
  }

  SinkStats stats() const {
    MutexLock lock(mu_);
    return stats_;
  }

  bool WaitIdle(int timeout_ms) const {
    MutexLock lock(mu_);
    return cv_.WaitFor(mu_, std::chrono::milliseconds(timeout_ms),
                       [&]() REQUIRES(mu_) { return queue_.empty() && !busy_; });
  }

  const std::string& name() const { return name_; }

 private:
  struct Job {
    std::string release_id;
    std::string body;
  };

  void Log(const std::string& line) const {
    if (log_) log_("publish " + name_ + ": " + line);
  }

  void Run() {
    MutexLock lock(mu_);
    while (true) {
      cv_.Wait(mu_, [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      Job job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.Unlock();
      const Outcome outcome = Deliver(job);
      lock.Lock();
      busy_ = false;
      if (outcome == Outcome::kSent) {
        ++stats_.sent;
      } else if (outcome == Outcome::kGaveUp) {
        ++stats_.dropped;
      }
      cv_.NotifyAll();
    }
  }

  enum class Outcome : std::uint8_t { kSent, kGaveUp, kStopped };

  // Attempts one delivery until it succeeds, fails for good, or the worker
  // stops. Called without mu_ held.
  Outcome Deliver(const Job& job) {
    net::FetchOptions options = request_;
    options.body = job.body;
    int backoff_ms = config_.backoff_ms;
    for (int attempt = 1;; ++attempt) {
      auto response = net::Fetch(url_, options);
      const int status = response ? response->status : 0;
      if (response && status >= 200 && status < 300) return Outcome::kSent;
      std::string what = response
                             ? "HTTP " + std::to_string(status) + ": " + Snippet(response->body)
                             : response.error().message();
      const bool retry = Retryable(status) && attempt < config_.attempts;
      {
        MutexLock lock(mu_);
        ++stats_.failures;
      }
      const std::string head = "release '" + job.release_id + "': attempt " +
                               std::to_string(attempt) + "/" + std::to_string(config_.attempts) +
                               ": " + what;
      if (!retry) {
        Log(head + "; giving up");
        return Outcome::kGaveUp;
      }
      Log(head + "; retrying in " + std::to_string(backoff_ms) + " ms");
      MutexLock lock(mu_);
      if (cv_.WaitFor(mu_, std::chrono::milliseconds(backoff_ms),
                      [&]() REQUIRES(mu_) { return stopping_; })) {
        return Outcome::kStopped;
      }
      backoff_ms = std::min(backoff_ms * 2, config_.max_backoff_ms);
    }
  }

  static std::string Snippet(std::string_view body) {
    std::string s(body.substr(0, 200));
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
  }

  const std::string name_;
  const std::string url_;
  net::FetchOptions request_;
  const PublishConfig config_;  // a copy: the worker may outlive nothing it points to
  const std::function<void(std::string_view)> log_;

  mutable Mutex mu_;
  mutable CondVar cv_;
  std::deque<Job> queue_ GUARDED_BY(mu_);
  bool busy_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  SinkStats stats_ GUARDED_BY(mu_);
  std::thread thread_;
};

Publisher::Publisher(PublishConfig config, const std::function<void(std::string_view)>& log)
    : config_(std::move(config)) {
  if (config_.grafana) {
    net::FetchOptions request;
    request.tls = config_.grafana->tls;
    if (!config_.grafana->token.empty()) {
      request.headers.emplace_back("Authorization", "Bearer " + config_.grafana->token);
    }
    grafana_ = std::make_unique<Worker>(
        "grafana", WithoutTrailingSlash(config_.grafana->url) + "/api/annotations",
        std::move(request), config_, log);
  }
  if (config_.otlp) {
    net::FetchOptions request;
    request.headers = config_.otlp->headers;
    request.tls = config_.otlp->tls;
    otlp_ = std::make_unique<Worker>("otlp",
                                     WithoutTrailingSlash(config_.otlp->endpoint) + "/v1/metrics",
                                     std::move(request), config_, log);
  }
}

Publisher::~Publisher() = default;

void Publisher::PublishCanary(const CanaryOutcome& outcome) {
  if (grafana_) {
    grafana_->Push(outcome.release_id, GrafanaCanaryBody(outcome, *config_.grafana));
  }
}

void Publisher::Publish(const Release& release) {
  if (grafana_) grafana_->Push(release.id, GrafanaAnnotationBody(release, *config_.grafana));
  if (otlp_) otlp_->Push(release.id, OtlpMetricsBody(release));
}

Publisher::SinkStats Publisher::stats(Sink sink) const {
  const Worker* w = sink == Sink::kGrafana ? grafana_.get() : otlp_.get();
  return w != nullptr ? w->stats() : SinkStats{};
}

bool Publisher::WaitIdle(int timeout_ms) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (const Worker* w : {grafana_.get(), otlp_.get()}) {
    if (w == nullptr) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!w->WaitIdle(static_cast<int>(std::max<std::int64_t>(0, left.count())))) return false;
  }
  return true;
}

void Publisher::AppendMetrics(std::string& out) const {
  if (config_.empty()) return;
  struct Family {
    std::string_view name;
    std::string_view help;
    std::uint64_t SinkStats::*member;
  };
  static constexpr Family kFamilies[] = {
      {"gpucanary_publish_sent_total", "Releases delivered to a publish sink.", &SinkStats::sent},
      {"gpucanary_publish_failures_total",
       "Failed attempts to deliver a release to a publish sink (retried ones included).",
       &SinkStats::failures},
      {"gpucanary_publish_dropped_total",
       "Releases a publish sink never got (attempts spent, refused, or queue full).",
       &SinkStats::dropped},
  };
  model::FamilyWriter metrics(out);
  for (const Family& f : kFamilies) {
    metrics.Family(f.name, model::MetricType::kCounter, f.help);
    for (const Worker* w : {grafana_.get(), otlp_.get()}) {
      if (w == nullptr) continue;
      metrics.Sample({{"sink", w->name()}}, std::to_string(w->stats().*f.member));
    }
  }
}

}  // namespace gpucanary::releases
