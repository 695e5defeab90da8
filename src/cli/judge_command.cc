// gpucanary judge --baseline BASE --canary CANARY [--release-start T] [--policy FILE]
//   [--output json]: the offline judge of docs/contracts.md §6. Replays both recordings
// in time order through the judge engine (src/analysis/judge/judge.h), as if live,
// and prints its report as one JSON object on stdout.
//
// Exit status (docs/contracts.md §6): 0 pass, 1 fail, 2 inconclusive, 3 bad input or
// usage (a message on stderr, nothing on stdout).

#include <CLI/CLI.hpp>
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

#include "analysis/judge/judge.h"
#include "analysis/policy/policy.h"
#include "analysis/replay/replay.h"
#include "analysis/report/report_json.h"
#include "cli/command.h"
#include "core/status.h"
#include "core/time_format.h"

namespace gpucanary::cli {
namespace {

using analysis::Report;

struct JudgeArgs {
  std::string baseline;
  std::string canary;
  std::string release_start;  // "" if not given
  std::string policy;         // "" = the built-in default
  std::string output = "json";
};

std::string FormatSeconds(std::int64_t seconds) {
  return std::to_string(seconds) + " (" + FormatUtcMillis(seconds * 1000) + ")";
}

// --release-start: Unix seconds (a fraction is allowed) or RFC 3339. The judge
// works in whole 1 s ticks; a fractional start is rounded down, so the tick
// the release starts in is judged with the release rather than counted as the
// canary's history (history must not hold the release's own samples).
Result<std::int64_t> ParseReleaseStart(std::string_view text) {
  double seconds = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, seconds);
  if (ec == std::errc() && ptr == end && std::isfinite(seconds) && std::abs(seconds) < 1e15) {
    return static_cast<std::int64_t>(std::floor(seconds));
  }
  if (const std::optional<std::int64_t> ms = ParseRfc3339Millis(text)) {
    return *ms >= 0 ? *ms / 1000 : -((-*ms + 999) / 1000);
  }
  return Error(StatusCode::kInvalidArgument,
               "--release-start: expected Unix seconds (1764680060, 1764680060.5) or an RFC 3339 "
               "time (2025-12-02T13:00:00Z), got '" +
                   std::string(text) + "'");
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

// Checks that the replay saw GPUs in both arms and that the recordings reach
// past the release start.
Status CheckCoverage(const analysis::Replay& replay, const JudgeArgs& args,
                     std::optional<std::int64_t> release_start, std::int64_t last_tick) {
  bool baseline_gpu = false;
  bool canary_gpu = false;
  for (const analysis::GpuInfo& g : replay.gpus()) {
    (g.role == analysis::Role::kCanary ? canary_gpu : baseline_gpu) = true;
  }
  for (const auto& [seen, file] :
       {std::pair{baseline_gpu, &args.baseline}, std::pair{canary_gpu, &args.canary}}) {
    if (!seen) {
      return Status(StatusCode::kInvalidArgument,
                    "no GPU series in " + *file + " (no sample has a 'gpu' label)");
    }
  }
  // Nothing after the release: the judge would only ever see history. Almost
  // always a wrong flag (milliseconds, another day), so say so instead of
  // printing an empty "inconclusive".
  if (release_start && *release_start > last_tick) {
    return Status(StatusCode::kInvalidArgument,
                  "--release-start " + FormatSeconds(*release_start) +
                      " is after the last sample, " + FormatSeconds(last_tick) +
                      ": the recordings hold nothing of the release" +
                      (*release_start > 100'000'000'000 ? " (milliseconds? give seconds)" : ""));
  }
  return Status::Ok();
}

Result<Report> JudgeRecordings(const JudgeArgs& args, const analysis::Policy& policy,
                               std::optional<std::int64_t> release_start) {
  // Any layout (docs/recorded-telemetry.md): the judge starts afresh if a
  // recording has to be re-read through the sort.
  std::optional<Report> judged;
  std::optional<std::int64_t> first_tick;
  Status st = analysis::ReplayRecordings(
      {{args.baseline, analysis::Role::kBaseline, std::nullopt},
       {args.canary, analysis::Role::kCanary, std::nullopt}},
      {}, [&](analysis::Replay& replay) -> Status {
        analysis::Judge judge({.policy = policy, .release_start_s = release_start});
        analysis::Tick tick;
        first_tick.reset();
        std::int64_t last_tick = 0;
        for (;;) {
          Result<bool> more = replay.Next(tick);
          if (!more) return more.error();
          if (!*more) break;
          if (!first_tick) first_tick = tick.time_s;
          last_tick = tick.time_s;
          judge.Add(tick, analysis::Catalog::Of(replay));
        }
        GC_RETURN_IF_ERROR(CheckCoverage(replay, args, release_start, last_tick));
        judged = judge.Finish();
        return Status::Ok();
      });
  if (!st.ok()) return Error(std::move(st));
  Report report = std::move(*judged);
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

Status Run(const JudgeArgs& args, CommandContext& ctx) {
  if (args.output != "json") {
    return Status(StatusCode::kInvalidArgument,
                  "--output: '" + args.output + "' is not supported (only json, for now)");
  }
  std::optional<std::int64_t> release_start;
  if (!args.release_start.empty()) {
    Result<std::int64_t> t = ParseReleaseStart(args.release_start);
    if (!t) return t.error();
    release_start = *t;
  }
  if (SameFile(args.baseline, args.canary)) {
    return Status(StatusCode::kInvalidArgument,
                  "--baseline and --canary are the same file '" + args.canary + "'");
  }
  Result<analysis::Policy> loaded = analysis::DefaultPolicy();
  if (!args.policy.empty()) loaded = analysis::LoadPolicy(args.policy);
  if (!loaded) return loaded.error();
  Result<Report> report = JudgeRecordings(args, *loaded, release_start);
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
      ->type_name("FILE")
      ->required();
  cmd->add_option("--canary", args->canary,
                  "Recording of the canary GPUs, same wall-clock period as the baseline")
      ->type_name("FILE")
      ->required();
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
