#pragma once
// The subcommand seam of the gpucanary binary. Each subcommand lives in its own
// <name>_command.cc and exposes one Register function; main.cc calls them all.
//
// A subcommand's callback writes to ctx.out / ctx.err and sets ctx.exit_code.
// Exit codes follow docs/contracts.md: 0 success, 3 bad input or usage (with a message on
// stderr); judge-style commands add 1 (fail) and 2 (inconclusive).

#include <iosfwd>

namespace CLI {
class App;
}

namespace gpucanary::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFail = 1;          // judge: the release must be halted
inline constexpr int kExitInconclusive = 2;  // judge: not enough evidence either way
inline constexpr int kExitBadInput = 3;

struct CommandContext {
  std::ostream& out;
  std::ostream& err;
  int exit_code = kExitOk;
};

void RegisterCheckCommand(CLI::App& app, CommandContext& ctx);
void RegisterSummarizeCommand(CLI::App& app, CommandContext& ctx);
void RegisterExplainCommands(CLI::App& app, CommandContext& ctx);
void RegisterImportCommand(CLI::App& app, CommandContext& ctx);
void RegisterSimCommand(CLI::App& app, CommandContext& ctx);
void RegisterJudgeCommand(CLI::App& app, CommandContext& ctx);
void RegisterServeCommand(CLI::App& app, CommandContext& ctx);
void RegisterBackfillCommand(CLI::App& app, CommandContext& ctx);
void RegisterReleaseCommand(CLI::App& app, CommandContext& ctx);
void RegisterReportCommand(CLI::App& app, CommandContext& ctx);
void RegisterDemoCommand(CLI::App& app, CommandContext& ctx);
void RegisterChangepointsCommand(CLI::App& app, CommandContext& ctx);
void RegisterCorrelateCommand(CLI::App& app, CommandContext& ctx);
void RegisterExporterCommand(CLI::App& app, CommandContext& ctx);

}  // namespace gpucanary::cli
