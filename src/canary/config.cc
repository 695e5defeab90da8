#include "canary/config.h"

#include <array>
#include <cmath>
#include <filesystem>

#include "analysis/policy/policy.h"
#include "config/http_headers.h"
#include "config/tls_config.h"
#include "net/url.h"

namespace gpucanary::canary {
namespace {

constexpr std::array<std::string_view, 7> kKeys = {"policy",
                                                   "history",
                                                   "duration",
                                                   "baseline_nodes",
                                                   "lag",
                                                   "history_prometheus",
                                                   "trust_remote_write"};
constexpr std::array<std::string_view, 6> kHistoryKeys = {"url",     "token",   "token_file",
                                                          "headers", "timeout", "tls_config"};
constexpr std::string_view kHistoryField = "canary.history_prometheus";

// A duration field in whole milliseconds within [lo_s, hi_s] seconds.
Result<std::int64_t> DurationMs(const config::Reporter& r, const YAML::Node& node,
                                std::string_view field, double lo_s, double hi_s) {
  auto s = config::ReadDuration(r, node, field);
  if (!s) return Error(s.error());
  if (*s < lo_s || *s > hi_s) {
    return r.Fail(node, field,
                  "must be between " + std::to_string(static_cast<std::int64_t>(lo_s)) + " s and " +
                      std::to_string(static_cast<std::int64_t>(hi_s)) + " s");
  }
  return static_cast<std::int64_t>(std::llround(*s * 1000));
}

std::string Field(std::string_view key) { return config::Child(kHistoryField, key); }

// The client sets these itself; Authorization comes from token/token_file.
constexpr std::array<std::string_view, 5> kReservedHeaders = {
    "host", "content-type", "content-length", "accept-encoding", "authorization"};

// `canary.history_prometheus`: where the history window is read from when the
// store lacks it (canary/history.h).
Status ReadHistoryPrometheus(const config::Reporter& r, const YAML::Node& node,
                             const std::string& base_dir, HistoryPrometheusOptions& out) {
  auto fields = config::Fields::Read(r, node, kHistoryField, kHistoryKeys);
  if (!fields) return fields.error();
  HistoryPrometheusOptions options;
  const YAML::Node* url = fields->Find("url");
  if (url == nullptr) return r.Fail(fields->mark(), Field("url"), "required");
  auto text = config::ReadString(r, *url, Field("url"));
  if (!text) return text.error();
  if (auto parsed = net::ParseHttpUrl(*text); !parsed) {
    return r.Fail(*url, Field("url"), parsed.error().message());
  }
  options.url = *text;
  auto token = config::ReadToken(r, *fields, base_dir, kHistoryField);
  if (!token) return token.error();
  options.client.bearer_token = std::move(*token);
  if (const YAML::Node* n = fields->Find("headers")) {
    config::HttpHeaderRules rules;
    rules.reserved = kReservedHeaders;
    auto headers = config::ReadHttpHeaders(r, *n, Field("headers"), rules);
    if (!headers) return headers.error();
    options.client.headers = std::move(*headers);
  }
  if (const YAML::Node* n = fields->Find("timeout")) {
    auto ms = DurationMs(r, *n, Field("timeout"), 1, 600);
    if (!ms) return ms.error();
    options.client.timeout_ms = static_cast<int>(*ms);
    // Prometheus gives up on the query too instead of working on for nobody.
    options.client.query_timeout_s = static_cast<double>(*ms) / 1000;
  }
  if (const YAML::Node* n = fields->Find("tls_config")) {
    auto tls = config::ReadTlsClientConfig(r, *n, Field("tls_config"), base_dir);
    if (!tls) return tls.error();
    options.client.tls = std::move(*tls);
  }
  out = std::move(options);
  return Status::Ok();
}

}  // namespace

Status ReadCanaryConfig(const config::Reporter& r, const YAML::Node& node,
                        const std::string& base_dir, CanaryOptions& options) {
  auto fields = config::Fields::Read(r, node, "canary", kKeys);
  if (!fields) return fields.error();
  options.policy = analysis::DefaultPolicy();
  if (const YAML::Node* n = fields->Find("policy")) {
    auto path = config::ReadString(r, *n, "canary.policy");
    if (!path) return path.error();
    std::filesystem::path p(*path);
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    auto policy = analysis::LoadPolicy(p.string());
    if (!policy) {
      return Status(policy.error().code(),
                    r.Where(n->Mark()) + ": canary.policy: " + policy.error().message());
    }
    options.policy = std::move(*policy);
  }
  if (const YAML::Node* n = fields->Find("history")) {
    auto ms = DurationMs(r, *n, "canary.history", 0, 24 * 3600);
    if (!ms) return ms.error();
    options.history_s = *ms / 1000;
  }
  if (const YAML::Node* n = fields->Find("duration")) {
    auto ms = DurationMs(r, *n, "canary.duration", 10, 7 * 24 * 3600);
    if (!ms) return ms.error();
    options.duration_s = *ms / 1000;
  }
  if (const YAML::Node* n = fields->Find("baseline_nodes")) {
    auto count = config::ReadInt(r, *n, "canary.baseline_nodes", 0, 1000);
    if (!count) return count.error();
    options.baseline_nodes = static_cast<int>(*count);
  }
  if (const YAML::Node* n = fields->Find("lag")) {
    auto ms = DurationMs(r, *n, "canary.lag", 0, 60);
    if (!ms) return ms.error();
    options.lag_ms = *ms;
  }
  if (const YAML::Node* n = fields->Find("history_prometheus")) {
    GC_RETURN_IF_ERROR(ReadHistoryPrometheus(r, *n, base_dir, options.history_prometheus));
  }
  if (const YAML::Node* n = fields->Find("trust_remote_write")) {
    auto b = config::ReadBool(r, *n, "canary.trust_remote_write");
    if (!b) return b.error();
    options.trust_remote_write = *b;
  }
  return Status::Ok();
}

}  // namespace gpucanary::canary
