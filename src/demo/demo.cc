#include "demo/demo.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "analysis/policy/policy.h"
#include "core/clock.h"
#include "daemon/daemon.h"
#include "daemon/serve_config.h"
#include "net/http_client.h"
#include "report/html_report.h"
#include "sim/live.h"
#include "sim/scenario.h"

namespace gpucanary::demo {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The fleet: five nodes of eight H100s, vLLM on each. The canary node is
// node-4; the judge's baseline is the other four.
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kNodes = 5;
constexpr std::int64_t kGpusPerNode = 8;
constexpr const char* kCanaryNode = "node-4";
// A baseline node's own fault, injected while the healthy canary runs (and in
// the bad-node scenario's canary): its power supply asserts the brake.
constexpr const char* kFaultyBaselineNode = "node-2";
constexpr const char* kNodeFault = R"({"kind": "power_brake", "nodes": ["node-2"], "gpus": "0-3"})";
constexpr const char* kStable = "v1.4.0";
constexpr const char* kHealthy = "v1.5.0";
constexpr const char* kFaulty = "v1.6.0";
// Seconds of telemetry before the first release (the canary's history).
constexpr std::int64_t kHistorySeconds = 20;
// The demo's model servers restart in this many seconds on a deploy (the
// simulator's default is 10 s, a real vLLM takes minutes).
constexpr double kRestartSeconds = 3;
// A canary not decided by then ends the demo's wait for it.
constexpr std::int64_t kCanaryTimeoutSeconds = 240;
// bad-node: the node's fault begins this long after the canary starts.
constexpr std::int64_t kNodeFaultAfterSeconds = 12;
// serve.yaml's actions: traffic_shift, isolate_node, diagnostic_bundle.
constexpr std::size_t kConfiguredActions = 3;

const std::vector<Scenario>& AllScenarios() {
  static const std::vector<Scenario> scenarios = {
      {"power-brake", "fp8 GEMM kernels whose current spikes trip the node's power brake",
       "power_spikiness: 2.5", "fp8", "", "fail", "power_brake", "release"},
      {"memory-thrash", "a paged-attention kernel that thrashes HBM (DRAM busy, SMs starved)",
       "dram_thrash: 1.8", "bf16", "", "fail", "memory_thrash", "release"},
      {"low-occupancy", "a compiler change that spills registers: SM occupancy collapses",
       "occupancy_factor: 0.4", "bf16", "", "fail", "low_occupancy", "release"},
      {"xid-flood", "CUDA graphs that fault on the GPU (XID 31, MMU faults)",
       "xid: 31, xid_per_s: 0.2", "bf16", "", "fail", "xid_errors", "release"},
      {"software-regression", "a vLLM build 40% slower per token with the hardware unchanged",
       "slowdown: 1.4", "bf16", "", "fail", "software_regression", "release"},
      {"bad-node",
       "nothing harmful; meanwhile baseline node-2's power supply asserts the power brake on "
       "GPUs 0-3",
       "", "bf16", kNodeFault, "not_fail", "power_brake", "node"},
  };
  return scenarios;
}

std::string Fixed(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string Percent(double ratio) {
  if (!std::isfinite(ratio)) return "-";
  std::ostringstream s;
  s << std::showpos << std::fixed << std::setprecision(1) << ratio * 100 << "%";
  return s.str();
}

double NumberOr(const Json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string StringOr(const Json& j, const char* key, std::string fallback = "") {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::move(fallback);
}

Status WriteFile(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status(StatusCode::kIoError, "cannot create " + path.string());
  out << text;
  if (!out.flush()) return Status(StatusCode::kIoError, "cannot write " + path.string());
  return Status::Ok();
}

std::string SimScenarioYaml(const Scenario& scenario) {
  std::string faulty = "{profile: baseline";
  if (!scenario.sim_release.empty()) faulty += ", " + scenario.sim_release;
  faulty += "}";
  return "# gpucanary demo fleet (docs/demo.md)\n"
         "seed: 2026\n"
         "duration: 24h\n"
         "fleet:\n"
         "  - {nodes: \"node-[1-" +
         std::to_string(kNodes) +
         "]\", gpu: h100-sxm, driver: \"580.105.08\"}\n"
         "releases:\n"
         "  \"" +
         std::string(kStable) +
         "\": {profile: baseline}\n"
         "  \"" +
         std::string(kHealthy) +
         "\": {profile: baseline}\n"
         "  \"" +
         std::string(kFaulty) + "\": " + faulty +
         "\n"
         "traffic: {rps: 200}\n"
         "events:\n"
         "  - {at: 0s, deploy: \"" +
         std::string(kStable) + "\", nodes: all}\n";
}

// The default policy with 5 s blocks, 6 of them at least and a 10 s warm-up,
// so that a healthy canary passes in about a minute (the default's 10 s x 10
// blocks take two; judge-accuracy.md measured 5 s blocks too: 0 false fails
// in 1,000 A/A runs).
gpucanary::Result<std::string> DemoPolicyText() {
  std::string text(analysis::DefaultPolicyText());
  for (auto [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"\nblock: 10s\n", "\nblock: 5s\n"},
                                                        {"\nmin_blocks: 10\n", "\nmin_blocks: 6\n"},
                                                        {"\nwarmup: 20s\n", "\nwarmup: 10s\n"}}) {
    const auto at = text.find(from);
    if (at == std::string::npos) {
      return Error(StatusCode::kInternal, "the built-in policy has no '" + from.substr(1) + "'");
    }
    text.replace(at, from.size(), to);
  }
  return "# gpucanary demo policy: the default (policies/default.yaml) with shorter blocks\n" +
         text;
}

std::string ServeYaml(std::uint16_t port, std::uint16_t control_port) {
  const std::string control = "http://127.0.0.1:" + std::to_string(control_port);
  return "# gpucanary demo daemon (docs/demo.md): `gpucanary serve --config` runs the same\n"
         "listen: 127.0.0.1:" +
         std::to_string(port) +
         "\n"
         "storage: {path: data, retention: 1d}\n"
         "auth: {token_file: token}\n"
         "global: {scrape_interval: 1s, scrape_timeout: 1s, fast_interval: 1s}\n"
         "scrape_configs:\n"
         "  - job_name: fleet\n"
         "    file_sd_configs: [{files: [targets.json], refresh_interval: 1s}]\n"
         "canary:\n"
         "  policy: policy.yaml\n"
         "  history: " +
         std::to_string(kHistorySeconds) +
         "s\n"
         "  duration: 5m\n"
         "  baseline_nodes: 4\n"
         "actions:\n"
         "  - kind: traffic_shift        # traffic back to the stable release\n"
         "    url: " +
         control +
         "\n"
         "  - kind: isolate_node         # cordon a node with a fault of its own\n"
         "    url: " +
         control +
         "\n"
         "  - kind: diagnostic_bundle\n"
         "    dir: bundles\n";
}

// A few alphanumerics for the bearer token and the fake git SHAs.
std::string RandomHex(std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::random_device device;
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += digits[device() % 16];
  return out;
}

class Demo {
 public:
  Demo(const Options& options, const Scenario& scenario, std::ostream& out)
      : options_(options), scenario_(scenario), out_(out), t0_(clock_.NowMs()) {}
  ~Demo() { Shutdown(); }
  Demo(const Demo&) = delete;
  Demo& operator=(const Demo&) = delete;

  gpucanary::Result<Outcome> Run();

 private:
  Status Setup();
  void Shutdown();
  bool Interrupted() const { return options_.interrupted != nullptr && *options_.interrupted; }
  void Say(const std::string& line);
  void SayMore(const std::string& line);
  Status Sleep(double seconds);

  gpucanary::Result<Json> Call(const std::string& method, const std::string& url,
                               const std::string& body = "", bool auth = false);
  gpucanary::Result<Json> SimState() { return Call("GET", control_ + "/state"); }
  Status Deploy(const std::string& release, const std::vector<std::string>& nodes);
  Status WaitServing(const std::string& release, const std::vector<std::string>& nodes);
  Status WaitForHistory();
  gpucanary::Result<Json> Announce(const std::string& release, const std::string& previous,
                                   const std::string& quantization, const std::string& change);
  gpucanary::Result<Json> FollowCanary(const std::string& id, bool stop_on_pass,
                                       bool inject_node_fault);
  void PrintProgress(const Json& canary);
  void PrintVerdict(const Json& canary);
  gpucanary::Result<Json> WaitForActions(const std::string& id, std::size_t want);
  void PrintNews(const Json& canary);
  void PrintAction(const Json& action);
  Status ShowFleet(Outcome& result);
  CanarySeen Seen(const Json& canary) const;
  void Check(Outcome& result) const;

  const Options& options_;
  const Scenario& scenario_;
  std::ostream& out_;
  RealClock clock_;
  const std::int64_t t0_;
  fs::path dir_;
  std::string token_;
  std::unique_ptr<sim::LiveSim> sim_;
  std::unique_ptr<daemon::Daemon> daemon_;
  std::ofstream daemon_log_;
  std::mutex log_mu_;
  std::string control_;
  std::string api_;
  std::int64_t last_progress_ms_ = 0;
  std::set<std::string> shown_causes_;  // of the canary followed now
  std::size_t shown_actions_ = 0;
};

void Demo::Say(const std::string& line) {
  const double t = static_cast<double>(clock_.NowMs() - t0_) / 1000.0;
  char stamp[16];
  std::snprintf(stamp, sizeof stamp, "[%5.1fs] ", t);
  out_ << stamp << line << "\n";
  out_.flush();
}

void Demo::SayMore(const std::string& line) {
  out_ << "         " << line << "\n";
  out_.flush();
}

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
  if (auth) fetch.headers.emplace_back("Authorization", "Bearer " + token_);
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

Status Demo::Setup() {
  if (options_.dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "gpucanary-demo-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return Status(StatusCode::kIoError,
                    "cannot create a folder under " + fs::temp_directory_path().string());
    }
    dir_ = pattern;
  } else {
    dir_ = fs::absolute(options_.dir);
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) return Status(StatusCode::kIoError, dir_.string() + ": " + ec.message());
    if (fs::exists(dir_ / "data")) {
      return Status(
          StatusCode::kInvalidArgument,
          dir_.string() + ": holds an earlier demo's data; give an empty or new folder (--dir)");
    }
  }

  auto scenario = sim::ParseScenario(SimScenarioYaml(scenario_), (dir_ / "fleet.yaml").string());
  if (!scenario) return scenario.error();
  GC_RETURN_IF_ERROR(WriteFile(dir_ / "fleet.yaml", SimScenarioYaml(scenario_)));
  sim::EngineOptions engine;
  engine.restart_seconds = kRestartSeconds;
  sim::LiveOptions live;
  live.base_port = 0;
  live.control_port = 0;
  sim_ = std::make_unique<sim::LiveSim>(*scenario, engine, live, clock_);
  GC_RETURN_IF_ERROR(sim_->Start());
  control_ = "http://127.0.0.1:" + std::to_string(sim_->control_port());

  token_ = RandomHex(32);
  auto policy = DemoPolicyText();
  if (!policy) return policy.error();
  GC_RETURN_IF_ERROR(WriteFile(dir_ / "policy.yaml", *policy));
  GC_RETURN_IF_ERROR(WriteFile(dir_ / "token", token_ + "\n"));
  GC_RETURN_IF_ERROR(WriteFile(dir_ / "targets.json", sim_->TargetsJson()));
  GC_RETURN_IF_ERROR(
      WriteFile(dir_ / "serve.yaml", ServeYaml(options_.port, sim_->control_port())));
  auto config = daemon::LoadServeConfig((dir_ / "serve.yaml").string());
  if (!config) return config.error();
  daemon_log_.open(dir_ / "daemon.log", std::ios::app);
  daemon::DaemonOptions daemon_options;
  daemon_options.log = [this](std::string_view line) {
    std::lock_guard<std::mutex> lock(log_mu_);
    daemon_log_ << line << "\n";
    daemon_log_.flush();
  };
  auto started = daemon::Daemon::Start(*config, clock_, daemon_options);
  if (!started) return started.error();
  daemon_ = std::move(*started);
  api_ = "http://127.0.0.1:" + std::to_string(daemon_->port());
  return Status::Ok();
}

