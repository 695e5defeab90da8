// gpucanary report BUNDLE_DIR [-o FILE]: a diagnostic bundle (written by the
// circuit breaker, docs/actions.md) as one self-contained HTML page
// (report/html_report.h). Writes BUNDLE_DIR/report.html unless -o is given
// ('-' is standard output); prints the path and what the page holds. Exit 0,
// or 3 with "PATH: why" for a bundle that is missing or does not parse.

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>

#include "cli/command.h"
#include "report/html_report.h"

namespace gpucanary::cli {
namespace {

struct ReportArgs {
  std::string bundle;
  std::string output;
};

void Run(const ReportArgs& args, CommandContext& ctx) {
  report::HtmlReportStats stats;
  auto html = report::RenderHtmlReport(args.bundle, &stats);
  if (!html) {
    ctx.err << "gpucanary report: " << html.error().message() << "\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  if (args.output == "-") {
    ctx.out << *html;
    return;
  }
  const std::filesystem::path out = args.output.empty()
                                        ? std::filesystem::path(args.bundle) / "report.html"
                                        : std::filesystem::path(args.output);
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  file << *html;
  file.close();
  if (!file) {
    ctx.err << "gpucanary report: " << out.string() << ": cannot write\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  ctx.out << out.string() << ": " << stats.charts << " charts of " << stats.gpus << " GPUs over "
          << stats.seconds << " s, " << html->size() << " bytes, self-contained\n";
}

}  // namespace

void RegisterReportCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Turn a diagnostic bundle into a self-contained HTML report (charts included)");
  cmd->add_option("bundle", args->bundle, "The bundle's folder (incident.json, telemetry.om)")
      ->required();
  cmd->add_option("-o,--output", args->output,
                  "Where to write the page (default BUNDLE/report.html; '-' for standard output)");
  cmd->callback([args, &ctx] { Run(*args, ctx); });
}

}  // namespace gpucanary::cli
