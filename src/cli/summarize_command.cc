// gpucanary summarize FILE: what a dcgm-exporter scrape or recording says about
// each GPU, in a table a person reads in ten seconds.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "cli/command.h"
#include "expfmt/reader.h"
#include "telemetry/gpu_snapshot.h"

namespace gpucanary::cli {
namespace {

struct SummarizeArgs {
  std::string file;
  std::string output = "text";
};

// Columns: header, metric, decimals. Missing telemetry prints "-" (no
// data), never 0.
struct Column {
  const char* header;
  const char* metric;
  int decimals;
};
constexpr Column kColumns[] = {
    {"SM MHz", "DCGM_FI_DEV_SM_CLOCK", 0},       {"MEM MHz", "DCGM_FI_DEV_MEM_CLOCK", 0},
    {"POWER W", "DCGM_FI_DEV_POWER_USAGE", 1},   {"TEMP C", "DCGM_FI_DEV_GPU_TEMP", 0},
    {"UTIL %", "DCGM_FI_DEV_GPU_UTIL", 0},       {"SM ACT", "DCGM_FI_PROF_SM_ACTIVE", 2},
    {"DRAM ACT", "DCGM_FI_PROF_DRAM_ACTIVE", 2}, {"FB USED MiB", "DCGM_FI_DEV_FB_USED", 0},
};

std::string Cell(const telemetry::GpuState& g, const Column& c) {
  auto v = g.Get(c.metric);
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", c.decimals, *v);
  return buf;
}

void Run(const SummarizeArgs& args, CommandContext& ctx) {
  telemetry::GpuSnapshot snapshot;
  expfmt::ReadOptions options;
  options.skip_bad_lines = true;
  auto report = expfmt::ReadFile(
      args.file, options,
      [&](const expfmt::SampleView& s, std::string_view, expfmt::MetricType) { snapshot.Add(s); });
  if (!report) {
    ctx.err << "gpucanary summarize: " << report.error().message() << "\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  for (const std::string& m : report->messages) ctx.err << m << "\n";

  if (args.output == "json") {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& [key, g] : snapshot.gpus()) {
      nlohmann::json metrics = nlohmann::json::object();
      for (const auto& [name, value] : g.latest) metrics[name] = value;
      gpus.push_back({{"gpu", key.Id()},
                      {"uuid", g.uuid},
                      {"model", g.model},
                      {"pci_bus_id", g.pci_bus_id},
                      {"pod", g.pod},
                      {"metrics", metrics}});
    }
    ctx.out << nlohmann::json{{"file", report->name},
                              {"format", expfmt::FormatName(report->format)},
                              {"samples", report->stats.samples},
                              {"series", report->stats.series},
                              {"bad_lines", report->bad_lines},
                              {"gpus", gpus}}
                   .dump(2)
            << "\n";
  } else {
    ctx.out << report->name << ": " << snapshot.gpus().size() << " GPU(s), " << report->stats.series
            << " series, " << report->stats.samples << " samples ("
            << expfmt::FormatName(report->format) << ")\n";
    char line[256];
    std::snprintf(line, sizeof line, "%-22s %-24s", "GPU", "MODEL");
    ctx.out << line;
    for (const Column& c : kColumns) {
      std::snprintf(line, sizeof line, " %11s", c.header);
      ctx.out << line;
    }
    ctx.out << "  POD\n";
    for (const auto& [key, g] : snapshot.gpus()) {
      std::snprintf(line, sizeof line, "%-22s %-24s", key.Id().c_str(),
                    g.model.empty() ? "-" : g.model.c_str());
      ctx.out << line;
      for (const Column& c : kColumns) {
        std::snprintf(line, sizeof line, " %11s", Cell(g, c).c_str());
        ctx.out << line;
      }
      ctx.out << "  " << (g.pod.empty() ? "-" : g.pod) << "\n";
    }
    ctx.out << "(\"-\" = no data: the exporter did not report that field)\n";
  }
  ctx.exit_code = report->ok() ? kExitOk : kExitBadInput;
}

}  // namespace

void RegisterSummarizeCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<SummarizeArgs>();
  CLI::App* cmd =
      app.add_subcommand("summarize", "Summarise a dcgm-exporter scrape or recording per GPU");
  cmd->add_option("file", args->file, "Scrape or recorded telemetry file ('-' = stdin)")
      ->required();
  cmd->add_option("--output,-o", args->output, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([args, &ctx] { Run(*args, ctx); });
}

}  // namespace gpucanary::cli
