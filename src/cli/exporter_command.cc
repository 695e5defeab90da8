// `gpucanary exporter`: this machine's GPUs read through NVML and served on
// GET /metrics exactly as dcgm-exporter serves them (same names, labels and
// value formats), for sites that run no DCGM (docs/nvml.md, docs/cli.md).
// Runs until SIGINT or SIGTERM, or for --duration; --once prints one sample.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "cli/command.h"
#include "cli/ready_file.h"
#include "config/yaml_fields.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "net/http_server.h"
#include "nvml/collector.h"
#include "nvml/library.h"
#include "nvml/sampler.h"
#include "nvml/source.h"

namespace gpucanary::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int /*signal*/) { g_stop = true; }

struct ExporterFlags {
  std::string listen = "0.0.0.0:9400";
  std::string interval = "1s";
  std::string library = std::string(nvml::kDefaultLibrary);
  std::string hostname;
  std::string hostname_label = "Hostname";
  std::string duration = "0";
  bool no_gpm = false;
  bool no_xid_events = false;
  bool once = false;
  std::string ready_file;
};

Result<std::int64_t> DurationMs(std::string_view flag, const std::string& text) {
  double seconds = 0;
  if (!config::ParseDurationText(text, &seconds) || seconds < 0) {
    return Error(StatusCode::kInvalidArgument,
                 std::string(flag) + ": bad duration '" + text + "' (e.g. 1s, 500ms, 2m)");
  }
  return std::llround(seconds * 1000);
}

// The flags, checked.
struct ExporterSettings {
  std::int64_t interval_ms = 0;
  std::int64_t duration_ms = 0;  // 0: until a signal
  std::string host;
  std::uint16_t port = 0;
};

Result<ExporterSettings> CheckFlags(const ExporterFlags& flags) {
  ExporterSettings out;
  auto interval_ms = DurationMs("--interval", flags.interval);
  if (!interval_ms) return Error(interval_ms.error());
  if (*interval_ms < nvml::kGpmMinIntervalMs) {
    return Error(StatusCode::kInvalidArgument,
                 "--interval: " + flags.interval + " is below NVML's 100 ms minimum for GPM");
  }
  out.interval_ms = *interval_ms;
  auto duration_ms = DurationMs("--duration", flags.duration);
  if (!duration_ms) return Error(duration_ms.error());
  out.duration_ms = *duration_ms;
  if (flags.hostname_label != "Hostname" && flags.hostname_label != "hostname") {
    return Error(StatusCode::kInvalidArgument,
                 "--hostname-label: '" + flags.hostname_label +
                     "' is neither Hostname (dcgm-exporter up to 4.8.2) nor hostname (later)");
  }
  const std::size_t colon = flags.listen.rfind(':');
  const char* port_end = flags.listen.data() + flags.listen.size();
  if (colon == std::string::npos ||
      std::from_chars(flags.listen.data() + colon + 1, port_end, out.port).ptr != port_end) {
    return Error(StatusCode::kInvalidArgument,
                 "--listen: '" + flags.listen + "' is not host:port (e.g. 0.0.0.0:9400)");
  }
  out.host = flags.listen.substr(0, colon);
  if (out.host.empty()) out.host = "0.0.0.0";
  return out;
}

// --once: two samples one interval apart, so GPM has a window to report.
void PrintOnce(nvml::Collector& collector, RealClock& clock,
               const nvml::Sampler::Options& sampler_options, std::int64_t interval_ms,
               CommandContext& ctx) {
  nvml::Snapshot snapshot;
  collector.Sample(clock.NowMs(), snapshot);
  std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  const auto start = std::chrono::steady_clock::now();
  collector.Sample(clock.NowMs(), snapshot);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string text;
  nvml::RenderSnapshot(snapshot, sampler_options.render, seconds, text);
  ctx.out << text;
}

// GET /metrics (the latest sample) and /health.
void HandleRequest(const nvml::Sampler& sampler, const net::HttpRequest& req,
                   net::HttpResponse& res) {
  if (req.method != "GET" && req.method != "HEAD") {
    res.status = 405;
    res.headers.emplace_back("Allow", "GET, HEAD");
    res.content_type = "text/plain; charset=utf-8";
    res.body = "only GET\n";
    return;
  }
  if (req.path == "/metrics") {
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = sampler.Latest();
  } else if (req.path == "/health") {
    res.content_type = "text/plain; charset=utf-8";
    res.body = "OK\n";
  } else {
    res.status = 404;
    res.content_type = "text/plain; charset=utf-8";
    res.body = "not found: the exporter serves /metrics and /health\n";
  }
}