void Demo::Shutdown() {
  if (daemon_) daemon_->Stop();
  daemon_.reset();
  if (sim_) sim_->Stop();
  sim_.reset();
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

void Demo::PrintProgress(const Json& canary) {
  const Json& report = canary["report"];
  std::map<std::string, const Json*> metrics;
  for (const Json& m : report["metrics"]) metrics[StringOr(m, "name")] = &m;
  auto pair = [&](const char* name, const char* label, double scale, int digits,
                  const char* unit) -> std::string {
    auto it = metrics.find(name);
    if (it == metrics.end()) return "";
    const Json& m = *it->second;
    const double b = NumberOr(m, "baseline", kNaN) * scale;
    const double c = NumberOr(m, "canary", kNaN) * scale;
    if (!std::isfinite(b) || !std::isfinite(c)) return "";
    return std::string(label) + " " + Fixed(c, digits) + " vs " + Fixed(b, digits) + unit + " (" +
           Percent(NumberOr(m, "change", kNaN)) + ")";
  };
  const double started = NumberOr(canary, "started_at", 0);
  const double last = NumberOr(canary, "last_tick", kNaN);
  const std::string judged =
      std::isfinite(last)
          ? std::to_string(static_cast<std::int64_t>(last - std::floor(started)) + 1)
          : std::string("0");
  std::string line = StringOr(canary, "release") + " " + StringOr(canary, "state") + ", " + judged +
                     " s judged, verdict " + StringOr(report, "verdict") + ": ";
  std::string parts;
  for (const std::string& p : {pair("vllm:time_per_output_token_seconds", "TPOT", 1000, 1, " ms"),
                               pair("vllm:generation_tokens_total", "tokens/s", 1, 0, ""),
                               pair("DCGM_FI_DEV_SM_CLOCK", "SM clock", 1, 0, " MHz")}) {
    if (p.empty()) continue;
    parts += (parts.empty() ? "" : ", ") + p;
  }
  Say(line + (parts.empty() ? "no comparison yet (the release's warm-up, then the first blocks)"
                            : parts + " (canary vs baseline)"));
}

// Causes and actions the last poll had not shown, as they appear.
void Demo::PrintNews(const Json& canary) {
  for (const Json& cause : canary["report"]["causes"]) {
    std::string key = StringOr(cause, "kind") + "/" + StringOr(cause, "scope");
    for (const Json& n : cause["nodes"]) key += "/" + n.get<std::string>();
    if (!shown_causes_.insert(key).second) continue;
    SayMore("finding: " + StringOr(cause, "kind") + " (scope " + StringOr(cause, "scope") +
            "): " + StringOr(cause, "summary"));
  }
  const Json& actions = canary["actions"];
  if (actions.size() > shown_actions_) {
    Say("the circuit breaker acts (GET /api/v1/canaries/" + StringOr(canary, "id") + "):");
    for (std::size_t i = shown_actions_; i < actions.size(); ++i) PrintAction(actions[i]);
    shown_actions_ = actions.size();
  }
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
    const std::string state = StringOr(c, "state");
    const std::string verdict = StringOr(c["report"], "verdict");
    const std::int64_t now = clock_.NowMs();
    const std::size_t causes = c["report"]["causes"].size();
    if (now - last_progress_ms_ >= 3000 || causes != causes_seen || state != "running") {
      PrintProgress(c);
      last_progress_ms_ = now;
      causes_seen = causes;
    }
    PrintNews(c);
    if (inject_node_fault && !injected && now - start_ms >= kNodeFaultAfterSeconds * 1000) {
      auto r = Call("POST", control_ + "/faults", kNodeFault);
      if (!r) return Error(r.error());
      Say(std::string("the simulator injects a fault of the node's own: ") + kFaultyBaselineNode +
          "'s power supply asserts the power brake on GPUs 0-3 (POST /faults)");
      injected = true;
    }
    if (state != "running") return c;
    // With a node fault, the pass waits for its node's actions to show.
    const bool node_acted = !injected || c["actions"].size() >= kConfiguredActions;
    if (stop_on_pass && verdict == "pass" && node_acted) {
      // The pipeline promotes on the pass: ending the canary keeps its verdict.
      auto stopped = Call("POST", api_ + "/api/v1/canaries/" + id + "/stop", "", /*auth=*/true);
      if (!stopped) return stopped;
      auto final_state = Call("GET", api_ + "/api/v1/canaries/" + id);
      if (!final_state) return final_state;
      return (*final_state)["data"];
    }
    if (now - start_ms > kCanaryTimeoutSeconds * 1000) {
      Say("no decision after " + std::to_string(kCanaryTimeoutSeconds) + " s; moving on");
      return c;
    }
    GC_RETURN_IF_ERROR(Sleep(0.5));
  }
}

