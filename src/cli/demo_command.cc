// `gpucanary demo`: the README's first command (docs/demo.md). A simulated
// fleet and the daemon on loopback; a healthy release rolled out and
// promoted, then a faulty one halted by the circuit breaker, with progress
// in the terminal. Runs until Ctrl-C (the dashboard stays up), or with
// --exit ends after the verdict: exit 0 when the verdicts, causes and
// actions are the scenario's, 1 when not, 3 for bad flags.

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>

#include "cli/command.h"
#include "demo/demo.h"
#include "vocab/vocab.h"

namespace gpucanary::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void OnDemoSignal(int /*signal*/) { g_interrupted = true; }

struct DemoFlags {
  std::string scenario = "power-brake";
  std::string dir;
  std::string summary;
  bool exit = false;
  bool skip_healthy = false;
  bool list = false;
  int port = 0;
};

void RunDemo(const DemoFlags& flags, CommandContext& ctx) {
  if (flags.list) {
    for (const demo::Scenario& s : demo::Scenarios()) {
      ctx.out << s.name << ": " << s.change << " (expect "
              << (s.expect_verdict == demo::ExpectedVerdict::kFail ? "fail" : "no fail") << ", "
              << vocab::Name(s.expect_cause) << ", scope " << vocab::Name(s.expect_scope) << ")\n";
    }
    return;
  }
  demo::Options options;
  options.scenario = flags.scenario;
  options.dir = flags.dir;
  options.healthy_first = !flags.skip_healthy;
  options.exit_after_verdict = flags.exit;
  options.port = static_cast<std::uint16_t>(flags.port);
  options.interrupted = &g_interrupted;
  std::signal(SIGINT, OnDemoSignal);
  std::signal(SIGTERM, OnDemoSignal);
  auto result = demo::Run(options, ctx.out);
  if (!result) {
    if (g_interrupted) {
      ctx.err << "gpucanary demo: interrupted\n";
      ctx.exit_code = kExitFail;
      return;
    }
    ctx.err << "gpucanary demo: " << result.error().message() << "\n";
    ctx.exit_code =
        result.error().code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitFail;
    return;
  }
  if (!flags.summary.empty()) {
    std::ofstream out(flags.summary, std::ios::trunc);
    out << demo::OutcomeToJson(*result) << "\n";
    if (!out.flush()) {
      ctx.err << "gpucanary demo: cannot write " << flags.summary << "\n";
      ctx.exit_code = kExitFail;
      return;
    }
  }
  ctx.exit_code = result->as_expected ? kExitOk : kExitFail;
}

}  // namespace

void RegisterDemoCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<DemoFlags>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "The canary service end to end on a simulated fleet: a healthy release promoted, a "
      "faulty one halted (docs/demo.md)");
  cmd->add_option("--scenario", flags->scenario,
                  "The faulty release's failure (--list-scenarios names them)")
      ->capture_default_str();
  cmd->add_flag("--list-scenarios", flags->list, "Name the scenarios and exit");
  cmd->add_flag("--exit", flags->exit,
                "End after the verdict (exit 0 when it is as expected, 1 when not)");
  cmd->add_flag("--skip-healthy", flags->skip_healthy,
                "Go straight to the faulty release (no healthy rollout first)");
  cmd->add_option("--dir", flags->dir,
                  "Folder for the demo's config, data, bundles and report (default: a new "
                  "temporary folder)");
  cmd->add_option("--port", flags->port, "The daemon's port on 127.0.0.1 (default: any free)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--summary", flags->summary,
                  "Also write the outcome as JSON to this file (for scripts and tests)");
  cmd->callback([flags, &ctx] { RunDemo(*flags, ctx); });
}

}  // namespace gpucanary::cli