// Samples every interval and serves the latest sample until SIGINT or
// SIGTERM, or for the duration.
Status Serve(nvml::Collector& collector, RealClock& clock,
             const nvml::Sampler::Options& sampler_options, const ExporterFlags& flags,
             const ExporterSettings& settings, CommandContext& ctx) {
  nvml::Sampler sampler(collector, clock, sampler_options);
  GC_RETURN_IF_ERROR(sampler.Start());
  net::HttpServer::Options server_options;
  server_options.threads = 1;
  net::HttpServer server(server_options);
  auto bound = server.Listen(settings.host, settings.port,
                             [&](const net::HttpRequest& req, net::HttpResponse& res) {
                               HandleRequest(sampler, req, res);
                             });
  if (!bound) return bound.error();
  GC_RETURN_IF_ERROR(server.Start());
  const std::string url = "http://" + settings.host + ":" + std::to_string(*bound);
  ctx.out << "gpucanary exporter: " << collector.gpu_count() << " GPU(s) through " << flags.library
          << ", driver " << collector.driver_version() << ", every " << settings.interval_ms
          << " ms; serving " << url << "/metrics\n";
  ctx.out.flush();
  if (!flags.ready_file.empty()) GC_RETURN_IF_ERROR(WriteReadyFile(flags.ready_file, url));
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(settings.duration_ms);
  while (!g_stop && (settings.duration_ms == 0 || std::chrono::steady_clock::now() < deadline)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  server.Stop();
  sampler.Stop();
  ctx.out << "gpucanary exporter: stopped after " << sampler.samples() << " samples\n";
  return Status::Ok();
}

Status Run(const ExporterFlags& flags, CommandContext& ctx) {
  auto settings = CheckFlags(flags);
  if (!settings) return settings.error();

  auto library = nvml::Library::Open(flags.library);
  if (!library) return library.error();
  Mutex log_mu;
  nvml::CollectorOptions options;
  options.hostname = flags.hostname.empty() ? nvml::DefaultHostname() : flags.hostname;
  options.gpm = !flags.no_gpm;
  options.xid_events = !flags.no_xid_events;
  options.log = [&](std::string_view line) {
    const MutexLock lock(log_mu);
    ctx.err << "gpucanary exporter: " << line << "\n";
    ctx.err.flush();
  };
  auto collector = nvml::Collector::Start(**library, options);
  if (!collector) return collector.error();

  RealClock clock;
  nvml::Sampler::Options sampler_options;
  sampler_options.interval_ms = settings->interval_ms;
  sampler_options.render.lowercase_hostname = flags.hostname_label == "hostname";
  if (flags.once) {
    PrintOnce(**collector, clock, sampler_options, settings->interval_ms, ctx);
    return Status::Ok();
  }
  return Serve(**collector, clock, sampler_options, flags, *settings, ctx);
}

}  // namespace

void RegisterExporterCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<ExporterFlags>();
  CLI::App* cmd = app.add_subcommand(
      "exporter",
      "Read this machine's GPUs through NVML and serve them on /metrics as dcgm-exporter does");
  cmd->add_option("--listen", flags->listen, "host:port to serve /metrics on")
      ->capture_default_str();
  cmd->add_option("--interval", flags->interval, "Sampling interval (>= 100ms)")
      ->capture_default_str();
  cmd->add_option("--nvml-library", flags->library, "The NVML library to open")
      ->capture_default_str();
  cmd->add_option("--hostname", flags->hostname,
                  "Value of the host label (default: $NODE_NAME, else the host name)");
  cmd->add_option("--hostname-label", flags->hostname_label,
                  "Spelling of the host label: Hostname or hostname")
      ->capture_default_str();
  cmd->add_flag("--no-gpm", flags->no_gpm, "Do not read GPM metrics (Hopper and newer)");
  cmd->add_flag("--no-xid-events", flags->no_xid_events, "Do not listen for Xid events");
  cmd->add_flag("--once", flags->once,
                "Print one sample (taken one interval after a first) to stdout and exit");
  cmd->add_option("--duration", flags->duration, "Stop after this long (0: run until a signal)")
      ->capture_default_str();
  cmd->add_option("--ready-file", flags->ready_file,
                  "Write the /metrics base URL here once listening (for scripts and tests)");
  cmd->callback([flags, &ctx] {
    const Status status = Run(*flags, ctx);
    if (!status.ok()) {
      ctx.err << "gpucanary exporter: " << status.message() << "\n";
      const bool bad_input = status.code() == StatusCode::kInvalidArgument;
      ctx.exit_code = bad_input ? kExitBadInput : kExitFail;
    }
  });
}

}  // namespace gpucanary::cli
