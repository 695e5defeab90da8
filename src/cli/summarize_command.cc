// gpucanary summarize FILE: what a dcgm-exporter scrape or recording says about
// each GPU, in a table a person reads in ten seconds.

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "cli/command.h"
#include "dcgm/throttle.h"
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

// A scrape shows the value; a recording (timestamps) shows the mean over it.
std::string Cell(const telemetry::GpuState& g, const Column& c, bool recording) {
  const telemetry::MetricStats* st = g.Stats(c.metric);
  if (st == nullptr || st->count + st->nan == 0) return "-";
  if (st->count == 0) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", c.decimals, recording ? st->mean() : st->last);
  return buf;
}

// Harmful clock-event reasons: those set now (scrape), or the share of samples
// with any of them and the commonest one (recording).
std::string ThrottleCell(const telemetry::GpuState& g, bool recording) {
  if (g.throttle_masks.empty()) return "-";
  if (!recording) {
    const std::uint64_t mask = g.throttle_masks.rbegin()->first;
    std::string out;
    for (const dcgm::ClockEventReason* r : dcgm::DecodeThrottleReasons(mask).reasons) {
      if (r->impact != dcgm::ClockEventImpact::kHarmful) continue;
      if (!out.empty()) out += ",";
      out += r->name;
    }
    return out.empty() ? "none" : out;
  }
  const double share = g.ThrottleShare(dcgm::kHarmfulClockEventBits).value_or(0);
  std::string_view top;
  double top_share = 0;
  for (const dcgm::ClockEventReason& r : dcgm::AllClockEventReasons()) {
    if (r.impact != dcgm::ClockEventImpact::kHarmful) continue;
    const double s = g.ThrottleShare(r.bit).value_or(0);
    // On a tie the higher bit wins: HW slowdown (0x8) comes with every power
    // brake (0x80) and HW thermal (0x40); name the specific cause.
    if (s > 0 && s >= top_share) {
      top_share = s;
      top = r.name;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f%%%s%.*s", share * 100.0, top.empty() ? "" : " ",
                static_cast<int>(top.size()), top.data());
  return buf;
}

nlohmann::json GpuJson(const telemetry::GpuKey& key, const telemetry::GpuState& g) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, st] : g.metrics) {
    auto num = [](double x) { return std::isnan(x) ? nlohmann::json() : nlohmann::json(x); };
    metrics[name] = {{"last", num(st.last)},
                     {"mean", st.count ? num(st.mean()) : nlohmann::json()},
                     {"min", st.count ? num(st.min) : nlohmann::json()},
                     {"max", st.count ? num(st.max) : nlohmann::json()},
                     {"samples", st.count},
                     {"nan_samples", st.nan}};
  }
  nlohmann::json throttle = nlohmann::json::object();
  for (const auto& [mask, n] : g.throttle_masks) throttle[dcgm::FormatMaskHex(mask)] = n;
  return {{"gpu", key.Id()},
          {"uuid", g.uuid},
          {"model", g.model},
          {"pci_bus_id", g.pci_bus_id},
          {"pod", g.pod},
          {"metrics", metrics},
          {"throttle_reasons", throttle}};
}

void PrintJson(const expfmt::ReadReport& report, const telemetry::GpuSnapshot& snapshot,
               std::ostream& out) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& [key, g] : snapshot.gpus()) gpus.push_back(GpuJson(key, g));
  out << nlohmann::json{{"file", report.name},
                        {"format", expfmt::FormatName(report.format)},
                        {"samples", report.stats.samples},
                        {"series", report.stats.series},
                        {"bad_lines", report.bad_lines},
                        {"gpus", gpus}}
             .dump(2)
      << "\n";
}

// The file, its GPUs, series and samples; for a recording, its span.
void PrintTableTitle(const expfmt::ReadReport& report, const telemetry::GpuSnapshot& snapshot,
                     bool recording, std::ostream& out) {
  out << report.name << ": " << snapshot.gpus().size() << " GPU(s), " << report.stats.series
      << " series, " << report.stats.samples << " samples (" << expfmt::FormatName(report.format)
      << ")";
  if (recording) {
    char span[80];
    std::snprintf(
        span, sizeof span, "; a recording of %.1f s: values are means over it",
        static_cast<double>(report.stats.max_timestamp_ms - report.stats.min_timestamp_ms) /
            1000.0);
    out << span;
  }
  out << "\n";
}

void PrintTable(const expfmt::ReadReport& report, const telemetry::GpuSnapshot& snapshot,
                std::ostream& out) {
  const bool recording = report.stats.timestamped_samples > 0;
  PrintTableTitle(report, snapshot, recording, out);
  char line[256];
  std::snprintf(line, sizeof line, "%-22s %-24s", "GPU", "MODEL");
  out << line;
  for (const Column& c : kColumns) {
    std::snprintf(line, sizeof line, " %11s", c.header);
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-22s", recording ? "THROTTLED (harmful)" : "THROTTLE");
  out << line << "  POD\n";
  for (const auto& [key, g] : snapshot.gpus()) {
    std::snprintf(line, sizeof line, "%-22s %-24s", key.Id().c_str(),
                  g.model.empty() ? "-" : g.model.c_str());
    out << line;
    for (const Column& c : kColumns) {
      std::snprintf(line, sizeof line, " %11s", Cell(g, c, recording).c_str());
      out << line;
    }
    std::snprintf(line, sizeof line, "  %-22s", ThrottleCell(g, recording).c_str());
    out << line << "  " << (g.pod.empty() ? "-" : g.pod) << "\n";
  }
  out << "(\"-\" = no data: the source did not report that field)\n";
}

void Run(const SummarizeArgs& args, CommandContext& ctx) {
  telemetry::GpuSnapshot snapshot;
  expfmt::ReadOptions options;
  options.skip_bad_lines = true;
  auto report = expfmt::ReadFile(
      args.file, options,
      [&](const expfmt::SampleView& s, std::string_view, model::MetricType) { snapshot.Add(s); });
  if (!report) {
    ctx.err << "gpucanary summarize: " << report.error().message() << "\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  for (const std::string& m : report->messages) ctx.err << m << "\n";
  if (args.output == "json") {
    PrintJson(*report, snapshot, ctx.out);
  } else {
    PrintTable(*report, snapshot, ctx.out);
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
