// The CD pipeline's steps, each over HTTP as a real pipeline's would be
// (docs/demo.md, "What it does"): deploy through the simulator's control
// API, announce the release to the daemon, follow its canary until the
// judge decides, wait for the circuit breaker's actions.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "demo/demo_internal.h"
#include "net/http_client.h"
#include "vocab/vocab.h"

namespace gpucanary::demo {

Status Demo::Sleep(double seconds) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
  while (std::chrono::steady_clock::now() < until) {
    if (Interrupted()) return Status(StatusCode::kUnavailable, "interrupted");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Ok();
}

gpucanary::Result<Json> Demo::Call(const std::string& method, const std::string& url,
                                   const std::string& body, bool auth) {
  net::FetchOptions fetch;
  fetch.method = method;
  fetch.body = body;
  fetch.timeout_ms = 10000;
  if (!body.empty()) fetch.content_type = "application/json";
  // Every call to the daemon carries the token: with one configured, reads
  // need it too (docs/http-api.md#authentication); the simulator gets none.
  if (auth || url.starts_with(api_ + "/")) {
    fetch.headers.emplace_back("Authorization", "Bearer " + token_);
  }
  auto response = net::Fetch(url, fetch);
  if (!response) return Error(response.error());
  Json j = Json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (response->status / 100 != 2) {
    return Error(StatusCode::kUnavailable, method + " " + url + ": HTTP " +
                                               std::to_string(response->status) + ": " +
                                               response->body.substr(0, 300));
  }
  if (j.is_discarded()) {
    return Error(StatusCode::kParseError, method + " " + url + ": the answer is not JSON");
  }
  return j;
}

Status Demo::Deploy(const std::string& release, const std::vector<std::string>& nodes) {
  Json body = {{"release", release}};
  if (nodes.empty()) {
    body["nodes"] = "all";
  } else {
    body["nodes"] = nodes;
  }
  auto r = Call("POST", control_ + "/deploy", body.dump());
  return r ? Status::Ok() : Status(r.error());
}

// Until every node named (all when empty) serves `release`.
Status Demo::WaitServing(const std::string& release, const std::vector<std::string>& nodes) {
  for (int i = 0; i < 600; ++i) {
    auto state = SimState();
    if (!state) return state.error();
    bool all = true;
    for (const Json& n : (*state)["nodes"]) {
      const std::string host = StringOr(n, "hostname");
      if (!nodes.empty() && std::find(nodes.begin(), nodes.end(), host) == nodes.end()) continue;
      const bool serving = n.value("serving", false) && StringOr(n, "release") == release &&
                           StringOr(n, "next_release").empty();
      all = all && serving;
    }
    if (all) return Status::Ok();
    GC_RETURN_IF_ERROR(Sleep(0.2));
  }
  return Status(StatusCode::kUnavailable,
                "the simulator's nodes did not come up on " + release + " within 2 minutes");
}

Status Demo::WaitForHistory() {
  // Every target scraped, then kHistorySeconds of it.
  const auto want = static_cast<std::size_t>(2 * kNodes);
  for (int i = 0;; ++i) {
    auto targets = Call("GET", api_ + "/api/v1/targets");
    if (!targets) return targets.error();
    std::size_t up = 0;
    for (const Json& t : (*targets)["data"]["activeTargets"]) {
      if (StringOr(t, "health") == "up") ++up;
    }
    if (up >= want) break;
    if (i >= 300) {
      return Status(StatusCode::kUnavailable,
                    "only " + std::to_string(up) + " of " + std::to_string(want) +
                        " targets up after 30 s; see " + (dir_ / "daemon.log").string());
    }
    GC_RETURN_IF_ERROR(Sleep(0.1));
  }
  Say("scraping " + std::to_string(2 * kNodes) +
      " targets every second (dcgm-exporter and vLLM per node); collecting " +
      std::to_string(kHistorySeconds) + " s of history before the first release");
  return Sleep(static_cast<double>(kHistorySeconds));
}

gpucanary::Result<Json> Demo::Announce(const std::string& release, const std::string& previous,
                                       const std::string& quantization, const std::string& change) {
  Json annotation = {{"id", release},
                     {"service", "chat-api"},
                     {"version", release.substr(1)},
                     {"git_sha", RandomHex(7)},
                     {"model", "llama-3-70b-instruct"},
                     {"checkpoint", "ckpt-18000"},
                     {"quantization", quantization},
                     {"cuda_version", "12.4"},
                     {"framework", "vllm"},
                     {"framework_version", "0.6.3"},
                     {"environment", "demo"},
                     {"started_at", static_cast<double>(clock_.NowMs()) / 1000.0},
                     {"targets", {kCanaryNode}},
                     {"previous", previous},
                     {"change", change}};
  auto reply = Call("POST", api_ + "/api/v1/releases", annotation.dump(), /*auth=*/true);
  if (!reply) return reply;
  const Json& data = (*reply)["data"];
  if (!data.contains("canary")) {
    return Error(StatusCode::kFailedPrecondition,
                 "release " + release + " was stored but started no canary: " +
                     StringOr(data, "canary_error", "no reason given"));
  }
  auto canary = Call("GET", api_ + "/api/v1/canaries/" + StringOr(data, "canary"));
  if (!canary) return canary;
  const Json& c = (*canary)["data"];
  std::string baseline;
  for (const Json& h : c["baseline_hosts"])
    baseline += (baseline.empty() ? "" : ", ") + h.get<std::string>();
  Say("announced " + release + " to gpucanary (POST /api/v1/releases): canary " + kCanaryNode +
      " against baseline " + baseline);
  return c;
}

gpucanary::Result<Json> Demo::FollowCanary(const std::string& id, bool stop_on_pass,
                                           bool inject_node_fault) {
  const std::int64_t start_ms = clock_.NowMs();
  shown_causes_.clear();
  shown_actions_ = 0;
  bool injected = false;
  std::size_t causes_seen = 0;
  for (;;) {
    auto got = Call("GET", api_ + "/api/v1/canaries/" + id);
    if (!got) return got;
    const Json& c = (*got)["data"];
    const std::optional<vocab::CanaryState> state = WordAt<vocab::CanaryState>(c, "state");
    const std::optional<vocab::Verdict> verdict = WordAt<vocab::Verdict>(c["report"], "verdict");
    const bool running = state == vocab::CanaryState::kRunning;
    const std::int64_t now = clock_.NowMs();
    const std::size_t causes = c["report"]["causes"].size();
    if (now - last_progress_ms_ >= 3000 || causes != causes_seen || !running) {
      PrintProgress(c);
      last_progress_ms_ = now;
      causes_seen = causes;
    }
    PrintNews(c);
    if (inject_node_fault && !injected && now - start_ms >= kNodeFaultAfterSeconds * 1000) {
      GC_RETURN_IF_ERROR(InjectNodeFault());
      injected = true;
    }
    if (!running) return c;
    // With a node fault, the pass waits for its node's actions to show.
    const bool node_acted = !injected || c["actions"].size() >= kConfiguredActions;
    if (stop_on_pass && verdict == vocab::Verdict::kPass && node_acted) return StopCanary(id);
    if (now - start_ms > kCanaryTimeoutSeconds * 1000) {
      Say("no decision after " + std::to_string(kCanaryTimeoutSeconds) + " s; moving on");
      return c;
    }
    GC_RETURN_IF_ERROR(Sleep(0.5));
  }
}

// Baseline node-2's own fault: its power supply asserts the brake.
Status Demo::InjectNodeFault() {
  auto r = Call("POST", control_ + "/faults", kNodeFault);
  if (!r) return r.error();
  Say(std::string("the simulator injects a fault of the node's own: ") + kFaultyBaselineNode +
      "'s power supply asserts the power brake on GPUs 0-3 (POST /faults)");
  return Status::Ok();
}

// The pipeline promotes on the pass: ending the canary keeps its verdict.
// Returns the canary as it ended.
gpucanary::Result<Json> Demo::StopCanary(const std::string& id) {
  auto stopped = Call("POST", api_ + "/api/v1/canaries/" + id + "/stop", "", /*auth=*/true);
  if (!stopped) return stopped;
  auto final_state = Call("GET", api_ + "/api/v1/canaries/" + id);
  if (!final_state) return final_state;
  return (*final_state)["data"];
}

gpucanary::Result<Json> Demo::WaitForActions(const std::string& id, std::size_t want) {
  for (int i = 0; i < 600; ++i) {
    auto got = Call("GET", api_ + "/api/v1/canaries/" + id);
    if (!got) return got;
    if ((*got)["data"]["actions"].size() >= want) return (*got)["data"];
    GC_RETURN_IF_ERROR(Sleep(0.1));
  }
  return Error(StatusCode::kUnavailable,
               "the circuit breaker's actions were not all recorded within 60 s");
}

}  // namespace gpucanary::demo
