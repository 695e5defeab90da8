// gpucanary judge --baseline BASE --canary CANARY [--release-start T] [--policy FILE]
//   [--output json]: the offline judge of docs/contracts.md §6. Replays both recordings
// in time order through the judge engine (src/analysis/judge/judge.h), as if live,
// and prints its report as one JSON object on stdout.
//
// gpucanary judge --prometheus URL --canary-hosts H,.. --baseline-hosts H,..
//   --from T --to T [...]: the same, with both arms read from a Prometheus-compatible
// server (analysis/live/prometheus_arms.h) instead of recordings.
//
// Exit status (docs/contracts.md §6): 0 pass, 1 fail, 2 inconclusive, 3 bad input or
// usage (a message on stderr, nothing on stdout).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/live/prometheus_arms.h"
#include "analysis/policy/policy.h"
#include "analysis/replay/replay.h"
#include "analysis/report/report_json.h"
#include "cli/command.h"
#include "cli/time_flag.h"
#include "core/status.h"
#include "core/time_format.h"
#include "net/url.h"

namespace gpucanary::cli {
namespace {

using analysis::Report;

struct JudgeArgs {
  std::string baseline;
  std::string canary;
  // --prometheus: both arms from a server instead of files.
  std::string prometheus;
  std::vector<std::string> canary_hosts;
  std::vector<std::string> baseline_hosts;
  std::vector<std::string> canary_selectors;
  std::vector<std::string> baseline_selectors;
  std::string from;
  std::string to;
  std::string release_start;  // "" if not given
  std::string policy;         // "" = the built-in default
  std::string output = "json";
};

std::string FormatSeconds(std::int64_t seconds) {
  return std::to_string(seconds) + " (" + FormatUtcMillis(seconds * 1000) + ")";
}

// The same recording given as both arms (also through a link or another path)
// would compare a fleet with itself.
bool SameFile(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::equivalent(a, b, error)) return true;
  const fs::path ca = fs::weakly_canonical(a, error);
  if (error) return a == b;
  const fs::path cb = fs::weakly_canonical(b, error);
  if (error) return a == b;
  return ca == cb;
}

// What each arm was read from, for messages: its file, or its hosts and
// selectors on the server.
std::string ArmSource(const JudgeArgs& args, analysis::Role role) {
  const bool canary = role == analysis::Role::kCanary;
  if (args.prometheus.empty()) return canary ? args.canary : args.baseline;
  std::string out;
  for (const std::string& h : canary ? args.canary_hosts : args.baseline_hosts) {
    out += (out.empty() ? "" : ",") + h;
  }
  for (const std::string& sel : canary ? args.canary_selectors : args.baseline_selectors) {
    out += (out.empty() ? "" : " ") + sel;
  }
  return std::string(analysis::RoleName(role)) + " " + out + " in " + args.prometheus +
         " between --from " + args.from + " and --to " + args.to;
}

// Checks that the replay saw GPUs in both arms and that the data reaches
// past the release start.
Status CheckCoverage(const analysis::Replay& replay, const JudgeArgs& args,
                     std::optional<std::int64_t> release_start, std::int64_t last_tick) {
  bool baseline_gpu = false;
  bool canary_gpu = false;
  for (const analysis::GpuInfo& g : replay.gpus()) {
    (g.role == analysis::Role::kCanary ? canary_gpu : baseline_gpu) = true;
  }
  for (const auto& [seen, role] : {std::pair{baseline_gpu, analysis::Role::kBaseline},
                                   std::pair{canary_gpu, analysis::Role::kCanary}}) {
    if (!seen) {
      return Status(StatusCode::kInvalidArgument,
                    "no GPU series in " + ArmSource(args, role) + " (no sample has a 'gpu' label)");
    }
  }
  // Nothing after the release: the judge would only ever see history. Almost
  // always a wrong flag (milliseconds, another day), so say so instead of
  // printing an empty "inconclusive".
  if (release_start && *release_start > last_tick) {
    return Status(StatusCode::kInvalidArgument,
                  "--release-start " + FormatSeconds(*release_start) +
                      " is after the last sample, " + FormatSeconds(last_tick) +
                      ": the data holds nothing of the release" +
                      (*release_start > 100'000'000'000 ? " (milliseconds? give seconds)" : ""));
  }
  return Status::Ok();
}

// Both arms from the server; the range was checked by Run.
Result<std::unique_ptr<analysis::Replay>> FetchArms(const JudgeArgs& args,
                                                    const analysis::Policy& policy,
                                                    std::int64_t from_s, std::int64_t to_s) {
  std::vector<analysis::PrometheusArm> arms = {
      {analysis::Role::kBaseline, args.baseline_hosts, args.baseline_selectors},
      {analysis::Role::kCanary, args.canary_hosts, args.canary_selectors}};
  return analysis::FetchPrometheusArms({args.prometheus, {}}, arms,
                                       analysis::JudgeInputNames(policy), from_s, to_s);
}

Result<Report> JudgeReplay(analysis::Replay& replay, const JudgeArgs& args,
                           const analysis::Policy& policy,
                           std::optional<std::int64_t> release_start) {
  analysis::Judge judge({.policy = policy, .release_start_s = release_start});
  analysis::Tick tick;
  std::optional<std::int64_t> first_tick;
  std::int64_t last_tick = 0;
  for (;;) {
    Result<bool> more = replay.Next(tick);
    if (!more) return Error(more.error());
    if (!*more) break;
    if (!first_tick) first_tick = tick.time_s;
    last_tick = tick.time_s;
    judge.Add(tick, analysis::Catalog::Of(replay));
  }
  GC_RETURN_IF_ERROR(CheckCoverage(replay, args, release_start, last_tick));
  Report report = judge.Finish();
  // A release before the recording is normal (the recording started late):
  // judge every sample, and say what is lost.
  if (release_start && first_tick && *release_start <= *first_tick) {
    report.notes.push_back("--release-start " + FormatSeconds(*release_start) +
                           " is not after the first sample, " + FormatSeconds(*first_tick) +
                           ": the canary has no history, so a node that was already bad cannot "
                           "be told from a bad release by its history");
  }
  return report;
}

// Both recordings, in any layout (docs/recorded-telemetry.md): the judge
// starts afresh if a recording has to be re-read through the sort.
Result<Report> JudgeRecordings(const JudgeArgs& args, const analysis::Policy& policy,
                               std::optional<std::int64_t> release_start) {
  std::optional<Result<Report>> judged;
  Status st = analysis::ReplayRecordings({{args.baseline, analysis::Role::kBaseline, std::nullopt},
                                          {args.canary, analysis::Role::kCanary, std::nullopt}},
                                         {}, [&](analysis::Replay& replay) -> Status {
                                           judged =
                                               JudgeReplay(replay, args, policy, release_start);
                                           return *judged ? Status::Ok() : judged->error();
                                         });
  if (!st.ok()) return Error(std::move(st));
  return std::move(*judged);
}

int ExitCode(analysis::Verdict verdict) {
  switch (verdict) {
    case analysis::Verdict::kPass:
      return kExitOk;
    case analysis::Verdict::kFail:
      return kExitFail;
    case analysis::Verdict::kInconclusive:
      return kExitInconclusive;
  }
  return kExitInconclusive;
}

// Which of the two ways in was asked for, and that it was asked for whole.
Status CheckSources(const JudgeArgs& args) {
  const bool files = !args.baseline.empty() || !args.canary.empty();
  const bool server_flags = !args.canary_hosts.empty() || !args.baseline_hosts.empty() ||
                            !args.canary_selectors.empty() || !args.baseline_selectors.empty() ||
                            !args.from.empty() || !args.to.empty();
  if (args.prometheus.empty()) {
    if (server_flags) {
      return Status(StatusCode::kInvalidArgument,
                    "--canary-hosts, --baseline-hosts, --*-selector, --from and --to go with "
                    "--prometheus URL");
    }
    if (args.baseline.empty() || args.canary.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "give --baseline FILE and --canary FILE (recordings), or --prometheus URL "
                    "with --canary-hosts/--canary-selector, --baseline-hosts/--baseline-selector, "
                    "--from and --to");
    }
    if (SameFile(args.baseline, args.canary)) {
      return Status(StatusCode::kInvalidArgument,
                    "--baseline and --canary are the same file '" + args.canary + "'");
    }
    return Status::Ok();
  }
  if (files) {
    return Status(StatusCode::kInvalidArgument,
                  "--prometheus reads both arms: give it without --baseline and --canary files");
  }
  if (auto url = net::ParseHttpUrl(args.prometheus); !url) {
    return Status(StatusCode::kInvalidArgument, "--prometheus: " + url.error().message());
  }
  if (args.canary_hosts.empty() && args.canary_selectors.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "--prometheus: give the canary's --canary-hosts or --canary-selector");
  }
  if (args.baseline_hosts.empty() && args.baseline_selectors.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "--prometheus: give the baseline's --baseline-hosts or --baseline-selector");
  }
  for (const std::string& h : args.canary_hosts) {
    if (std::find(args.baseline_hosts.begin(), args.baseline_hosts.end(), h) !=
        args.baseline_hosts.end()) {
      return Status(StatusCode::kInvalidArgument,
                    "host '" + h + "' is in both --canary-hosts and --baseline-hosts");
    }
  }
  if (args.from.empty() || args.to.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "--prometheus: give the range to read, --from T and --to T (at most 24 h)");
  }
  return Status::Ok();
}

