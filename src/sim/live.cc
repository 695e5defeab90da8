#include "sim/live.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/mutex.h"

namespace gpucanary::sim {
namespace {

// What Go's net/http sniffs for dcgm-exporter's body, and what
// prometheus_client's exposition handler sends for vLLM and SGLang.
constexpr const char* kDcgmContentType = "text/plain; charset=utf-8";
constexpr const char* kVllmContentType = "text/plain; version=0.0.4; charset=utf-8";

// How each server answers GET /metrics (content type) and an unknown path.
struct ServerHttp {
  const char* content_type;
  const char* not_found_type;
  const char* not_found_body;
};
ServerHttp HttpOf(vocab::Server server) {
  switch (server) {
    case vocab::Server::kVllm:
    case vocab::Server::kVllmLegacy:
    case vocab::Server::kSglang:
      // FastAPI over prometheus_client.
      return {kVllmContentType, "application/json", "{\"detail\":\"Not Found\"}"};
    case vocab::Server::kTgi:           // axum: a String handler, an empty 404
    case vocab::Server::kTritonTrtllm:  // Triton's metrics endpoint
      return {"text/plain; charset=utf-8", "text/plain; charset=utf-8", ""};
  }
  return {kVllmContentType, "text/plain; charset=utf-8", ""};
}
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
    e.dcgm_port = *dcgm;
    e.server = engine_.server_kind(i);
    if (e.server) {  // a `none` node listens for nothing but dcgm-exporter
      Result<std::uint16_t> metrics = server_.Listen(
          options_.host, port(1),
          [this, i](const net::HttpRequest& q, net::HttpResponse& r) { HandleServer(i, q, r); });
      if (!metrics) {
        server_.Stop();
        return metrics.error().WithPrefix(e.hostname + " " + std::string(ServerKindName(e.server)));
      }
      e.server_port = *metrics;
    }
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

void LiveSim::HandleServer(std::size_t node, const net::HttpRequest& request,
                           net::HttpResponse& response) {
  // Only nodes with a server listen here (Start), and their kind never changes.
  const ServerHttp http = HttpOf(*endpoints_.at(node).server);
  if (!IsMetricsGet(request, response, http.not_found_type, http.not_found_body)) return;
  MutexLock lock(mu_);
  if (engine_.server(node) == nullptr) {
    // The model server is restarting (or nothing is deployed): no metrics.
    response.status = 503;
    response.content_type = "text/plain; charset=utf-8";
    response.body = "model server not running\n";
    return;
  }
  response.content_type = http.content_type;
  engine_.RenderServer(node, response.body);
}

std::string LiveSim::TargetsJson() const {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const Endpoint& e : endpoints_) {
    nlohmann::ordered_json dcgm;
    dcgm["targets"] = {options_.host + ":" + std::to_string(e.dcgm_port)};
    dcgm["labels"] = {{"exporter", "dcgm"}, {"node", e.hostname}};
    groups.push_back(std::move(dcgm));
    if (!e.server) continue;  // a `none` node has no service target
    nlohmann::ordered_json g;
    g["targets"] = {options_.host + ":" + std::to_string(e.server_port)};
    g["labels"] = {{"exporter", std::string(ServerJob(*e.server))}, {"node", e.hostname}};
    // No server's series carry a host label: the target gives them their node
    // under the label dcgm-exporter uses (docs/scraping.md, static mapping).
    g["labels"]["Hostname"] = e.hostname;
    groups.push_back(std::move(g));
  }
  return groups.dump(2) + "\n";
}

}  // namespace gpucanary::sim
