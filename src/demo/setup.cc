// The demo's folder and the two things it starts on loopback: the simulated
// fleet and the daemon, each from the files written into the folder
// (fleet.yaml, policy.yaml, serve.yaml, targets.json, token), which
// reproduce the demo with `gpucanary serve` (docs/demo.md, "Files in the
// demo's folder").

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "analysis/policy/policy.h"
#include "core/mutex.h"
#include "daemon/daemon.h"
#include "daemon/serve_config.h"
#include "demo/demo_internal.h"
#include "sim/live.h"
#include "sim/scenario.h"

namespace gpucanary::demo {
namespace {

namespace fs = std::filesystem;

// The demo's judge policy: the default itself. Since the judge compares
// every second (docs/analysis-method.md), a healthy canary passes in about a
// minute without the shorter blocks the demo once needed.
gpucanary::Result<std::string> DemoPolicyText() {
  return "# gpucanary demo policy: the default (policies/default.yaml)\n" +
         std::string(analysis::DefaultPolicyText());
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

}  // namespace

Status WriteFile(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status(StatusCode::kIoError, "cannot create " + path.string());
  out << text;
  if (!out.flush()) return Status(StatusCode::kIoError, "cannot write " + path.string());
  return Status::Ok();
}

std::string RandomHex(std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::random_device device;
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += digits[device() % 16];
  return out;
}

Status Demo::Setup() {
  GC_RETURN_IF_ERROR(MakeDir());
  GC_RETURN_IF_ERROR(StartFleet());
  return StartDaemon();
}

// A new folder under the system's temp folder, or the one asked for, which
// must not hold an earlier demo's data.
Status Demo::MakeDir() {
  if (options_.dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "gpucanary-demo-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return Status(StatusCode::kIoError,
                    "cannot create a folder under " + fs::temp_directory_path().string());
    }
    dir_ = pattern;
    return Status::Ok();
  }
  dir_ = fs::absolute(options_.dir);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Status(StatusCode::kIoError, dir_.string() + ": " + ec.message());
  if (fs::exists(dir_ / "data")) {
    return Status(
        StatusCode::kInvalidArgument,
        dir_.string() + ": holds an earlier demo's data; give an empty or new folder (--dir)");
  }
  return Status::Ok();
}

// The simulated fleet (fleet.yaml), on loopback ports of its choosing.
Status Demo::StartFleet() {
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
  return Status::Ok();
}

// The daemon, from the files it reads (policy.yaml, token, targets.json,
// serve.yaml); its log goes to daemon.log.
Status Demo::StartDaemon() {
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
  {
    MutexLock lock(log_mu_);  // uncontended: the daemon that logs is not started yet
    daemon_log_.open(dir_ / "daemon.log", std::ios::app);
  }
  daemon::DaemonOptions daemon_options;
  daemon_options.log = [this](std::string_view line) {
    MutexLock lock(log_mu_);
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

}  // namespace gpucanary::demo