void Demo::PrintVerdict(const Json& canary) {
  const Json& report = canary["report"];
  const std::string verdict = StringOr(report, "verdict");
  const double started = NumberOr(canary, "started_at", kNaN);
  const double decided = NumberOr(report, "decided_at", kNaN);
  std::string when = std::isfinite(decided) && std::isfinite(started)
                         ? " " + Fixed(decided - started, 0) + " s after the release started"
                         : "";
  if (verdict == "fail") {
    Say("HALT: " + StringOr(canary, "release") + " FAILED" + when + " (score " +
        Fixed(NumberOr(report, "score", kNaN), 1) + ")");
  } else if (verdict == "pass") {
    Say(StringOr(canary, "release") + " PASSED" + when + ", canary " + StringOr(canary, "state"));
  } else {
    Say(StringOr(canary, "release") + ": verdict " + verdict + ", canary " +
        StringOr(canary, "state"));
  }
  for (const Json& cause : report["causes"]) {
    const double since = NumberOr(cause, "since", kNaN);
    std::string lag;
    if (verdict == "fail" && std::isfinite(since) && std::isfinite(decided) &&
        StringOr(cause, "scope") == "release") {
      lag = ", decided " + Fixed(decided - since, 0) + " s after it began";
    }
    SayMore("cause: " + StringOr(cause, "kind") + " (scope " + StringOr(cause, "scope") + lag +
            ")");
    SayMore("  " + StringOr(cause, "summary"));
  }
  if (verdict == "pass") {
    for (const Json& m : report["metrics"]) {
      if (!m.value("critical", false)) continue;
      const Json& interval = m["interval"];
      SayMore(StringOr(m, "name") + ": " + Percent(NumberOr(m, "change", kNaN)) + " [" +
              (interval.is_array() && interval.size() == 2 && interval[0].is_number()
                   ? Percent(interval[0].get<double>()) + ", " + Percent(interval[1].get<double>())
                   : std::string("-")) +
              "], shown within its " + Fixed(NumberOr(m, "margin", kNaN) * 100, 0) + "% margin");
    }
  }
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

void Demo::PrintAction(const Json& a) {
  const std::string detail = StringOr(a, "detail");
  const bool skipped = detail.rfind("skipped", 0) == 0;
  const std::string incident = StringOr(a, "incident", "fail");
  SayMore(std::string(skipped                ? "- "
                      : a.value("ok", false) ? "+ "
                                             : "! ") +
          StringOr(a, "kind") + (incident == "fail" ? "" : " [" + incident + "]") + ": " + detail);
}

Status Demo::ShowFleet(Outcome& result) {
  auto state = SimState();
  if (!state) return state.error();
  std::string weights;
  result.traffic_weights.clear();
  for (auto& [release, w] : (*state)["traffic_weights"].items()) {
    const double weight = w.is_number() ? w.get<double>() : kNaN;
    result.traffic_weights.emplace_back(release, weight);
    weights += (weights.empty() ? "" : ", ") + release + " " + Fixed(weight * 100, 0) + "%";
  }
  std::string nodes;
  result.cordoned.clear();
  for (const Json& n : (*state)["nodes"]) {
    const std::string host = StringOr(n, "hostname");
    if (n.value("cordoned", false)) result.cordoned.push_back(host);
    nodes += (nodes.empty() ? "" : ", ") + host + " " + StringOr(n, "release") +
             (n.value("cordoned", false) ? " CORDONED" : "") + " " +
             Fixed(NumberOr(n, "arrival_rate", kNaN), 1) + " req/s";
  }
  Say("the fleet now (simulator GET /state): traffic weights " +
      (weights.empty() ? std::string("even") : weights));
  SayMore(nodes);
  return Status::Ok();
}

CanarySeen Demo::Seen(const Json& canary) const {
  CanarySeen seen;
  seen.release = StringOr(canary, "release");
  seen.state = StringOr(canary, "state");
  const Json& report = canary["report"];
  seen.verdict = StringOr(report, "verdict");
  seen.started_at = NumberOr(canary, "started_at", 0);
  if (report.contains("decided_at") && report["decided_at"].is_number()) {
    seen.decided_at = report["decided_at"].get<double>();
  }
  for (const Json& c : report["causes"]) {
    CauseSeen cause;
    cause.kind = StringOr(c, "kind");
    cause.scope = StringOr(c, "scope");
    for (const Json& n : c["nodes"]) cause.nodes.push_back(n.get<std::string>());
    cause.summary = StringOr(c, "summary");
    cause.since = NumberOr(c, "since", 0);
    seen.causes.push_back(std::move(cause));
  }
  if (canary.contains("actions")) {
    for (const Json& a : canary["actions"]) {
      seen.actions.push_back({StringOr(a, "name"), StringOr(a, "kind"), a.value("ok", false),
                              StringOr(a, "detail"), StringOr(a, "incident", "fail")});
    }
  }
  return seen;
}

// What the scenario promises: the healthy release passes; the faulty one
// fails with the cause (release faults) and traffic goes back to the stable
// release, or is not failed and the faulty node is cordoned (node faults).
void Demo::Check(Outcome& result) const {
  auto& problems = result.problems;
  if (result.healthy) {
    const CanarySeen& h = *result.healthy;
    if (h.verdict != "pass") {
      problems.push_back("the healthy release " + h.release + " got verdict " + h.verdict +
                         ", not pass");
    }
    const bool named = std::any_of(h.causes.begin(), h.causes.end(), [](const CauseSeen& c) {
      return c.kind == "power_brake" && c.scope == "node" &&
             std::find(c.nodes.begin(), c.nodes.end(), kFaultyBaselineNode) != c.nodes.end();
    });
    if (!named) {
      problems.push_back(std::string("no node-scoped power_brake on ") + kFaultyBaselineNode +
                         " in the healthy canary");
    }
    const bool isolated = std::any_of(h.actions.begin(), h.actions.end(), [](const ActionSeen& a) {
      return a.kind == "isolate_node" && a.ok && a.detail.rfind("skipped", 0) != 0 &&
             a.incident == std::string("node:") + kFaultyBaselineNode;
    });
    if (!isolated) {
      problems.push_back(std::string(kFaultyBaselineNode) +
                         " was not isolated during the healthy canary");
    }
  }
  const CanarySeen& f = result.faulty;
  const bool failed = f.verdict == "fail";
  if (scenario_.expect_verdict == "fail" && !failed) {
    problems.push_back(f.release + " got verdict " + f.verdict + ", not fail");
  }
  if (scenario_.expect_verdict == "not_fail" && failed) {
    problems.push_back(f.release + " failed, but its release is harmless");
  }
  bool cause = false;
  for (const CauseSeen& c : f.causes) {
    cause = cause || (c.kind == scenario_.expect_cause && c.scope == scenario_.expect_scope);
  }
  if (!cause) {
    problems.push_back("no " + scenario_.expect_cause + " cause of scope " +
                       scenario_.expect_scope + " named");
  }
  auto acted = [&](const std::string& kind) {
    for (const ActionSeen& a : f.actions) {
      if (a.kind == kind && a.ok && a.detail.rfind("skipped", 0) != 0) return true;
    }
    return false;
  };
  const std::string stable = result.healthy ? kHealthy : kStable;
  if (scenario_.expect_scope == "release") {
    if (!acted("traffic_shift")) problems.push_back("traffic was not shifted back to " + stable);
    double faulty_weight = kNaN;
    for (const auto& [release, w] : result.traffic_weights) {
      if (release == kFaulty) faulty_weight = w;
    }
    if (!(faulty_weight == 0)) {
      problems.push_back(std::string("the simulator still sends traffic to ") + kFaulty);
    }
    if (!acted("diagnostic_bundle")) problems.push_back("no diagnostic bundle was written");
  } else {
    if (!acted("isolate_node")) problems.push_back("the faulty node was not isolated");
    if (std::find(result.cordoned.begin(), result.cordoned.end(), kFaultyBaselineNode) ==
        result.cordoned.end()) {
      problems.push_back(std::string(kFaultyBaselineNode) + " is not cordoned in the simulator");
    }
  }
  result.as_expected = problems.empty();
}

gpucanary::Result<Outcome> Demo::Run() {
  GC_RETURN_IF_ERROR(Setup());
  Outcome result;
  result.dir = dir_;
  result.dashboard_url = api_ + "/";
  out_ << "gpucanary demo: the canary service on a simulated fleet, on loopback only\n"
       << "  fleet      " << kNodes << " nodes x " << kGpusPerNode << " H100 SXM (node-1 .. node-"
       << kNodes << "), vLLM on each, running " << kStable << "\n"
       << "  simulator  " << control_ << " (control API: GET /state)\n"
       << "  gpucanary  " << api_ << " (dashboard and API; log in "
       << (dir_ / "daemon.log").string() << ")\n"
       << "  scenario   " << scenario_.name << ": " << kFaulty << " brings " << scenario_.change
       << "\n"
       << "  files      " << dir_.string()
       << " (serve.yaml, policy.yaml and targets.json reproduce it with `gpucanary serve`)\n\n";
  out_.flush();
  GC_RETURN_IF_ERROR(WaitForHistory());

  std::string stable = kStable;
  if (options_.healthy_first) {
    Say(std::string("deploying ") + kHealthy + " (a new checkpoint, nothing harmful) to " +
        kCanaryNode + " through the simulator's control API (POST /deploy); while its canary " +
        "runs, baseline " + kFaultyBaselineNode + " will get a fault of its own");
    GC_RETURN_IF_ERROR(Deploy(kHealthy, {kCanaryNode}));
    GC_RETURN_IF_ERROR(WaitServing(kHealthy, {kCanaryNode}));
    auto canary = Announce(kHealthy, kStable, "bf16", "a new checkpoint (ckpt-18000)");
    if (!canary) return Error(canary.error());
    auto done = FollowCanary(StringOr(*canary, "id"), /*stop_on_pass=*/true,
                             /*inject_node_fault=*/true);
    if (!done) return Error(done.error());
    PrintVerdict(*done);
    result.healthy = Seen(*done);
    // The operators repair the node before the next release.
    for (const auto& [path, body] : std::vector<std::pair<std::string, std::string>>{
             {"/faults/clear", R"({"kind": "power_brake", "nodes": ["node-2"]})"},
             {"/uncordon", R"({"node": "node-2"})"}}) {
      auto r = Call("POST", control_ + path, body);
      if (!r) return Error(r.error());
    }
    Say(std::string(kFaultyBaselineNode) +
        " repaired (power supply swapped): fault cleared (POST /faults/clear), back in service "
        "(POST /uncordon)");
    if (result.healthy->verdict == "pass") {
      Say(std::string("promoting ") + kHealthy + " to every node (rolling restart, " +
          Fixed(kRestartSeconds, 0) + " s a node)");
      GC_RETURN_IF_ERROR(Deploy(kHealthy, {}));
      GC_RETURN_IF_ERROR(WaitServing(kHealthy, {}));
      Say(std::string(kHealthy) + " serves on every node; it is the stable release now");
      stable = kHealthy;
    } else {
      Say(std::string(kHealthy) + " did not pass; the demo goes on from " + kStable);
      GC_RETURN_IF_ERROR(Deploy(kStable, {kCanaryNode}));
      GC_RETURN_IF_ERROR(WaitServing(kStable, {kCanaryNode}));
    }
    GC_RETURN_IF_ERROR(Sleep(5));  // a few seconds of the stable fleet as history
  }

  Say(std::string("deploying ") + kFaulty + " (" + scenario_.change + ") to " + kCanaryNode);
  GC_RETURN_IF_ERROR(Deploy(kFaulty, {kCanaryNode}));
  GC_RETURN_IF_ERROR(WaitServing(kFaulty, {kCanaryNode}));
  auto canary = Announce(kFaulty, stable, scenario_.quantization, scenario_.change);
  if (!canary) return Error(canary.error());
  const std::string id = StringOr(*canary, "id");
  const bool node_fault = !scenario_.node_fault.empty();
  auto done = FollowCanary(id, /*stop_on_pass=*/node_fault, node_fault);
  if (!done) return Error(done.error());
  PrintVerdict(*done);
  Json final_canary = *done;
  if (StringOr((*done)["report"], "verdict") == "fail" || node_fault) {
    auto acted = WaitForActions(id, kConfiguredActions);
    if (!acted) return Error(acted.error());
    final_canary = *acted;
    PrintNews(final_canary);
  }
  result.faulty = Seen(final_canary);
  GC_RETURN_IF_ERROR(ShowFleet(result));

  std::string report_problem;
  for (const ActionSeen& a : result.faulty.actions) {
    if (a.kind != "diagnostic_bundle" || !a.ok) continue;
    const std::string prefix = "wrote ";
    const auto end = a.detail.find(" (");
    if (a.detail.rfind(prefix, 0) != 0 || end == std::string::npos) continue;
    const fs::path bundle = a.detail.substr(prefix.size(), end - prefix.size());
    auto html = report::RenderHtmlReport(bundle);
    if (!html) {
      report_problem =
          "the report of " + bundle.string() + " could not be made: " + html.error().message();
      Say(report_problem);
      continue;
    }
    result.report = dir_ / ("report-" + result.faulty.release + ".html");
    GC_RETURN_IF_ERROR(WriteFile(result.report, *html));
    Say("report: " + result.report.string() + " (`gpucanary report " + bundle.string() +
        "` makes it; open it in a browser, it works offline)");
    break;
  }
  Check(result);
  if (!report_problem.empty()) {
    result.problems.push_back(report_problem);
    result.as_expected = false;
  }
  if (result.as_expected) {
    Say("as expected: " +
        std::string(scenario_.expect_verdict == "fail"
                        ? "the faulty release was halted and its traffic sent back to " + stable
                        : std::string("the release was not blamed and the bad node was isolated")));
  } else {
    for (const std::string& p : result.problems) Say("NOT AS EXPECTED: " + p);
  }
  Say("dashboard: " + result.dashboard_url);
  std::ofstream(dir_ / "summary.json") << OutcomeToJson(result) << "\n";
  if (!options_.exit_after_verdict) {
    Say("the fleet and gpucanary keep running for the dashboard; Ctrl-C ends the demo");
    while (!Interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Shutdown();
  return result;
}

}  // namespace

const std::vector<Scenario>& Scenarios() { return AllScenarios(); }

const Scenario* FindScenario(std::string_view name) {
  for (const Scenario& s : AllScenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

gpucanary::Result<Outcome> Run(const Options& options, std::ostream& out) {
  const Scenario* scenario = FindScenario(options.scenario);
  if (scenario == nullptr) {
    std::string names;
    for (const Scenario& s : AllScenarios()) names += (names.empty() ? "" : ", ") + s.name;
    return Error(StatusCode::kInvalidArgument,
                 "unknown scenario '" + options.scenario + "' (one of: " + names + ")");
  }
  Demo demo(options, *scenario, out);
  return demo.Run();
}

std::string OutcomeToJson(const Outcome& result) {
  auto canary = [](const CanarySeen& c) {
    Json causes = Json::array();
    for (const CauseSeen& cause : c.causes) {
      causes.push_back({{"kind", cause.kind},
                        {"scope", cause.scope},
                        {"nodes", cause.nodes},
                        {"summary", cause.summary},
                        {"since", cause.since}});
    }
    Json actions = Json::array();
    for (const ActionSeen& a : c.actions) {
      actions.push_back({{"name", a.name},
                         {"kind", a.kind},
                         {"ok", a.ok},
                         {"detail", a.detail},
                         {"incident", a.incident}});
    }
    return Json{{"release", c.release},
                {"state", c.state},
                {"verdict", c.verdict},
                {"started_at", c.started_at},
                {"decided_at", c.decided_at ? Json(*c.decided_at) : Json(nullptr)},
                {"causes", std::move(causes)},
                {"actions", std::move(actions)}};
  };
  Json weights = Json::object();
  for (const auto& [release, w] : result.traffic_weights) {
    weights[release] = std::isfinite(w) ? Json(w) : Json(nullptr);
  }
  return Json{{"dir", result.dir.string()},
              {"dashboard", result.dashboard_url},
              {"healthy", result.healthy ? canary(*result.healthy) : Json(nullptr)},
              {"faulty", canary(result.faulty)},
              {"traffic_weights", std::move(weights)},
              {"cordoned", result.cordoned},
              {"report", result.report.string()},
              {"as_expected", result.as_expected},
              {"problems", result.problems}}
      .dump(2);
}

}  // namespace gpucanary::demo
