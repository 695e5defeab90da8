#pragma once
// Internal to `gpucanary demo`: the fleet's constants and the Demo class that
// drives it, shared by the files that implement it, and nothing else should
// use:
//   demo.cc       the story: Run, its phases, demo::Run
//   scenarios.cc  the scenario table and the simulated fleet of a scenario
//   setup.cc      the folder, the files that reproduce the demo, starting
//                 the simulator and the daemon
//   pipeline.cc   the CD pipeline's steps over HTTP: deploy, announce, follow
//   printing.cc   what the demo prints as it goes
//   checks.cc     what the demo saw, whether the scenario kept its promise,
//                 and the outcome as JSON
//
// Not thread-safe, as demo.h says (the daemon's log callback takes log_mu_).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/status.h"
#include "daemon/daemon.h"
#include "demo/demo.h"
#include "sim/live.h"
#include "vocab/vocab.h"

namespace gpucanary::demo {

using Json = nlohmann::json;

// The fleet: five nodes of eight H100s, vLLM on each. The canary node is
// node-4; the judge's baseline is the other four.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr std::int64_t kNodes = 5;
inline constexpr std::int64_t kGpusPerNode = 8;
inline constexpr const char* kCanaryNode = "node-4";
// A baseline node's own fault, injected while the healthy canary runs (and in
// the bad-node scenario's canary): its power supply asserts the brake.
inline constexpr const char* kFaultyBaselineNode = "node-2";
inline constexpr const char* kNodeFault =
    R"({"kind": "power_brake", "nodes": ["node-2"], "gpus": "0-3"})";
inline constexpr const char* kStable = "v1.4.0";
inline constexpr const char* kHealthy = "v1.5.0";
inline constexpr const char* kFaulty = "v1.6.0";
// Seconds of telemetry before the first release (the canary's history).
inline constexpr std::int64_t kHistorySeconds = 20;
// The demo's model servers restart in this many seconds on a deploy (the
// simulator's default is 10 s, a real vLLM takes minutes).
inline constexpr double kRestartSeconds = 3;
// A canary not decided by then ends the demo's wait for it.
inline constexpr std::int64_t kCanaryTimeoutSeconds = 240;
// bad-node: the node's fault begins this long after the canary starts.
inline constexpr std::int64_t kNodeFaultAfterSeconds = 12;
// serve.yaml's actions: traffic_shift, isolate_node, diagnostic_bundle.
inline constexpr std::size_t kConfiguredActions = 3;

// scenarios.cc: the simulator's scenario file for `scenario`'s fleet.
std::string SimScenarioYaml(const Scenario& scenario);

// setup.cc: files and names.
Status WriteFile(const std::filesystem::path& path, std::string_view text);
// A few alphanumerics for the bearer token and the fake git SHAs.
std::string RandomHex(std::size_t n);

// printing.cc: numbers as the demo prints them ("-" when not finite), and
// JSON fields read leniently.
std::string Fixed(double v, int digits);
std::string Percent(double ratio);
double NumberOr(const Json& j, const char* key, double fallback);
std::string StringOr(const Json& j, const char* key, std::string fallback = "");

// The daemon's JSON is where the vocabulary's words become enums (and the
// demo's own output where they become words again): the word at `key` as
// E, unset when the field is missing or not one of E's words.
template <typename E>
std::optional<E> WordAt(const Json& j, const char* key) {
  return vocab::Parse<E>(StringOr(j, key));
}
// The wire name of `value`; "" when unset.
template <typename E>
std::string NameOr(std::optional<E> value) {
  return value ? std::string(vocab::Name(*value)) : std::string();
}

// One run of the demo: the simulated fleet, the daemon, and the CD pipeline
// that drives them over HTTP.
class Demo {
 public:
  Demo(const Options& options, const Scenario& scenario, std::ostream& out)
      : options_(options), scenario_(scenario), out_(out), t0_(clock_.NowMs()) {}
  ~Demo() { Shutdown(); }
  Demo(const Demo&) = delete;
  Demo& operator=(const Demo&) = delete;

  gpucanary::Result<Outcome> Run();

 private:
  // demo.cc: the phases of Run.
  Status RollOutHealthy(Outcome& result, std::string& stable);
  Status RepairNode();
  Status RollOutFaulty(Outcome& result, const std::string& stable);
  Status WriteReport(Outcome& result, std::string* problem);
  void Conclude(const Outcome& result, const std::string& stable);
  void WaitForInterrupt() const;

  // setup.cc
  Status Setup();
  Status MakeDir();
  Status StartFleet();
  Status StartDaemon();
  void Shutdown();

  // pipeline.cc
  bool Interrupted() const { return options_.interrupted != nullptr && *options_.interrupted; }
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
  Status InjectNodeFault();
  gpucanary::Result<Json> StopCanary(const std::string& id);
  gpucanary::Result<Json> WaitForActions(const std::string& id, std::size_t want);

  // printing.cc
  void Say(const std::string& line);
  void SayMore(const std::string& line);
  void PrintBanner();
  void PrintProgress(const Json& canary);
  void PrintVerdict(const Json& canary);
  void PrintCriticalMetrics(const Json& report);
  void PrintNews(const Json& canary);
  void PrintAction(const Json& action);
  Status ShowFleet(Outcome& result);

  // checks.cc
  CanarySeen Seen(const Json& canary) const;
  void Check(Outcome& result) const;

  const Options& options_;
  const Scenario& scenario_;
  std::ostream& out_;
  RealClock clock_;
  const std::int64_t t0_;
  std::filesystem::path dir_;
  std::string token_;
  std::unique_ptr<sim::LiveSim> sim_;
  std::unique_ptr<daemon::Daemon> daemon_;
  std::ofstream daemon_log_ GUARDED_BY(log_mu_);
  Mutex log_mu_;
  std::string control_;
  std::string api_;
  std::int64_t last_progress_ms_ = 0;
  std::set<std::string> shown_causes_;  // of the canary followed now
  std::size_t shown_actions_ = 0;
};

}  // namespace gpucanary::demo
