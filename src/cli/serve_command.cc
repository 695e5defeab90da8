// `gpucanary serve --config FILE`: the daemon (docs/http-api.md,
// docs/configuration.md). Runs until SIGINT or SIGTERM, then shuts down in
// order; after a kill -9 the next start recovers from the write-ahead log.

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "cli/command.h"
#include "cli/ready_file.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "daemon/daemon.h"
#include "daemon/serve_config.h"

namespace gpucanary::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int /*signal*/) { g_stop = true; }

struct ServeFlags {
  std::string config;
  std::string listen;
  std::string ready_file;
  bool empty_metadata = false;
};

Status Serve(const ServeFlags& flags, CommandContext& ctx) {
  auto config = daemon::LoadServeConfig(flags.config);
  if (!config) return config.error();
  if (!flags.listen.empty()) {
    auto overridden = daemon::ParseServeConfig("listen: \"" + flags.listen + "\"\n", "--listen");
    if (!overridden) return overridden.error();
    config->listen_host = overridden->listen_host;
    config->listen_port = overridden->listen_port;
  }
  Mutex log_mu;
  daemon::DaemonOptions options;
  options.empty_metadata = flags.empty_metadata;
  options.log = [&](std::string_view line) {
    MutexLock lock(log_mu);
    ctx.err << line << "\n";
    ctx.err.flush();
  };
  RealClock clock;
  auto d = daemon::Daemon::Start(*config, clock, options);
  if (!d) return d.error();
  const std::string url = (config->tls_server ? "https://" : "http://") + config->listen_host +
                          ":" + std::to_string((*d)->port());
  ctx.out << "gpucanary serve: listening on " << url << ", data in " << config->data_dir << "\n";
  ctx.out.flush();
  if (!flags.ready_file.empty()) GC_RETURN_IF_ERROR(WriteReadyFile(flags.ready_file, url));
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ctx.out << "gpucanary serve: stopping\n";
  (*d)->Stop();
  return Status::Ok();
}

}  // namespace

void RegisterServeCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run the daemon: scrape, store, the HTTP API and the remote_write receiver");
  cmd->add_option("--config", flags->config, "Configuration YAML (docs/configuration.md)")
      ->required();
  cmd->add_option("--listen", flags->listen, "host:port to listen on (overrides the config)");
  cmd->add_option("--ready-file", flags->ready_file,
                  "Write the API's URL here once listening (for scripts and tests)");
  cmd->add_flag("--empty-metadata", flags->empty_metadata,
                "Start with empty metadata when meta.sqlite is missing or damaged (kept aside)");
  cmd->callback([flags, &ctx] {
    Status status = Serve(*flags, ctx);
    if (!status.ok()) {
      ctx.err << "gpucanary serve: " << status.message() << "\n";
      const bool bad_input = status.code() == StatusCode::kParseError ||
                             status.code() == StatusCode::kInvalidArgument ||
                             status.code() == StatusCode::kNotFound;
      ctx.exit_code = bad_input ? kExitBadInput : kExitFail;
    }
  });
}

}  // namespace gpucanary::cli
