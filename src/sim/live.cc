#include "sim/live.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/mutex.h"

namespace gpucanary::sim {
namespace {

// What Go's net/http sniffs for dcgm-exporter's body, and what
// prometheus_client's exposition handler sends for vLLM.
constexpr const char* kDcgmContentType = "text/plain; charset=utf-8";
constexpr const char* kVllmContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::int64_t kMaxCatchUpSteps = 50;  // per lock hold, so scrapes are never starved
constexpr std::int64_t kStepMs = 100;

EngineOptions Started(EngineOptions options, const Clock& clock) {
  options.start_ms = clock.NowMs() / kStepMs * kStepMs;
  return options;
}

// True for GET or HEAD /metrics; otherwise fills `response` with a 404 (in
// the server's own words) or a 405 and returns false.
bool IsMetricsGet(const net::HttpRequest& request, net::HttpResponse& response,
                  const char* not_found_type, const char* not_found_body) {
  if (request.path != "/metrics") {
    response.status = 404;
    response.content_type = not_found_type;
    response.body = not_found_body;
    return false;
  }
  if (request.method != "GET" && request.method != "HEAD") {
    response.status = 405;
    response.headers.emplace_back("Allow", "GET, HEAD");
    return false;
  }
  return true;
}

}  // namespace

LiveSim::LiveSim(const Scenario& scenario, const EngineOptions& engine_options, LiveOptions options,
                 Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      engine_(scenario, Started(engine_options, clock)),
      server_(net::HttpServer::Options{.threads = std::max(1, options_.http_threads)}) {}

LiveSim::~LiveSim() { Stop(); }

Status LiveSim::Start() {
  if (started_) return Status::Ok();
  const std::size_t nodes = engine_.node_count();
  endpoints_.clear();
  for (std::size_t i = 0; i < nodes; ++i) {
    Endpoint e;
    e.hostname = engine_.fleet().nodes()[i].hostname;
    const auto port = [&](std::size_t k) -> std::uint16_t {
      if (options_.base_port == 0) return 0;
      return static_cast<std::uint16_t>(options_.base_port + 2 * i + k);
    };
    Result<std::uint16_t> dcgm = server_.Listen(
        options_.host, port(0),
        [this, i](const net::HttpRequest& q, net::HttpResponse& r) { HandleDcgm(i, q, r); });
    if (!dcgm) {
      server_.Stop();
      return dcgm.error().WithPrefix(e.hostname + " dcgm-exporter");
    }
    Result<std::uint16_t> vllm = server_.Listen(
        options_.host, port(1),
        [this, i](const net::HttpRequest& q, net::HttpResponse& r) { HandleVllm(i, q, r); });
    if (!vllm) {
      server_.Stop();
      return vllm.error().WithPrefix(e.hostname + " vLLM");
    }
    e.dcgm_port = *dcgm;
    e.vllm_port = *vllm;
    endpoints_.push_back(std::move(e));
  }
  Result<std::uint16_t> control = server_.Listen(
      options_.host, options_.control_port,
      [this](const net::HttpRequest& q, net::HttpResponse& r) { HandleControl(q, r); });
  if (!control) {
    server_.Stop();
    return control.error().WithPrefix("control API");
  }
  control_port_ = *control;
  GC_RETURN_IF_ERROR(server_.Start());
  stop_ = false;
  stepper_ = std::thread([this] { StepLoop(); });
  started_ = true;
  return Status::Ok();
}

void LiveSim::Stop() {
  if (!started_) return;
  {
    MutexLock lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.NotifyAll();
  if (stepper_.joinable()) stepper_.join();
  server_.Stop();
  started_ = false;
}

void LiveSim::StepLoop() {
  while (!stop_) {
    std::int64_t next;
    {
      MutexLock lock(mu_);
      next = engine_.now_ms() + kStepMs;
    }
    // Wait in short real-time slices rather than on the clock, so Stop() is
    // prompt and a ManualClock that tests advance is noticed within ~20 ms.
    const std::int64_t now = clock_.NowMs();
    if (now < next) {
      MutexLock lock(stop_mu_);
      stop_cv_.WaitFor(stop_mu_, std::chrono::milliseconds(std::min<std::int64_t>(next - now, 20)),
                       [this] { return stop_.load(); });
      continue;
    }
    MutexLock lock(mu_);
    for (std::int64_t k = 0; k < kMaxCatchUpSteps && engine_.now_ms() + kStepMs <= clock_.NowMs();
         ++k) {
      engine_.Step();
    }
  }
}

void LiveSim::HandleDcgm(std::size_t node, const net::HttpRequest& request,
                         net::HttpResponse& response) {
  // Go's net/http answers an unknown path with this.
  if (!IsMetricsGet(request, response, "text/plain; charset=utf-8", "404 page not found\n")) {
    return;
  }
  response.content_type = kDcgmContentType;
  MutexLock lock(mu_);
  engine_.RenderDcgm(node, response.body);
}

void LiveSim::HandleVllm(std::size_t node, const net::HttpRequest& request,
                         net::HttpResponse& response) {
  // vLLM's FastAPI answers an unknown path with this.
  if (!IsMetricsGet(request, response, "application/json", "{\"detail\":\"Not Found\"}")) {
    return;
  }
  MutexLock lock(mu_);
  if (engine_.server(node) == nullptr) {
    // The model server is restarting (or nothing is deployed): no metrics.
    response.status = 503;
    response.content_type = "text/plain; charset=utf-8";
    response.body = "model server not running\n";
    return;
  }
  response.content_type = kVllmContentType;
  engine_.RenderVllm(node, response.body);
}

std::string LiveSim::TargetsJson() const {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const Endpoint& e : endpoints_) {
    for (const auto& [job, port] : {std::pair<const char*, std::uint16_t>{"dcgm", e.dcgm_port},
                                    std::pair<const char*, std::uint16_t>{"vllm", e.vllm_port}}) {
      nlohmann::ordered_json g;
      g["targets"] = {options_.host + ":" + std::to_string(port)};
      g["labels"] = {{"exporter", job}, {"node", e.hostname}};
      // vLLM's series carry no host label: the target gives them their node
      // under the label dcgm-exporter uses (docs/scraping.md, static mapping).
      if (std::string_view(job) == "vllm") g["labels"]["Hostname"] = e.hostname;
      groups.push_back(std::move(g));
    }
  }
  return groups.dump(2) + "\n";
}

}  // namespace gpucanary::sim
