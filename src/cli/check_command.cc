// gpucanary check FILE...: the `promtool check metrics` of gpucanary (docs/contracts.md §4).
// One summary line per file on stdout; FILE:LINE:COLUMN messages on stderr;
// exit 0 when every file is valid, 3 otherwise.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/time_format.h"
#include "expfmt/reader.h"

namespace gpucanary::cli {
namespace {

struct CheckArgs {
  std::vector<std::string> files;
  std::string format = "auto";
  std::string output = "text";
  std::size_t max_errors = 20;
};

std::string Summary(const expfmt::ReadReport& r) {
  const auto& s = r.stats;
  std::string out = r.name + ": " + (r.ok() ? "ok" : "INVALID") + " (" +
                    std::string(expfmt::FormatName(r.format)) + "): " + std::to_string(s.families) +
                    " families, " + std::to_string(s.series) + " series, " +
                    std::to_string(s.samples) + " samples, ";
  if (s.timestamped_samples == 0) {
    out += "no timestamps";
  } else {
    char span[32];
    std::snprintf(span, sizeof span, "%.3f",
                  static_cast<double>(s.max_timestamp_ms - s.min_timestamp_ms) / 1000.0);
    out += FormatUtcMillis(s.min_timestamp_ms) + " .. " + FormatUtcMillis(s.max_timestamp_ms) +
           " (" + span + " s)";
  }
  if (s.duplicate_samples > 0) {
    out += ", " + std::to_string(s.duplicate_samples) + " duplicate samples (first kept)";
  }
  if (!r.ok()) out += ", " + std::to_string(r.bad_lines) + " bad lines";
  return out;
}

nlohmann::json ToJson(const expfmt::ReadReport& r) {
  const auto& s = r.stats;
  nlohmann::json j = {
      {"file", r.name},           {"valid", r.ok()},     {"format", expfmt::FormatName(r.format)},
      {"families", s.families},   {"series", s.series},  {"samples", s.samples},
      {"lines", r.lines},         {"bytes", r.bytes},    {"duplicate_samples", s.duplicate_samples},
      {"bad_lines", r.bad_lines}, {"errors", r.messages}};
  if (s.timestamped_samples > 0) {
    j["start"] = static_cast<double>(s.min_timestamp_ms) / 1000.0;
    j["end"] = static_cast<double>(s.max_timestamp_ms) / 1000.0;
  } else {
    j["start"] = nullptr;
    j["end"] = nullptr;
  }
  return j;
}

void Run(const CheckArgs& args, CommandContext& ctx) {
  expfmt::ReadOptions options;
  options.skip_bad_lines = true;  // report every problem, up to max_errors
  options.max_messages = args.max_errors;
  if (args.format == "openmetrics") options.format = expfmt::Format::kOpenMetrics;
  if (args.format == "prometheus") options.format = expfmt::Format::kPrometheusText;

  bool all_valid = true;
  nlohmann::json results = nlohmann::json::array();
  for (const std::string& file : args.files) {
    auto report = expfmt::ReadFile(file, options);
    if (!report) {
      ctx.err << "gpucanary check: " << report.error().message() << "\n";
      all_valid = false;
      results.push_back({{"file", file}, {"valid", false}, {"error", report.error().message()}});
      continue;
    }
    for (const std::string& m : report->messages) ctx.err << m << "\n";
    if (report->bad_lines > report->messages.size()) {
      ctx.err << report->name << ": ... and " << (report->bad_lines - report->messages.size())
              << " more bad lines\n";
    }
    all_valid = all_valid && report->ok();
    if (args.output == "json") {
      results.push_back(ToJson(*report));
    } else {
      ctx.out << Summary(*report) << "\n";
    }
  }
  if (args.output == "json") ctx.out << results.dump(2) << "\n";
  ctx.exit_code = all_valid ? kExitOk : kExitBadInput;
}

}  // namespace

void RegisterCheckCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check", "Validate scrapes and recorded telemetry files (like promtool check metrics)");
  cmd->add_option("files", args->files,
                  "Files to check ('-' reads standard input; .gz is gunzipped)")
      ->required();
  cmd->add_option("--format", args->format,
                  "auto (OpenMetrics when the input ends with '# EOF' or is named *.om[.gz]), "
                  "openmetrics or prometheus")
      ->check(CLI::IsMember({"auto", "openmetrics", "prometheus"}));
  cmd->add_option("--output,-o", args->output, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--max-errors", args->max_errors, "Error messages printed per file");
  cmd->callback([args, &ctx] { Run(*args, ctx); });
}

}  // namespace gpucanary::cli
