// gpucanary release announce --url URL --id ID [--started-at T] [--service S] ...
//   Builds a release annotation (docs/contracts.md §5) from flags and/or --file, checks
//   it as the daemon would, POSTs it to URL/api/v1/releases and prints the
//   daemon's answer.
// gpucanary release list --url URL [--service S] [--from T] [--to T] [--limit N]
//   Prints the daemon's releases, newest first, one JSON object per line (a
//   JSONL file `gpucanary correlate --releases` reads).
//
// The token comes from --token or the environment variable GPUCANARY_TOKEN.
// Exit status: 0 when the daemon accepted (2xx), 1 when it refused or could
// not be reached after --retries (its answer on stderr), 3 for bad flags or a bad annotation
// (the project's usage status, docs/cli.md), nothing sent.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "cli/daemon_client.h"
#include "config/yaml_fields.h"
#include "core/clock.h"
#include "daemon/api_format.h"
#include "net/http_client.h"
#include "net/url.h"
#include "releases/release.h"

namespace gpucanary::cli {
namespace {

using OrderedJson = nlohmann::ordered_json;

struct AnnounceFlags {
  ServerFlags server;
  std::string id;
  std::string started_at;
  // The string fields of docs/contracts.md §5, by name: --service, --git-sha, ...
  std::vector<std::pair<std::string, std::string>> strings;
  std::vector<std::string> targets;
  std::string selector;
  std::vector<std::string> fields;  // key=value
  std::string file;
  int retries = 3;
};

struct ListFlags {
  ServerFlags server;
  std::string service;
  std::string from;
  std::string to;
  int limit = 0;
};

// "-" reads standard input.
Result<std::string> ReadInput(const std::string& path) {
  if (path != "-") return config::ReadConfigFile(path);
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

// The annotation in --file, as a JSON object in its own field order.
Result<OrderedJson> ReadFileObject(const std::string& path) {
  auto text = ReadInput(path);
  if (!text) return Error(text.error());
  const std::string name = path == "-" ? "<stdin>" : path;
  try {
    OrderedJson doc = OrderedJson::parse(*text);
    if (!doc.is_object()) {
      return Error(StatusCode::kParseError, name + ": expected one JSON object");
    }
    return doc;
  } catch (const OrderedJson::exception&) {
    // ParseRelease says where, with line and column.
    auto checked = releases::ParseRelease(*text);
    return Error(StatusCode::kParseError,
                 name + ":" + (checked ? std::string("1:1: bad JSON") : checked.error().message()));
  }
}

// --started-at: Unix seconds or RFC 3339, as a JSON number of seconds (whole
// seconds as an integer).
Result<OrderedJson> StartedAt(const std::string& text) {
  std::int64_t ms = 0;
  if (text.empty()) {
    ms = RealClock().NowMs();
  } else if (auto t = daemon::ParseApiTime(text)) {
    ms = *t;
  } else {
    return Error(StatusCode::kInvalidArgument,
                 "--started-at: expected Unix seconds (1764680000) or RFC 3339 "
                 "(2025-12-02T13:00:00Z), got '" +
                     text + "'");
  }
  if (ms % 1000 == 0) return OrderedJson(ms / 1000);
  return OrderedJson(static_cast<double>(ms) / 1000.0);
}

Result<std::string> BuildAnnotation(const AnnounceFlags& flags) {
  OrderedJson doc = OrderedJson::object();
  if (!flags.file.empty()) {
    auto from_file = ReadFileObject(flags.file);
    if (!from_file) return Error(from_file.error());
    doc = std::move(*from_file);
  }
  if (!flags.id.empty()) doc["id"] = flags.id;
  for (const auto& [name, value] : flags.strings) {
    if (!value.empty()) doc[name] = value;
  }
  if (!flags.started_at.empty() || !doc.contains("started_at")) {
    auto t = StartedAt(flags.started_at);
    if (!t) return Error(t.error());
    doc["started_at"] = *t;
  }
  if (!flags.targets.empty()) doc["targets"] = flags.targets;
  if (!flags.selector.empty()) doc["selector"] = flags.selector;
  for (const std::string& field : flags.fields) {
    const std::size_t eq = field.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error(StatusCode::kInvalidArgument,
                   "--field: expected key=value, got '" + field + "'");
    }
    doc[field.substr(0, eq)] = field.substr(eq + 1);
  }
  if (!doc.contains("id")) {
    return Error(StatusCode::kInvalidArgument, "--id is required (or an \"id\" in --file)");
  }
  std::string text = doc.dump();
  if (auto checked = releases::ParseRelease(text); !checked) return Error(checked.error());
  return text;
}

constexpr std::string_view kReleasesPath = "/api/v1/releases";

int Announce(const AnnounceFlags& flags, CommandContext& ctx) {
  if (auto url = net::ParseHttpUrl(flags.server.url); !url) {
    ctx.err << "gpucanary release announce: --url: " << url.error().message() << "\n";
    return kExitBadInput;
  }
  auto annotation = BuildAnnotation(flags);
  if (!annotation) {
    ctx.err << "gpucanary release announce: " << annotation.error().message() << "\n";
    return kExitBadInput;
  }
  net::FetchOptions o = Request(flags.server, "POST");
  o.body = std::move(*annotation);
  o.content_type = "application/json";
  // The same body every time (started_at included), so a retry that reaches
  // a daemon which had stored the first attempt answers 200, not 409.
  auto response = net::Fetch(Endpoint(flags.server, kReleasesPath), o);
  for (int attempt = 1, delay_s = 1; attempt <= flags.retries && Retryable(response);
       ++attempt, delay_s *= 2) {
    ctx.err << "gpucanary release announce: "
            << (response ? "HTTP " + std::to_string(response->status) : response.error().message())
            << "; retrying in " << delay_s << " s\n";
    std::this_thread::sleep_for(std::chrono::seconds(delay_s));
    response = net::Fetch(Endpoint(flags.server, kReleasesPath), o);
  }
  return Answer(response, "release announce", ctx,
                [&](const std::string& body) { ctx.out << body << "\n"; });
}

int List(const ListFlags& flags, CommandContext& ctx) {
  if (auto url = net::ParseHttpUrl(flags.server.url); !url) {
    ctx.err << "gpucanary release list: --url: " << url.error().message() << "\n";
    return kExitBadInput;
  }
  std::string query;
  auto add = [&](std::string_view name, const std::string& value) {
    if (value.empty()) return;
    query += query.empty() ? '?' : '&';
    query += name;
    query += '=';
    query += net::UrlEncode(value);
  };
  add("service", flags.service);
  add("from", flags.from);
  add("to", flags.to);
  add("limit", flags.limit > 0 ? std::to_string(flags.limit) : "");
  return Answer(
      net::Fetch(Endpoint(flags.server, kReleasesPath) + query, Request(flags.server, "GET")),
      "release list", ctx, [&](const std::string& body) {
        // ordered_json: each annotation keeps the sender's field order.
        const auto doc = OrderedJson::parse(body, nullptr, false);
        if (doc.is_discarded() || !doc.contains("data") || !doc["data"].is_array()) {
          ctx.out << body << "\n";
          return;
        }
        for (const auto& release : doc["data"]) ctx.out << release.dump() << "\n";
      });
}

void RegisterAnnounce(CLI::App* release, CommandContext& ctx) {
  auto flags = std::make_shared<AnnounceFlags>();
  CLI::App* cmd = release->add_subcommand(
      "announce", "Tell the daemon a release started (POST /api/v1/releases)");
  AddServerFlags(cmd, flags->server);
  cmd->add_option("--id", flags->id, "Release id (required unless --file has one)");
  cmd->add_option("--started-at", flags->started_at,
                  "When it started: Unix seconds or RFC 3339 (default: now)");
  static constexpr std::pair<const char*, const char*> kStringFlags[] = {
      {"--service", "service"},
      {"--version", "version"},
      {"--git-sha", "git_sha"},
      {"--model", "model"},
      {"--checkpoint", "checkpoint"},
      {"--quantization", "quantization"},
      {"--cuda-version", "cuda_version"},
      {"--framework", "framework"},
      {"--framework-version", "framework_version"},
      {"--environment", "environment"},
      {"--previous", "previous"},
  };
  flags->strings.reserve(std::size(kStringFlags));
  for (const auto& [flag, field] : kStringFlags) {
    flags->strings.emplace_back(field, "");
    cmd->add_option(flag, flags->strings.back().second,
                    std::string("The annotation's \"") + field + "\"");
  }
  cmd->add_option("--target", flags->targets, "A hostname running the release (repeatable)");
  cmd->add_option("--selector", flags->selector,
                  "Label matchers of the GPUs running it: {Hostname=~\"node-[45]\"}");
  cmd->add_option("--field", flags->fields, "Any other field, as a string: key=value (repeatable)");
  cmd->add_option("--file", flags->file,
                  "Start from this annotation (one JSON object; - for stdin); flags override it");
  cmd->add_option("--retries", flags->retries,
                  "Retries when the daemon does not answer or answers 408, 429 or 5xx, after 1 s, "
                  "2 s, 4 s... (default 3)")
      ->check(CLI::Range(0, 10));
  cmd->callback([flags, &ctx] { ctx.exit_code = Announce(*flags, ctx); });
}

void RegisterList(CLI::App* release, CommandContext& ctx) {
  auto flags = std::make_shared<ListFlags>();
  CLI::App* cmd =
      release->add_subcommand("list", "Print the daemon's releases, newest first, as JSONL");
  AddServerFlags(cmd, flags->server);
  cmd->add_option("--service", flags->service, "Only this service's releases");
  cmd->add_option("--from", flags->from, "Started at or after: Unix seconds or RFC 3339");
  cmd->add_option("--to", flags->to, "Started at or before: Unix seconds or RFC 3339");
  cmd->add_option("--limit", flags->limit, "At most this many (default 1000)")
      ->check(CLI::Range(1, 10000));
  cmd->callback([flags, &ctx] { ctx.exit_code = List(*flags, ctx); });
}

}  // namespace

void RegisterReleaseCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* release =
      app.add_subcommand("release", "Announce releases to a running gpucanary serve, list them");
  release->require_subcommand(1);
  RegisterAnnounce(release, ctx);
  RegisterList(release, ctx);
}

}  // namespace gpucanary::cli
