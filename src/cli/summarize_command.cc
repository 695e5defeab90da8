// gpucanary summarize FILE: what a dcgm-exporter scrape or recording says about
// each GPU, in a table a person reads in ten seconds.
//
// gpucanary summarize --prometheus URL [--hosts H,..] [--selector SEL] --from T --to T:
// the same over the raw samples a Prometheus-compatible server stored in that range.

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "analysis/live/prometheus_history.h"
#include "cli/command.h"
#include "cli/time_flag.h"
#include "dcgm/throttle.h"
#include "expfmt/reader.h"
#include "net/url.h"
#include "promql/client.h"
#include "telemetry/gpu_snapshot.h"

namespace gpucanary::cli {
namespace {

struct SummarizeArgs {
  std::string file;
  std::string output = "text";
  std::string prometheus;
  std::vector<std::string> hosts;
  std::string selector;
  std::string from;
  std::string to;
};

// At most a day of raw samples is read from a server.
constexpr std::int64_t kMaxRangeS = std::int64_t{24} * 3600;

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

// What the summary was read from: a file's format, or "prometheus" for raw
// samples read from a server.
std::string_view SourceFormat(const expfmt::ReadReport& report, bool server) {
  return server ? std::string_view("prometheus") : expfmt::FormatName(report.format);
}

void PrintJson(const expfmt::ReadReport& report, const telemetry::GpuSnapshot& snapshot,
               bool server, std::ostream& out) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& [key, g] : snapshot.gpus()) gpus.push_back(GpuJson(key, g));
  out << nlohmann::json{{"file", report.name},
                        {"format", SourceFormat(report, server)},
                        {"samples", report.stats.samples},
                        {"series", report.stats.series},
                        {"bad_lines", report.bad_lines},
                        {"gpus", gpus}}
             .dump(2)
      << "\n";
}

