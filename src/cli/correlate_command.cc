// gpucanary correlate --telemetry FLEET.om --releases RELEASES.jsonl [--from T]
//   [--to T] [--resolution S] [--min-score X] [--output json|text]: docs/contracts.md
// §7, after the fact: the regressions in a fleet's recorded telemetry and the
// releases that explain them (src/analysis/correlate/correlate.h).
// gpucanary correlate --url http://daemon:9464 [--from T] [--to T] ...: the
// same over a running daemon's store and releases (GET /api/v1/correlate).
// gpucanary correlate --prometheus URL --releases FILE [--from T] [--to T]:
// the telemetry read from a Prometheus (raw samples up to 3 h, folded into
// buckets on the server beyond: analysis/correlate/sources.h).
//
// Exit status: 0 (whatever was found), 1 when the daemon or Prometheus refuses
// or cannot be reached, 3 bad input or usage (a message on stderr, nothing on stdout).

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/correlate/correlate.h"
#include "analysis/correlate/sources.h"
#include "analysis/replay/replay.h"
#include "cli/command.h"
#include "cli/daemon_client.h"
#include "core/status.h"
#include "daemon/api_format.h"
#include "model/matcher.h"
#include "net/url.h"
#include "promql/client.h"
#include "releases/release.h"

namespace gpucanary::cli {
namespace {

struct CorrelateArgs {
  ServerFlags server;      // --url: ask a running daemon instead of reading files
  std::string prometheus;  // --prometheus: read the telemetry from a Prometheus
  std::vector<std::string> telemetry;
  std::string releases;
  std::string from;
  std::string to;
  std::int64_t resolution_s = 0;
  double min_score = 0.5;
  std::string output = "json";
};

// Unix seconds (fractions rounded down) or RFC 3339: the daemon's API
// grammar (daemon::ParseApiTime), in whole seconds.
Result<std::int64_t> ParseTime(std::string_view flag, std::string_view text) {
  const std::optional<std::int64_t> ms = daemon::ParseApiTime(text);
  constexpr std::int64_t kMaxMs = std::int64_t{100'000'000'000} * 1000;  // 1e11 s
  if (ms && *ms > -kMaxMs && *ms < kMaxMs) return *ms >= 0 ? *ms / 1000 : -((-*ms + 999) / 1000);
  return Error(StatusCode::kInvalidArgument,
               std::string(flag) + ": expected Unix seconds (1764680060) or RFC 3339 " +
                   "(2026-12-02T13:00:00Z), got '" + std::string(text) + "'" +
                   (ms ? " (milliseconds? give seconds)" : ""));
}

// --url: the daemon's GET /api/v1/correlate over its store and releases;
// prints its report (the "data" of the answer). Exit 1 when the daemon
// refuses or cannot be reached, as `release` does.
int AskDaemon(const CorrelateArgs& args, CommandContext& ctx) {
  std::string query;
  const auto add = [&](std::string_view name, const std::string& value) {
    if (value.empty()) return;
    query += query.empty() ? '?' : '&';
    query += name;
    query += '=';
    query += net::UrlEncode(value);
  };
  add("from", args.from);
  add("to", args.to);
  add("resolution", args.resolution_s > 0 ? std::to_string(args.resolution_s) : "");
  add("min_score", args.min_score != 0.5 ? std::to_string(args.min_score) : "");
  return Answer(
      net::Fetch(Endpoint(args.server, "/api/v1/correlate") + query, Request(args.server, "GET")),
      "correlate", ctx, [&](const std::string& body) {
        const auto doc = nlohmann::ordered_json::parse(body, nullptr, false);
        if (doc.is_discarded() || !doc.contains("data")) {
          ctx.out << body << "\n";
          return;
        }
        ctx.out << doc["data"].dump() << "\n";
      });
}

// --prometheus: at most this much raw telemetry is read in one go.
constexpr std::int64_t kMaxPrometheusRangeS = 86400;
constexpr std::int64_t kDefaultRangeS = 3600;

// Which input: files, a daemon (--url), or a Prometheus and a release file.
Status CheckSources(const CorrelateArgs& args) {
  const bool files = !args.telemetry.empty() || !args.releases.empty();
  if (!args.prometheus.empty()) {
    if (!args.server.url.empty() || !args.telemetry.empty() || args.releases.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "--prometheus reads the telemetry: give it with --releases, without "
                    "--telemetry or --url");
    }
    if (auto url = net::ParseHttpUrl(args.prometheus); !url) {
      return Status(StatusCode::kInvalidArgument, "--prometheus: " + url.error().message());
    }
    return Status::Ok();
  }
  if (!args.server.url.empty()) {
    if (files) {
      return Status(StatusCode::kInvalidArgument,
                    "--url asks a daemon for its own telemetry and releases: give it without "
                    "--telemetry and --releases");
    }
    if (args.output != "json") {
      return Status(StatusCode::kInvalidArgument,
                    "--output: a daemon's answer is printed as json only");
    }
    if (auto url = net::ParseHttpUrl(args.server.url); !url) {
      return Status(StatusCode::kInvalidArgument, "--url: " + url.error().message());
    }
    return Status::Ok();
  }
  if (args.telemetry.empty() || args.releases.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "give --telemetry and --releases (files), --prometheus and --releases, or --url "
                  "(a running daemon)");
  }
  return Status::Ok();
}

Status Run(const CorrelateArgs& args, CommandContext& ctx) {
  if (args.output != "json" && args.output != "text") {
    return Status(StatusCode::kInvalidArgument,
                  "--output: '" + args.output + "' is not one of json, text");
  }
  analysis::correlate::CorrelateOptions options;
  options.resolution_s = args.resolution_s;
  options.min_score = args.min_score;
  if (args.resolution_s < 0 || args.resolution_s > 86400) {
    return Status(StatusCode::kInvalidArgument,
                  "--resolution: expected 1 to 86400 seconds (0: automatic), got " +
                      std::to_string(args.resolution_s));
  }
  if (!(args.min_score >= 0 && args.min_score <= 1)) {
    return Status(StatusCode::kInvalidArgument, "--min-score: expected 0 to 1");
  }
  if (!args.from.empty()) {
    Result<std::int64_t> t = ParseTime("--from", args.from);
    if (!t) return t.error();
    options.from_s = *t;
  }
  if (!args.to.empty()) {
    Result<std::int64_t> t = ParseTime("--to", args.to);
    if (!t) return t.error();
    options.to_s = *t;
  }
  GC_RETURN_IF_ERROR(CheckSources(args));
  if (!args.server.url.empty()) {
    ctx.exit_code = AskDaemon(args, ctx);
    return Status::Ok();
  }
  if (!args.prometheus.empty()) {
    // A range is needed to ask: the hour before --to (or now) by default.
    if (!options.to_s) {
      options.to_s = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    }
    if (!options.from_s) options.from_s = *options.to_s - kDefaultRangeS;
    if (*options.to_s <= *options.from_s ||
        *options.to_s - *options.from_s > kMaxPrometheusRangeS) {
      return Status(StatusCode::kInvalidArgument,
                    "--from/--to: with --prometheus, a range of 1 s to 24 h");
    }
  }
  Result<std::vector<releases::Release>> releases = releases::LoadReleasesJsonl(args.releases);
  if (!releases) return releases.error();
  Result<analysis::correlate::CorrelateReport> report = Error(StatusCode::kInternal, "no input");
  if (!args.prometheus.empty()) {
    // The series the correlation reads, raw up to 3 h, folded into buckets
    // on the server beyond (sources.h); a Prometheus that cannot be reached
    // is exit 1, not bad input.
    Result<analysis::correlate::PrometheusRead> read = analysis::correlate::FetchPrometheusReplay(
        args.prometheus, {}, *options.from_s, *options.to_s, options.resolution_s);
    if (!read) {
      ctx.err << "gpucanary correlate: " << read.error().message() << "\n";
      ctx.exit_code = kExitFail;
      return Status::Ok();
    }
    if (read->resolution_s > 0) options.resolution_s = read->resolution_s;
    report = analysis::correlate::Correlate(*read->replay, *releases, options);
  } else {
    // Recordings in any layout (docs/recorded-telemetry.md).
    std::vector<analysis::ReplayInput> inputs;
    for (const std::string& path : args.telemetry) {
      inputs.push_back({path, analysis::Role::kBaseline, std::nullopt});
    }
    Status st = analysis::ReplayRecordings(inputs, {}, [&](analysis::Replay& replay) -> Status {
      report = analysis::correlate::Correlate(replay, *releases, options);
      return report ? Status::Ok() : report.error();
    });
    if (!st.ok()) return st;
  }
  if (!report) return report.error();
  if (report->gpus == 0) {
    return Status(StatusCode::kInvalidArgument,
                  "no GPU series in the telemetry" +
                      std::string(options.from_s || options.to_s ? " in --from/--to" : "") +
                      " (no sample has a 'gpu' label)");
  }
  ctx.out << (args.output == "json" ? analysis::correlate::CorrelateReportJson(*report)
                                    : analysis::correlate::CorrelateReportText(*report));
  return Status::Ok();
}

}  // namespace

void RegisterCorrelateCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<CorrelateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "correlate", "Find regressions in fleet telemetry and the releases that explain them");
  cmd->footer(
      "Prints DESIGN.md §7 JSON (docs/cli.md, docs/analysis-method.md). Exit status: 0, or 3 for "
      "bad input or usage.");
  cmd->add_option("--telemetry", args->telemetry,
                  "Recorded telemetry of the fleet (.om, .prom, .gz); repeat for several files "
                  "(each host in one file)")
      ->type_name("FILE");
  cmd->add_option("--releases", args->releases,
                  "Release annotations, one JSON object per line (DESIGN.md §5)")
      ->type_name("FILE");
  cmd->add_option("--prometheus", args->prometheus,
                  "Read the telemetry from this Prometheus instead of files: --from..--to, at most "
                  "24 h (default the last hour); raw samples up to 3 h, folded into buckets of "
                  "60 s or more on the server beyond")
      ->type_name("URL");
  AddServerFlags(cmd, args->server, /*required=*/false);
  cmd->add_option("--from", args->from, "Start of the range: Unix seconds or RFC 3339")
      ->type_name("T");
  cmd->add_option("--to", args->to, "End of the range (exclusive): Unix seconds or RFC 3339")
      ->type_name("T");
  cmd->add_option("--resolution", args->resolution_s,
                  "Bucket width in seconds (default 0: 10 s, coarser for long ranges)")
      ->type_name("S");
  cmd->add_option("--min-score", args->min_score,
                  "Name a release a suspect only from this score (0-1, default 0.5)")
      ->type_name("X");
  cmd->add_option("--output,-o", args->output, "Output format: json (default) or text")
      ->type_name("FORMAT");
  cmd->callback([args, &ctx] {
    const Status status = Run(*args, ctx);
    if (!status.ok()) {
      ctx.err << "gpucanary correlate: " << status.message() << "\n";
      ctx.exit_code = kExitBadInput;
    }
  });
}

}  // namespace gpucanary::cli
