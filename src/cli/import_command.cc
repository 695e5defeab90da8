// `gpucanary import nvidia-smi|dcgm-csv INPUT -o OUTPUT.om[.gz]`: converts the
// GPU logs operators already have into a recorded telemetry file (docs/contracts.md §4)
// in DCGM vocabulary. The conversion lives in src/importers; this file only maps
// flags to ImportOptions, runs it and prints the report. See docs/importers.md.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <system_error>
#include <vector>

#include "cli/command.h"
#include "cli/time_flag.h"
#include "importers/dcgm_csv_importer.h"
#include "importers/import_report.h"
#include "importers/nvidia_smi_importer.h"
#include "recording/recording_writer.h"

namespace gpucanary::cli {
namespace {

enum class InputKind { kNvidiaSmi, kDcgmCsv };

struct ImportFlags {
  std::string input;
  std::string output;
  std::string hostname;
  std::string model_name;
  std::string gpu = "0";
  std::string utc_offset = "+00:00";
  std::vector<std::string> gpus;
  std::string start_at;
  bool skip_bad_lines = false;
};

// Removes a partial recording after a failure, so it cannot pass for a real
// one. Only a regular file that this run created goes: never stdout, a device
// such as /dev/null, or a file the writer could not open.
void RemovePartialOutput(const std::string& path) {
  std::error_code error;
  if (path != "-" && std::filesystem::is_regular_file(path, error)) {
    std::filesystem::remove(path, error);
  }
}

Result<importers::ImportReport> Convert(InputKind kind, const ImportFlags& flags,
                                        const importers::ImportOptions& options) {
  auto writer = recording::RecordingWriter::Open(flags.output);
  if (!writer) return Error(writer.error());
  auto report = kind == InputKind::kNvidiaSmi
                    ? importers::ImportNvidiaSmiCsv(flags.input, options, **writer)
                    : importers::ImportDcgmCsv(flags.input, options, **writer);
  Status status = report ? (*writer)->Close() : report.error();
  writer->reset();
  if (!status.ok()) {
    RemovePartialOutput(flags.output);
    return Error(std::move(status));
  }
  return report;
}

void RunImport(InputKind kind, const ImportFlags& flags, CommandContext& ctx) {
  importers::ImportOptions options;
  options.hostname = flags.hostname;
  options.model_name = flags.model_name;
  options.gpu = flags.gpu;
  options.skip_bad_lines = flags.skip_bad_lines;
  options.gpus = flags.gpus;
  if (std::find(options.gpus.begin(), options.gpus.end(), "") != options.gpus.end()) {
    ctx.err << "gpucanary import: --gpus: an empty GPU index in the list\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  if (!flags.start_at.empty()) {
    Result<std::int64_t> start = ParseTimeFlag("--start-at", flags.start_at);
    if (!start) {
      ctx.err << "gpucanary import: " << start.error().message() << "\n";
      ctx.exit_code = kExitBadInput;
      return;
    }
    options.start_at_ms = *start * 1000;
  }
  if (options.gpu.empty()) {
    ctx.err << "gpucanary import: --gpu must not be empty\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  if (std::error_code error; flags.input != "-" && flags.output != "-" &&
                             std::filesystem::equivalent(flags.input, flags.output, error)) {
    ctx.err << "gpucanary import: the output " << flags.output << " is the input file\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  auto offset = importers::ParseUtcOffset(flags.utc_offset);
  if (!offset) {
    ctx.err << "gpucanary import: --utc-offset: " << offset.error().message() << "\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  options.utc_offset_minutes = *offset;

  auto report = Convert(kind, flags, options);
  if (!report) {
    // Parse errors already read "FILE:LINE:COL: message".
    if (report.error().code() != StatusCode::kParseError) ctx.err << "gpucanary import: ";
    ctx.err << report.error().message() << "\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  // With the recording on stdout, the summary goes to stderr.
  std::ostream& summary = flags.output == "-" ? ctx.err : ctx.out;
  summary << "imported " << (kind == InputKind::kNvidiaSmi ? "nvidia-smi log " : "DCGM CSV ")
          << flags.input << " -> " << flags.output << "\n"
          << importers::FormatImportSummary(*report);
  ctx.exit_code = kExitOk;
}

CLI::App* AddImportSubcommand(CLI::App& import, InputKind kind, CommandContext& ctx) {
  const bool smi = kind == InputKind::kNvidiaSmi;
  auto flags = std::make_shared<ImportFlags>();
  CLI::App* sub = import.add_subcommand(
      smi ? "nvidia-smi" : "dcgm-csv",
      smi ? "Import an `nvidia-smi --query-gpu=... --format=csv` log"
          : "Import a DCGM CSV trace (epoch timestamp, gpu, DCGM value columns)");
  sub->add_option("INPUT", flags->input, "Input CSV, optionally .gz; - reads stdin")->required();
  sub->add_option("-o,--output", flags->output,
                  "Recorded telemetry file to write: OUTPUT.om, or OUTPUT.om.gz for gzip; - for "
                  "stdout")
      ->required();
  sub->add_option("--hostname", flags->hostname,
                  "Hostname label (default: the input file's name without extensions)");
  sub->add_option("--model", flags->model_name,
                  "modelName label, the GPU model (e.g. \"NVIDIA H100 PCIe\"), for rows without "
                  "one; the judge compares GPUs only within a model");
  if (smi) {
    sub->add_option("--gpu", flags->gpu, "gpu label when the log has no index column")
        ->capture_default_str();
    sub->add_option("--utc-offset", flags->utc_offset,
                    "UTC offset of the host that wrote the log's local timestamps, +HH:MM")
        ->capture_default_str();
  }
  sub->add_option("--gpus", flags->gpus,
                  "Import only these GPU indices (e.g. --gpus 0,1,2,3); other GPUs' rows are "
                  "counted and left out")
      ->delimiter(',');
  sub->add_option("--start-at", flags->start_at,
                  "Move the log in time so its first imported row is at TIME (Unix seconds or "
                  "RFC 3339), keeping every interval: lines up two runs recorded at different "
                  "times for a side-by-side judge");
  sub->add_flag("--skip-bad-lines", flags->skip_bad_lines,
                "Skip malformed rows (counted and reported) instead of stopping at the first");
  sub->callback([kind, flags, &ctx] { RunImport(kind, *flags, ctx); });
  return sub;
}

}  // namespace

void RegisterImportCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* import = app.add_subcommand(
      "import", "Convert existing GPU logs into a recorded telemetry file (OpenMetrics)");
  import->require_subcommand(1);
  AddImportSubcommand(*import, InputKind::kNvidiaSmi, ctx);
  AddImportSubcommand(*import, InputKind::kDcgmCsv, ctx);
}

}  // namespace gpucanary::cli