// The file, its GPUs, series and samples; for a recording, its span.
void PrintTableTitle(const expfmt::ReadReport& report, const telemetry::GpuSnapshot& snapshot,
                     bool recording, bool server, std::ostream& out) {
  out << report.name << ": " << snapshot.gpus().size() << " GPU(s), " << report.stats.series
      << " series, " << report.stats.samples << " samples (" << SourceFormat(report, server) << ")";
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
                bool server, std::ostream& out) {
  const bool recording = report.stats.timestamped_samples > 0;
  PrintTableTitle(report, snapshot, recording, server, out);
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

// The selector a server is asked with: the hosts under either host label,
// else --selector, else every DCGM series.
std::vector<std::string> ServerSelectors(const SummarizeArgs& args) {
  if (!args.selector.empty()) return {args.selector};
  if (args.hosts.empty()) return {"{__name__=~\"DCGM_.+\"}"};
  return {analysis::HistorySelector("Hostname", args.hosts, {}),
          analysis::HistorySelector("hostname", args.hosts, {})};
}

// Feeds the raw samples of [from, to) into `snapshot`, with a report of what
// was read in the shape a file's has.
Result<expfmt::ReadReport> ReadServer(const SummarizeArgs& args, telemetry::GpuSnapshot& snapshot) {
  if (auto url = net::ParseHttpUrl(args.prometheus); !url) {
    return Error(StatusCode::kInvalidArgument, "--prometheus: " + url.error().message());
  }
  if (!args.file.empty()) {
    return Error(StatusCode::kInvalidArgument,
                 "--prometheus reads the telemetry: give it without a FILE");
  }
  if (!args.hosts.empty() && !args.selector.empty()) {
    return Error(StatusCode::kInvalidArgument, "give --hosts or --selector, not both");
  }
  if (args.from.empty() || args.to.empty()) {
    return Error(StatusCode::kInvalidArgument,
                 "--prometheus: give the range to read, --from T and --to T (at most 24 h)");
  }
  Result<std::int64_t> from = ParseTimeFlag("--from", args.from);
  if (!from) return Error(from.error());
  Result<std::int64_t> to = ParseTimeFlag("--to", args.to);
  if (!to) return Error(to.error());
  if (*to <= *from || *to - *from > kMaxRangeS) {
    return Error(StatusCode::kInvalidArgument,
                 "--from/--to: a range of 1 s to 24 h; got " + std::to_string(*to - *from) + " s");
  }
  expfmt::ReadReport report;
  report.name = args.prometheus;
  std::set<model::Labels> seen;
  for (const std::string& selector : ServerSelectors(args)) {
    Result<promql::QueryResult> r =
        promql::QueryRaw(args.prometheus, selector, *from * 1000, *to * 1000 - 1);
    if (!r) return Error(r.error().code(), selector + ": " + r.error().message());
    for (const promql::Series& series : r->series) {
      if (!seen.insert(series.labels).second) continue;
      expfmt::SampleView view;
      view.name = model::LabelValue(series.labels, "__name__");
      for (const model::Label& l : series.labels) {
        if (l.name != "__name__") view.labels.push_back({l.name, l.value});
      }
      ++report.stats.series;
      for (const promql::Sample& sample : series.samples) {
        view.value = sample.value;
        view.timestamp_ms = sample.t_ms;
        snapshot.Add(view);
        const bool first = report.stats.timestamped_samples++ == 0;
        ++report.stats.samples;
        if (first || sample.t_ms < report.stats.min_timestamp_ms) {
          report.stats.min_timestamp_ms = sample.t_ms;
        }
        if (first || sample.t_ms > report.stats.max_timestamp_ms) {
          report.stats.max_timestamp_ms = sample.t_ms;
        }
      }
    }
  }
  return report;
}

void Run(const SummarizeArgs& args, CommandContext& ctx) {
  telemetry::GpuSnapshot snapshot;
  const bool server = !args.prometheus.empty();
  Result<expfmt::ReadReport> report = Error(StatusCode::kInternal, "no input");
  if (server) {
    report = ReadServer(args, snapshot);
  } else if (args.file.empty() || !args.hosts.empty() || !args.selector.empty() ||
             !args.from.empty() || !args.to.empty()) {
    report = Error(StatusCode::kInvalidArgument,
                   "give a FILE, or --prometheus URL with --from and --to (--hosts, --selector, "
                   "--from and --to go with --prometheus)");
  } else {
    expfmt::ReadOptions options;
    options.skip_bad_lines = true;
    report = expfmt::ReadFile(
        args.file, options,
        [&](const expfmt::SampleView& s, std::string_view, model::MetricType) { snapshot.Add(s); });
  }
  if (!report) {
    ctx.err << "gpucanary summarize: " << report.error().message() << "\n";
    // A server that cannot be reached is not bad input.
    const bool usage = report.error().code() == StatusCode::kInvalidArgument ||
                       report.error().code() == StatusCode::kParseError || !server;
    ctx.exit_code = usage ? kExitBadInput : kExitFail;
    return;
  }
  for (const std::string& m : report->messages) ctx.err << m << "\n";
  if (args.output == "json") {
    PrintJson(*report, snapshot, server, ctx.out);
  } else {
    PrintTable(*report, snapshot, server, ctx.out);
  }
  ctx.exit_code = report->ok() ? kExitOk : kExitBadInput;
}

}  // namespace

void RegisterSummarizeCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<SummarizeArgs>();
  CLI::App* cmd =
      app.add_subcommand("summarize", "Summarise a dcgm-exporter scrape or recording per GPU");
  cmd->add_option("file", args->file, "Scrape or recorded telemetry file ('-' = stdin)");
  cmd->add_option("--prometheus", args->prometheus,
                  "Summarise the raw samples a Prometheus-compatible server holds instead of a "
                  "file (http://host:9090)")
      ->type_name("URL");
  cmd->add_option("--hosts", args->hosts,
                  "With --prometheus: these hosts only (Hostname or hostname label values)")
      ->delimiter(',')
      ->type_name("H,..");
  cmd->add_option("--selector", args->selector,
                  "With --prometheus: the series this selector matches (default: every DCGM_ "
                  "series)")
      ->type_name("SELECTOR");
  cmd->add_option("--from", args->from, "With --prometheus: start (Unix seconds or RFC 3339)")
      ->type_name("T");
  cmd->add_option("--to", args->to, "With --prometheus: end (at most 24 h after --from)")
      ->type_name("T");
  cmd->add_option("--output,-o", args->output, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([args, &ctx] { Run(*args, ctx); });
}

}  // namespace gpucanary::cli
