#include "daemon/serve_config.h"

#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include "analysis/policy/policy.h"
#include "canary/config.h"
#include "config/http_headers.h"
#include "config/tls_config.h"
#include "config/yaml_fields.h"
#include "daemon/remote_write_out_config.h"
#include "net/url.h"

namespace gpucanary::daemon {
namespace {

using config::Fields;
using config::Reporter;

constexpr std::array<std::string_view, 15> kTopKeys = {
    "listen", "tls_server_config", "storage", "remote_write", "remote_write_out",
    "global", "scrape_configs",    "auth",    "releases",     "publish",
    "canary", "actions",           "nvml",    "http",         "query"};
constexpr std::array<std::string_view, 4> kHttpKeys = {
    "max_connections", "max_connections_per_client", "idle_timeout", "handler_threads"};
constexpr std::array<std::string_view, 2> kQueryKeys = {"max_samples", "max_concurrency"};
constexpr std::array<std::string_view, 8> kNvmlKeys = {
    "enabled", "library", "interval", "hostname", "hostname_label", "gpm", "xid_events", "job"};
constexpr std::array<std::string_view, 4> kStorageKeys = {"path", "retention", "retention_size",
                                                          "max_series"};
constexpr std::array<std::string_view, 8> kRemoteWriteKeys = {"enabled",
                                                              "max_body",
                                                              "creation_grace_period",
                                                              "past_grace_period",
                                                              "label_limit",
                                                              "label_name_length_limit",
                                                              "label_value_length_limit",
                                                              "max_series_per_tenant"};
constexpr std::array<std::string_view, 5> kAuthKeys = {"token", "token_file", "tokens",
                                                       "protect_reads", "protect_remote_write"};
constexpr std::array<std::string_view, 4> kTokenKeys = {"name", "scope", "token", "token_file"};
constexpr std::array<std::string_view, 2> kReleasesKeys = {"max_body", "info_window"};
constexpr std::array<std::string_view, 4> kPublishKeys = {"grafana", "otlp", "timeout", "attempts"};
constexpr std::array<std::string_view, 6> kGrafanaKeys = {"url",  "token",         "token_file",
                                                          "tags", "dashboard_uid", "tls_config"};
constexpr std::array<std::string_view, 3> kOtlpKeys = {"endpoint", "headers", "tls_config"};
// The OTLP client sets these itself.
constexpr std::array<std::string_view, 3> kOtlpReservedHeaders = {"content-type", "content-length",
                                                                  "host"};

Status ReadListen(const Reporter& r, const YAML::Node& node, ServeConfig& out) {
  auto text = config::ReadString(r, node, "listen");
  if (!text) return text.error();
  const std::size_t colon = text->rfind(':');
  std::uint32_t port = 0;
  const char* begin = text->data() + colon + 1;
  const char* end = text->data() + text->size();
  auto [p, ec] = colon == std::string::npos
                     ? std::from_chars_result{begin, std::errc::invalid_argument}
                     : std::from_chars(begin, end, port);
  if (colon == std::string::npos || colon == 0 || ec != std::errc() || p != end || port > 65535) {
    return r.Fail(node, "listen", "expected host:port, got '" + *text + "'");
  }
  out.listen_host = text->substr(0, colon);
  if (out.listen_host.size() > 2 && out.listen_host.front() == '[') {
    out.listen_host = out.listen_host.substr(1, out.listen_host.size() - 2);
  }
  out.listen_port = static_cast<std::uint16_t>(port);
  return Status::Ok();
}

Status ReadStorage(const Reporter& r, const YAML::Node& node, const std::string& base,
                   ServeConfig& out) {
  auto fields = Fields::Read(r, node, "storage", kStorageKeys);
  if (!fields) return fields.error();
  if (const YAML::Node* n = fields->Find("path")) {
    auto path = config::ReadString(r, *n, "storage.path");
    if (!path) return path.error();
    std::filesystem::path p(*path);
    out.data_dir =
        p.is_absolute() || base.empty() ? p.string() : (std::filesystem::path(base) / p).string();
  }
  if (const YAML::Node* n = fields->Find("retention")) {
    auto text = config::ReadString(r, *n, "storage.retention");
    if (!text) return text.error();
    std::int64_t ms = 0;
    if (!scrape::ParsePrometheusDuration(*text, &ms)) {
      return r.Fail(*n, "storage.retention", "bad duration '" + *text + "' (e.g. 15d, 12h)");
    }
    out.retention_ms = ms;
    // Older samples would only wait for the next retention pass: remote_write
    // refuses them unless remote_write.past_grace_period says otherwise.
    out.remote_write_limits.past_grace_period_ms = ms;
  }
  if (const YAML::Node* n = fields->Find("retention_size")) {
    auto text = config::ReadString(r, *n, "storage.retention_size");
    if (!text) return text.error();
    if (!ParseByteSize(*text, &out.retention_bytes)) {
      return r.Fail(*n, "storage.retention_size", "bad size '" + *text + "' (e.g. 50GB, 512MiB)");
    }
  }
  if (const YAML::Node* n = fields->Find("max_series")) {
    auto v = config::ReadInt(r, *n, "storage.max_series", 1, 1'000'000'000);
    if (!v) return v.error();
    out.max_series = static_cast<std::size_t>(*v);
  }
  return Status::Ok();
}

// remote_write's time window and label limits (remote/receiver.h).
Status ReadRemoteWriteLimits(const Reporter& r, const Fields& fields, RemoteWriteLimits& out) {
  for (const auto& [key, ms] : {std::pair{"creation_grace_period", &out.creation_grace_period_ms},
                                std::pair{"past_grace_period", &out.past_grace_period_ms}}) {
    const YAML::Node* n = fields.Find(key);
    if (n == nullptr) continue;
    const std::string field = config::Child("remote_write", key);
    auto text = config::ReadString(r, *n, field);
    if (!text) return text.error();
    std::int64_t v = 0;
    const bool past = ms == &out.past_grace_period_ms;
    if (!scrape::ParsePrometheusDuration(*text, &v) || (!past && v == 0)) {
      return r.Fail(*n, field,
                    "bad duration '" + *text + "' (e.g. 10m, 1h" + (past ? "; 0: no bound)" : ")"));
    }
    *ms = v;
  }
  for (const auto& [key, count] :
       {std::pair{"label_limit", &out.label_limit},
        std::pair{"label_name_length_limit", &out.label_name_length_limit},
        std::pair{"label_value_length_limit", &out.label_value_length_limit},
        std::pair{"max_series_per_tenant", &out.max_series_per_tenant}}) {
    const YAML::Node* n = fields.Find(key);
    if (n == nullptr) continue;
    auto v = config::ReadInt(r, *n, config::Child("remote_write", key), 0, INT32_MAX);
    if (!v) return v.error();
    *count = static_cast<std::size_t>(*v);
  }
  return Status::Ok();
}

Status ReadRemoteWrite(const Reporter& r, const YAML::Node& node, ServeConfig& out) {
  auto fields = Fields::Read(r, node, "remote_write", kRemoteWriteKeys);
  if (!fields) return fields.error();
  if (const YAML::Node* n = fields->Find("enabled")) {
    auto b = config::ReadBool(r, *n, "remote_write.enabled");
    if (!b) return b.error();
    out.remote_write = *b;
  }
  if (const YAML::Node* n = fields->Find("max_body")) {
    auto text = config::ReadString(r, *n, "remote_write.max_body");
    if (!text) return text.error();
    std::uint64_t bytes = 0;
    if (!ParseByteSize(*text, &bytes) || bytes == 0 || bytes > (std::uint64_t{1} << 30)) {
      return r.Fail(*n, "remote_write.max_body", "bad size '" + *text + "' (1B to 1GiB)");
    }
    out.max_body_bytes = static_cast<std::size_t>(bytes);
  }
  return ReadRemoteWriteLimits(r, *fields, out.remote_write_limits);
}

std::string ResolvePath(const std::string& base, const std::string& path) {
  std::filesystem::path p(path);
  return p.is_absolute() || base.empty() ? p.string() : (std::filesystem::path(base) / p).string();
}

Status ReadAuth(const Reporter& r, const YAML::Node& node, const std::string& base,
                ServeConfig& out) {
  auto fields = Fields::Read(r, node, "auth", kAuthKeys);
  if (!fields) return fields.error();
  // Where each token was given: marks, as the nodes die with their Fields.
  std::vector<YAML::Mark> token_marks;
  auto token = config::ReadToken(r, *fields, base, "auth");
  if (!token) return token.error();
  if (!token->empty()) {
    out.auth.tokens.push_back({"default", TokenScope::kAdmin, std::move(*token)});
    const YAML::Node* at = fields->Find("token");
    token_marks.push_back((at != nullptr ? at : fields->Find("token_file"))->Mark());
  }
  if (const YAML::Node* list = fields->Find("tokens")) {
    if (!list->IsSequence()) return r.Fail(*list, "auth.tokens", "expected a list of tokens");
    for (std::size_t i = 0; i < list->size(); ++i) {
      const YAML::Node item = (*list)[i];
      const std::string field = config::Index("auth.tokens", i);
      auto entry = Fields::Read(r, item, field, kTokenKeys);
      if (!entry) return entry.error();
      TokenConfig t;
      t.name = field;
      if (const YAML::Node* n = entry->Find("name")) {
        auto name = config::ReadString(r, *n, config::Child(field, "name"));
        if (!name) return name.error();
        t.name = *name;
      }
      const YAML::Node* scope = entry->Find("scope");
      if (scope == nullptr) {
        return r.Fail(item, config::Child(field, "scope"), "missing (read, write or admin)");
      }
      auto scope_text = config::ReadString(r, *scope, config::Child(field, "scope"));
      if (!scope_text) return scope_text.error();
      if (*scope_text == "read") {
        t.scope = TokenScope::kRead;
      } else if (*scope_text == "write") {
        t.scope = TokenScope::kWrite;
      } else if (*scope_text == "admin") {
        t.scope = TokenScope::kAdmin;
      } else {
        return r.Fail(*scope, config::Child(field, "scope"),
                      "unknown scope '" + *scope_text + "' (read, write or admin)");
      }
      auto value = config::ReadToken(r, *entry, base, field);
      if (!value) return value.error();
      if (value->empty()) {
        return r.Fail(item, config::Child(field, "token"), "missing (token or token_file)");
      }
      t.token = std::move(*value);
      const YAML::Node* at = entry->Find("token");
      token_marks.push_back((at != nullptr ? at : entry->Find("token_file"))->Mark());
      out.auth.tokens.push_back(std::move(t));
    }
  }
  for (std::size_t i = 0; i < out.auth.tokens.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (out.auth.tokens[i].token == out.auth.tokens[j].token) {
        return r.Fail(token_marks[i], out.auth.tokens[i].name,
                      "the same token as " + out.auth.tokens[j].name +
                          ": each token needs its own value (its scope decides what it may do)");
      }
    }
  }
  // Before scopes these turned protection on; it is now always on once a
  // token is configured, and cannot be turned off.
  for (std::string_view key : {"protect_reads", "protect_remote_write"}) {
    const YAML::Node* n = fields->Find(key);
    if (n == nullptr) continue;
    const std::string field = config::Child("auth", key);
    auto b = config::ReadBool(r, *n, field);
    if (!b) return b.error();
    if (!*b) {
      return r.Fail(*n, field,
                    "cannot be false: with a token configured every read and write needs one; "
                    "give read-only clients a token with scope: read (auth.tokens)");
    }
    if (!out.auth.enabled()) return r.Fail(*n, field, "needs auth.token or auth.tokens");
  }
  return Status::Ok();
}

Status ReadNvml(const Reporter& r, const YAML::Node& node, const std::string& base,
                ServeConfig& out) {
  auto fields = Fields::Read(r, node, "nvml", kNvmlKeys);
  if (!fields) return fields.error();
  nvml::SourceConfig& c = out.nvml;
  c.enabled = true;  // a section turns it on unless it says enabled: false
  for (auto [key, flag] : {std::pair{"enabled", &c.enabled}, std::pair{"gpm", &c.gpm},
                           std::pair{"xid_events", &c.xid_events}}) {
    if (const YAML::Node* n = fields->Find(key)) {
      auto b = config::ReadBool(r, *n, config::Child("nvml", key));
      if (!b) return b.error();
      *flag = *b;
    }
  }
  for (auto [key, text] : {std::pair{"library", &c.library}, std::pair{"hostname", &c.hostname},
                           std::pair{"job", &c.job}}) {
    if (const YAML::Node* n = fields->Find(key)) {
      auto s = config::ReadString(r, *n, config::Child("nvml", key));
      if (!s) return s.error();
      *text = *s;
    }
  }
  // A path (with a slash) is relative to this file's folder; a bare file name
  // is searched for the way dlopen searches.
  if (c.library.find('/') != std::string::npos) c.library = ResolvePath(base, c.library);
  if (const YAML::Node* n = fields->Find("interval")) {
    auto text = config::ReadString(r, *n, "nvml.interval");
    if (!text) return text.error();
    std::int64_t ms = 0;
    if (!scrape::ParsePrometheusDuration(*text, &ms) || ms < 100) {
      return r.Fail(*n, "nvml.interval",
                    "bad interval '" + *text + "' (at least 100ms, NVML's GPM minimum; e.g. 1s)");
    }
    c.interval_ms = ms;
  }
  if (const YAML::Node* n = fields->Find("hostname_label")) {
    auto text = config::ReadString(r, *n, "nvml.hostname_label");
    if (!text) return text.error();
    if (*text != "Hostname" && *text != "hostname") {
      return r.Fail(*n, "nvml.hostname_label",
                    "'" + *text + "' is neither Hostname (dcgm-exporter up to 4.8.2) nor hostname");
    }
    c.lowercase_hostname = *text == "hostname";
  }
  return Status::Ok();
}

Status ReadReleases(const Reporter& r, const YAML::Node& node, ServeConfig& out) {
  auto fields = Fields::Read(r, node, "releases", kReleasesKeys);
  if (!fields) return fields.error();
  if (const YAML::Node* n = fields->Find("max_body")) {
    auto text = config::ReadString(r, *n, "releases.max_body");
    if (!text) return text.error();
    std::uint64_t bytes = 0;
    if (!ParseByteSize(*text, &bytes) || bytes == 0 || bytes > (std::uint64_t{64} << 20)) {
      return r.Fail(*n, "releases.max_body", "bad size '" + *text + "' (1B to 64MiB)");
    }
    out.releases.max_body_bytes = static_cast<std::size_t>(bytes);
  }
  if (const YAML::Node* n = fields->Find("info_window")) {
    auto text = config::ReadString(r, *n, "releases.info_window");
    if (!text) return text.error();
    std::int64_t ms = 0;
    if (!scrape::ParsePrometheusDuration(*text, &ms) || ms <= 0) {
      return r.Fail(*n, "releases.info_window", "bad duration '" + *text + "' (e.g. 7d, 12h)");
    }
    out.releases.info_window_ms = ms;
  }
  return Status::Ok();
}

Result<std::string> ReadHttpUrl(const Reporter& r, const YAML::Node& node, std::string_view field) {
  auto text = config::ReadString(r, node, field);
  if (!text) return Error(text.error());
  if (auto url = net::ParseHttpUrl(*text); !url) return r.Fail(node, field, url.error().message());
  return *text;
}

Status ReadGrafana(const Reporter& r, const YAML::Node& node, const std::string& base,
                   ServeConfig& out) {
  auto fields = Fields::Read(r, node, "publish.grafana", kGrafanaKeys);
  if (!fields) return fields.error();
  releases::GrafanaSinkConfig sink;
  const YAML::Node* url = fields->Find("url");
  if (url == nullptr) return r.Fail(fields->mark(), "publish.grafana.url", "required");
  auto text = ReadHttpUrl(r, *url, "publish.grafana.url");
  if (!text) return text.error();
  sink.url = *text;
  auto token = config::ReadToken(r, *fields, base, "publish.grafana");
  if (!token) return token.error();
  sink.token = std::move(*token);
  if (const YAML::Node* n = fields->Find("tags")) {
    auto tags = config::ReadStrings(r, *n, "publish.grafana.tags", "expected a list of tags");
    if (!tags) return tags.error();
    sink.tags = std::move(*tags);
  }
  if (const YAML::Node* n = fields->Find("dashboard_uid")) {
    auto uid = config::ReadString(r, *n, "publish.grafana.dashboard_uid");
    if (!uid) return uid.error();
    sink.dashboard_uid = *uid;
  }
  if (const YAML::Node* n = fields->Find("tls_config")) {
    auto tls = config::ReadTlsClientConfig(r, *n, "publish.grafana.tls_config", base);
    if (!tls) return tls.error();
    sink.tls = std::move(*tls);
  }
  out.publish.grafana = std::move(sink);
  return Status::Ok();
}

Status ReadOtlp(const Reporter& r, const YAML::Node& node, const std::string& base,
                ServeConfig& out) {
  auto fields = Fields::Read(r, node, "publish.otlp", kOtlpKeys);
  if (!fields) return fields.error();
  releases::OtlpSinkConfig sink;
  const YAML::Node* endpoint = fields->Find("endpoint");
  if (endpoint == nullptr) return r.Fail(fields->mark(), "publish.otlp.endpoint", "required");
  auto text = ReadHttpUrl(r, *endpoint, "publish.otlp.endpoint");
  if (!text) return text.error();
  sink.endpoint = *text;
  if (const YAML::Node* n = fields->Find("headers")) {
    config::HttpHeaderRules rules;
    rules.reserved = kOtlpReservedHeaders;
    auto headers = config::ReadHttpHeaders(r, *n, "publish.otlp.headers", rules);
    if (!headers) return headers.error();
    sink.headers = std::move(*headers);
  }
  if (const YAML::Node* n = fields->Find("tls_config")) {
    auto tls = config::ReadTlsClientConfig(r, *n, "publish.otlp.tls_config", base);
    if (!tls) return tls.error();
    sink.tls = std::move(*tls);
  }
  out.publish.otlp = std::move(sink);
  return Status::Ok();
}

Status ReadPublish(const Reporter& r, const YAML::Node& node, const std::string& base,
                   ServeConfig& out) {
  auto fields = Fields::Read(r, node, "publish", kPublishKeys);
  if (!fields) return fields.error();
  if (const YAML::Node* n = fields->Find("timeout")) {
    auto seconds = config::ReadDuration(r, *n, "publish.timeout");
    if (!seconds) return seconds.error();
    if (*seconds < 0.001 || *seconds > 600) {
      return r.Fail(*n, "publish.timeout", "must be from 1ms to 10m");
    }
    out.publish.timeout_ms = static_cast<int>(*seconds * 1000);
  }
  if (const YAML::Node* n = fields->Find("attempts")) {
    auto attempts = config::ReadInt(r, *n, "publish.attempts", 1, 100);
    if (!attempts) return attempts.error();
    out.publish.attempts = static_cast<int>(*attempts);
  }
  if (const YAML::Node* n = fields->Find("grafana")) {
    if (Status s = ReadGrafana(r, *n, base, out); !s.ok()) return s;
  }
  if (const YAML::Node* n = fields->Find("otlp")) {
    if (Status s = ReadOtlp(r, *n, base, out); !s.ok()) return s;
  }
  return Status::Ok();
}

// `http:` and `query:`: the server's and the query API's limits. Read
// together, as the query concurrency must stay below the handler threads.
Status ReadLimits(const Reporter& r, const YAML::Node* http, const YAML::Node* query,
                  ServeConfig& out) {
  std::optional<YAML::Mark> per_client_at;  // a mark: the Node lives in `fields`
  YAML::Mark threads_at = YAML::Mark::null_mark();
  if (http != nullptr) {
    auto fields = Fields::Read(r, *http, "http", kHttpKeys);
    if (!fields) return fields.error();
    for (auto [key, value, hi] :
         {std::tuple{"max_connections", &out.http.max_connections, 1'000'000},
          std::tuple{"max_connections_per_client", &out.http.max_connections_per_client,
                     1'000'000}}) {
      if (const YAML::Node* n = fields->Find(key)) {
        auto v = config::ReadInt(r, *n, config::Child("http", key), 1, hi);
        if (!v) return v.error();
        *value = static_cast<std::size_t>(*v);
      }
    }
    if (const YAML::Node* n = fields->Find("max_connections_per_client")) {
      per_client_at = n->Mark();
    }
    if (const YAML::Node* n = fields->Find("idle_timeout")) {
      auto seconds = config::ReadDuration(r, *n, "http.idle_timeout");
      if (!seconds) return seconds.error();
      if (*seconds < 1 || *seconds > 3600) {
        return r.Fail(*n, "http.idle_timeout", "must be from 1s to 1h");
      }
      out.http.idle_timeout_s = static_cast<int>(*seconds);
    }
    if (const YAML::Node* n = fields->Find("handler_threads")) {
      auto v = config::ReadInt(r, *n, "http.handler_threads", 2, 256);
      if (!v) return v.error();
      out.http.handler_threads = static_cast<int>(*v);
      threads_at = n->Mark();
    }
  }
  if (out.http.max_connections_per_client > out.http.max_connections) {
    if (!per_client_at) {  // the default, above a small max_connections
      out.http.max_connections_per_client = out.http.max_connections;
    } else {
      return r.Fail(*per_client_at, "http.max_connections_per_client",
                    "must not exceed http.max_connections (" +
                        std::to_string(out.http.max_connections) + ")");
    }
  }
  std::optional<YAML::Mark> concurrency_at;
  if (query != nullptr) {
    auto fields = Fields::Read(r, *query, "query", kQueryKeys);
    if (!fields) return fields.error();
    if (const YAML::Node* n = fields->Find("max_samples")) {
      auto v = config::ReadInt(r, *n, "query.max_samples", 1, 1'000'000'000);
      if (!v) return v.error();
      out.query.max_samples = static_cast<std::uint64_t>(*v);
    }
    if (const YAML::Node* n = fields->Find("max_concurrency")) {
      auto v = config::ReadInt(r, *n, "query.max_concurrency", 1, 255);
      if (!v) return v.error();
      out.query.max_concurrency = static_cast<int>(*v);
      concurrency_at = n->Mark();
    }
  }
  // Queries wait for nothing (over the limit they get 503), so the threads
  // they cannot take answer everything else: releases, remote_write, /metrics.
  if (out.query.max_concurrency >= out.http.handler_threads) {
    const std::string why = ", so that queries never hold every handler thread";
    if (concurrency_at) {
      return r.Fail(*concurrency_at, "query.max_concurrency",
                    "must be below http.handler_threads (" +
                        std::to_string(out.http.handler_threads) + ")" + why);
    }
    return r.Fail(threads_at, "http.handler_threads",
                  "must be above query.max_concurrency (" +
                      std::to_string(out.query.max_concurrency) + ")" + why);
  }
  return Status::Ok();
}

}  // namespace

bool ParseByteSize(std::string_view text, std::uint64_t* bytes) {
  std::size_t unit_at = 0;
  while (unit_at < text.size() && text[unit_at] >= '0' && text[unit_at] <= '9') ++unit_at;
  if (unit_at == 0) return false;
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + unit_at, n);
  if (ec != std::errc()) return false;
  struct Unit {
    std::string_view name;
    std::uint64_t scale;
  };
  static constexpr Unit kUnits[] = {{"", 1},
                                    {"B", 1},
                                    {"KB", 1000},
                                    {"MB", 1000ULL * 1000},
                                    {"GB", 1000ULL * 1000 * 1000},
                                    {"TB", 1000ULL * 1000 * 1000 * 1000},
                                    {"KiB", 1ULL << 10},
                                    {"MiB", 1ULL << 20},
                                    {"GiB", 1ULL << 30},
                                    {"TiB", 1ULL << 40}};
  const std::string_view unit = text.substr(unit_at);
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    if (n > std::numeric_limits<std::uint64_t>::max() / u.scale) return false;
    *bytes = n * u.scale;
    return true;
  }
  return false;
}

