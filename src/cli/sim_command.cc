// `gpucanary sim --scenario FILE`: the simulated GPU inference fleet of
// docs/simulator.md.
//
//   live (default): every node's dcgm-exporter and vLLM /metrics on loopback
//     ports, plus the control API, until interrupted (or --run-for);
//   --offline DIR: the whole scenario on simulated time, as fast as the CPU
//     allows, into DIR/telemetry.om[.gz], DIR/truth.jsonl, DIR/releases.jsonl.

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "core/clock.h"
#include "sim/engine.h"
#include "sim/live.h"
#include "sim/offline.h"
#include "sim/scenario.h"

namespace gpucanary::cli {
namespace {

struct SimFlags {
  std::string scenario;
  std::string offline_dir;
  std::vector<std::string> canary_nodes;
  bool gzip = false;
  double duration_s = 0;  // 0: the scenario's
  double scrape_interval_s = 1;
  std::string host = "127.0.0.1";
  int base_port = 9400;
  int control_port = 9399;
  int http_threads = 1;
  std::string targets_file;
  double run_for_s = 0;  // 0: until SIGINT/SIGTERM
};

std::atomic<bool> g_interrupted{false};

extern "C" void OnSignal(int /*signal*/) { g_interrupted = true; }

Status WriteText(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status(StatusCode::kIoError, "cannot create '" + tmp + "'");
    out << text;
    if (!out.flush()) return Status(StatusCode::kIoError, "cannot write '" + tmp + "'");
  }
  // Prometheus's file_sd reloads on change: replace the file atomically.
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error)
    return Status(StatusCode::kIoError, "cannot rename to '" + path + "': " + error.message());
  return Status::Ok();
}

Status RunOffline(const sim::Scenario& scenario, const SimFlags& flags, CommandContext& ctx) {
  sim::Engine engine(scenario);
  for (const std::string& host : flags.canary_nodes) {
    if (!engine.FindNode(host)) {
      return Status(StatusCode::kInvalidArgument, "--canary-nodes: unknown node '" + host + "'");
    }
  }
  sim::OfflineOptions options;
  options.duration_s = flags.duration_s > 0 ? flags.duration_s : scenario.duration_s;
  options.scrape_interval_s = flags.scrape_interval_s;
  const auto t0 = std::chrono::steady_clock::now();
  Result<sim::OfflineRun> run =
      sim::RunScenarioOffline(engine, options, flags.offline_dir, flags.canary_nodes, flags.gzip);
  if (!run) return run.error();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string telemetry;
  for (const std::string& path : run->telemetry) {
    telemetry += (telemetry.empty() ? "" : ", ") + path;
  }
  char took[32];
  std::snprintf(took, sizeof took, "%.2f", seconds);
  ctx.out << scenario.file << ": " << engine.node_count() << " nodes, "
          << engine.fleet().gpu_count() << " GPUs, " << options.duration_s << " s simulated in "
          << took << " s: " << run->stats.samples << " samples -> " << telemetry << ", "
          << engine.Truth().size() << " truth records -> " << run->truth << ", "
          << engine.releases().size() << " releases -> " << run->releases << "\n";
  return Status::Ok();
}

// Two listeners per node plus a scraper's kept-alive connections outgrow the
// usual soft limit of 1024 descriptors at a few hundred nodes: raise the
// soft limit to the hard one.
void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

Status RunLive(const sim::Scenario& scenario, const SimFlags& flags, CommandContext& ctx) {
  RaiseFileLimit();
  RealClock clock;
  sim::LiveOptions options;
  options.host = flags.host;
  options.base_port = static_cast<std::uint16_t>(flags.base_port);
  options.control_port = static_cast<std::uint16_t>(flags.control_port);
  options.http_threads = flags.http_threads;
  sim::LiveSim live(scenario, sim::EngineOptions{}, options, clock);
  GC_RETURN_IF_ERROR(live.Start());
  if (!flags.targets_file.empty()) {
    GC_RETURN_IF_ERROR(WriteText(flags.targets_file, live.TargetsJson()));
  }
  ctx.out << "gpucanary sim: " << live.endpoints().size() << " nodes of " << scenario.file
          << "; control API http://" << flags.host << ":" << live.control_port() << "/state\n";
  for (const sim::LiveSim::Endpoint& e : live.endpoints()) {
    ctx.out << "  " << e.hostname << "  dcgm http://" << flags.host << ":" << e.dcgm_port
            << "/metrics";
    if (e.server) {
      ctx.out << "  " << sim::ServerKindName(e.server) << " http://" << flags.host << ":"
              << e.server_port << "/metrics";
    }
    ctx.out << "\n";
  }
  ctx.out.flush();
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<std::int64_t>(flags.run_for_s * 1000));
  while (!g_interrupted && (flags.run_for_s <= 0 || std::chrono::steady_clock::now() < deadline)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  live.Stop();
  return Status::Ok();
}

}  // namespace

void RegisterSimCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<SimFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sim", "Run a simulated GPU inference fleet (live over HTTP, or offline to files)");
  cmd->add_option("--scenario", flags->scenario, "Scenario YAML file (see scenarios/)")->required();
  cmd->add_option("--offline", flags->offline_dir,
                  "Run on simulated time and write DIR/telemetry.om, truth.jsonl, releases.jsonl");
  cmd->add_flag("--gzip", flags->gzip, "Offline: write .om.gz recordings");
  cmd->add_option("--canary-nodes", flags->canary_nodes,
                  "Offline: write these nodes to canary.om and the rest to baseline.om")
      ->delimiter(',');
  cmd->add_option("--duration", flags->duration_s,
                  "Offline: seconds to simulate (default: the scenario's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--scrape-interval", flags->scrape_interval_s,
                  "Offline: seconds between recorded scrapes (multiple of 0.1)")
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--host", flags->host, "Live: address to listen on");
  cmd->add_option("--base-port", flags->base_port,
                  "Live: node i serves dcgm on PORT+2i and vLLM on PORT+2i+1 (0: ephemeral)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--control-port", flags->control_port, "Live: control API port (0: ephemeral)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--http-threads", flags->http_threads, "Live: HTTP io threads")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--targets-file", flags->targets_file,
                  "Live: write Prometheus file_sd targets (JSON) here once listening");
  cmd->add_option("--run-for", flags->run_for_s, "Live: stop after this many seconds (0: never)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([flags, &ctx] {
    Result<sim::Scenario> scenario = sim::LoadScenario(flags->scenario);
    Status status = scenario ? (flags->offline_dir.empty() ? RunLive(*scenario, *flags, ctx)
                                                           : RunOffline(*scenario, *flags, ctx))
                             : scenario.error();
    if (!status.ok()) {
      ctx.err << "gpucanary sim: " << status.message() << "\n";
      ctx.exit_code = kExitBadInput;
    }
  });
}

}  // namespace gpucanary::cli