Status Run(const JudgeArgs& args, CommandContext& ctx) {
  if (args.output != "json") {
    return Status(StatusCode::kInvalidArgument,
                  "--output: '" + args.output + "' is not supported (only json, for now)");
  }
  GC_RETURN_IF_ERROR(CheckSources(args));
  std::optional<std::int64_t> release_start;
  if (!args.release_start.empty()) {
    Result<std::int64_t> t = ParseTimeFlag("--release-start", args.release_start);
    if (!t) return t.error();
    release_start = *t;
  }
  Result<analysis::Policy> loaded = analysis::DefaultPolicy();
  if (!args.policy.empty()) loaded = analysis::LoadPolicy(args.policy);
  if (!loaded) return loaded.error();
  Result<Report> report = Error(StatusCode::kInternal, "no input");
  if (args.prometheus.empty()) {
    report = JudgeRecordings(args, *loaded, release_start);
  } else {
    Result<std::int64_t> from = ParseTimeFlag("--from", args.from);
    if (!from) return from.error();
    Result<std::int64_t> to = ParseTimeFlag("--to", args.to);
    if (!to) return to.error();
    if (*to <= *from || *to - *from > analysis::kMaxPrometheusRangeS) {
      return Status(StatusCode::kInvalidArgument, "--from/--to: a range of 1 s to 24 h; got " +
                                                      std::to_string(*to - *from) + " s");
    }
    Result<std::unique_ptr<analysis::Replay>> replay = FetchArms(args, *loaded, *from, *to);
    // A server that cannot be reached or refuses the query leaves no evidence
    // either way: inconclusive (exit 2), not bad input.
    if (!replay && replay.error().code() != StatusCode::kInvalidArgument) {
      ctx.err << "gpucanary judge: " << replay.error().message() << "\n";
      ctx.exit_code = kExitInconclusive;
      return Status::Ok();
    }
    if (!replay) return replay.error();
    report = JudgeReplay(**replay, args, *loaded, release_start);
  }
  if (!report) return report.error();
  ctx.out << analysis::ReportToJson(*report) << "\n";
  ctx.exit_code = ExitCode(report->verdict);
  return Status::Ok();
}

}  // namespace

void RegisterJudgeCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<JudgeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "judge", "Judge a canary release from recorded telemetry: pass, fail or inconclusive");
  cmd->footer(
      "Prints one JSON object (DESIGN.md §6, docs/cli.md). Exit status: 0 pass, 1 fail, "
      "2 inconclusive, 3 bad input or usage.");
  cmd->add_option("--baseline", args->baseline,
                  "Recording of the GPUs running the old release (.om, .prom, .gz)")
      ->type_name("FILE");
  cmd->add_option("--canary", args->canary,
                  "Recording of the canary GPUs, same wall-clock period as the baseline")
      ->type_name("FILE");
  cmd->add_option("--prometheus", args->prometheus,
                  "Read both arms from this Prometheus-compatible server instead of files "
                  "(http://host:9090)")
      ->type_name("URL");
  cmd->add_option("--canary-hosts", args->canary_hosts,
                  "With --prometheus: the canary's hosts (Hostname or hostname label values)")
      ->delimiter(',')
      ->type_name("H,..");
  cmd->add_option("--baseline-hosts", args->baseline_hosts,
                  "With --prometheus: the baseline's hosts")
      ->delimiter(',')
      ->type_name("H,..");
  cmd->add_option("--canary-selector", args->canary_selectors,
                  "With --prometheus: also the series this selector matches, for the canary "
                  "(repeatable; e.g. service series without a host label)")
      ->type_name("SELECTOR");
  cmd->add_option("--baseline-selector", args->baseline_selectors,
                  "With --prometheus: also the series this selector matches, for the baseline")
      ->type_name("SELECTOR");
  cmd->add_option("--from", args->from,
                  "With --prometheus: start of the range read (Unix seconds or RFC 3339); "
                  "include the canary's history before --release-start")
      ->type_name("T");
  cmd->add_option("--to", args->to, "With --prometheus: end of the range read (at most 24 h on)")
      ->type_name("T");
  cmd->add_option("--release-start", args->release_start,
                  "When the release started on the canary: Unix seconds (1764680060, fractions "
                  "ok) or RFC 3339 (2025-12-02T13:00:00Z). Canary samples before it are the "
                  "canary GPUs' own history. Default: none, every sample is judged")
      ->type_name("T");
  cmd->add_option("--policy", args->policy,
                  "Judge policy YAML (default: the built-in policies/default.yaml)")
      ->type_name("FILE");
  cmd->add_option("--output,-o", args->output, "Output format: json (the only one for now)")
      ->type_name("FORMAT");
  cmd->callback([args, &ctx] {
    const Status status = Run(*args, ctx);
    if (!status.ok()) {
      ctx.err << "gpucanary judge: " << status.message() << "\n";
      ctx.exit_code = kExitBadInput;
    }
  });
}

}  // namespace gpucanary::cli