std::string_view ScopeName(TokenScope scope) {
  switch (scope) {
    case TokenScope::kRead:
      return "read";
    case TokenScope::kWrite:
      return "write";
    case TokenScope::kAdmin:
      return "admin";
  }
  return "admin";
}

Result<ServeConfig> ParseServeConfig(std::string_view yaml_text, std::string_view file_name) {
  const Reporter r{std::string(file_name)};
  const std::string base = std::filesystem::path(file_name).parent_path().string();
  ServeConfig out;
  out.canary.policy = analysis::DefaultPolicy();
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    if (root.IsNull()) {
      if (!base.empty()) out.data_dir = (std::filesystem::path(base) / out.data_dir).string();
      return out;
    }
    auto top = Fields::Read(r, root, "config", kTopKeys);
    if (!top) return Error(top.error());
    if (const YAML::Node* n = top->Find("listen")) {
      if (Status s = ReadListen(r, *n, out); !s.ok()) return Error(s);
    }
    if (const YAML::Node* n = top->Find("tls_server_config")) {
      auto tls = config::ReadTlsServerConfig(r, *n, "tls_server_config", base);
      if (!tls) return Error(tls.error());
      out.tls_server = std::move(*tls);
    }
    if (!base.empty() && top->Find("storage") == nullptr) {
      out.data_dir = (std::filesystem::path(base) / out.data_dir).string();
    }
    if (const YAML::Node* n = top->Find("storage")) {
      if (Status s = ReadStorage(r, *n, base, out); !s.ok()) return Error(s);
    }
    if (const YAML::Node* n = top->Find("remote_write")) {
      if (Status s = ReadRemoteWrite(r, *n, out); !s.ok()) return Error(s);
    }
    if (const YAML::Node* n = top->Find("remote_write_out")) {
      auto senders = ReadRemoteWriteOut(r, *n, base);
      if (!senders) return Error(senders.error());
      out.remote_write_out = std::move(*senders);
    }
    if (const YAML::Node* n = top->Find("auth")) {
      if (Status s = ReadAuth(r, *n, base, out); !s.ok()) return Error(s);
    }
    if (const YAML::Node* n = top->Find("releases")) {
      if (Status s = ReadReleases(r, *n, out); !s.ok()) return Error(s);
    }
    if (const YAML::Node* n = top->Find("canary")) {
      if (Status s = canary::ReadCanaryConfig(r, *n, base, out.canary); !s.ok()) return Error(s);
      // Untrusted senders must not choose what a canary judges or acts on.
      if (out.canary.trust_remote_write && !out.auth.enabled()) {
        return r.Fail((*n)["trust_remote_write"], "canary.trust_remote_write",
                      "needs auth (auth.token or auth.tokens): without it anyone could send the "
                      "series a canary judges and acts on");
      }
    }
    if (const YAML::Node* n = top->Find("actions")) {
      auto actions = actions::ParseActions(*n, file_name);
      if (!actions) return Error(actions.error());
      out.actions = std::move(*actions);
      // Relative paths are relative to this file's folder, as storage.path is.
      for (actions::ActionConfig& a : out.actions) {
        for (std::string* path : {&a.dir, &a.bearer_token_file}) {
          if (!path->empty() && !base.empty() && std::filesystem::path(*path).is_relative()) {
            *path = (std::filesystem::path(base) / *path).string();
          }
        }
      }
    }
    if (const YAML::Node* n = top->Find("publish")) {
      if (Status s = ReadPublish(r, *n, base, out); !s.ok()) return Error(s);
    }
    if (const YAML::Node* n = top->Find("nvml")) {
      if (Status s = ReadNvml(r, *n, base, out); !s.ok()) return Error(s);
    }
    if (Status s = ReadLimits(r, top->Find("http"), top->Find("query"), out); !s.ok()) {
      return Error(s);
    }
    auto scrape =
        scrape::ReadScrapeSections(r, top->Find("global"), top->Find("scrape_configs"), base);
    if (!scrape) return Error(scrape.error());
    out.scrape = std::move(*scrape);
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "syntax", e.msg);
  }
  return out;
}

Result<ServeConfig> LoadServeConfig(const std::string& path) {
  auto text = config::ReadConfigFile(path);
  if (!text) return Error(text.error());
  return ParseServeConfig(*text, path);
}

}  // namespace gpucanary::daemon
