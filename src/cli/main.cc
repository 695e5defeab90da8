// gpucanary: catches silent GPU inference regressions at release time.
// This file only wires subcommands together; each lives in src/cli/*_command.cc.

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/command.h"

namespace {

using gpucanary::cli::CommandContext;
using gpucanary::cli::kExitBadInput;

int Run(int argc, char** argv) {
  using namespace gpucanary::cli;  // NOLINT(google-build-using-namespace): the Register* list
  CommandContext ctx{std::cout, std::cerr};
  CLI::App app{"gpucanary: joins GPU telemetry to releases and catches regressions at canary time",
               "gpucanary"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpucanary 0.1.0");

  RegisterCheckCommand(app, ctx);
  RegisterSummarizeCommand(app, ctx);
  RegisterExplainCommands(app, ctx);
  RegisterImportCommand(app, ctx);
  RegisterSimCommand(app, ctx);
  RegisterJudgeCommand(app, ctx);
  RegisterServeCommand(app, ctx);
  RegisterBackfillCommand(app, ctx);
  RegisterReleaseCommand(app, ctx);
  RegisterReportCommand(app, ctx);
  RegisterDemoCommand(app, ctx);
  RegisterChangepointsCommand(app, ctx);
  RegisterCorrelateCommand(app, ctx);
  RegisterExporterCommand(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the usage message
    return kExitBadInput;
  }
  return ctx.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // Subcommands report errors as values; an exception reaching here is a bug
  // (or out of memory): say so on one line instead of terminate()'s abort.
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gpucanary: internal error: " << e.what() << "\n";
    return 70;  // EX_SOFTWARE
  }
}
