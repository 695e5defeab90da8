// gpucanary: catches silent GPU inference regressions at release time.
// This file only wires subcommands together; each lives in src/cli/*_command.cc.

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/command.h"

int main(int argc, char** argv) {
  using namespace gpucanary::cli;
  CommandContext ctx{std::cout, std::cerr};
  CLI::App app{"gpucanary: joins GPU telemetry to releases and catches regressions at canary time",
               "gpucanary"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpucanary 0.1.0");

  RegisterCheckCommand(app, ctx);
  RegisterSummarizeCommand(app, ctx);
  RegisterExplainCommands(app, ctx);
  RegisterImportCommand(app, ctx);

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
