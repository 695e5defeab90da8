#include "canary/config.h"

#include <array>
#include <cmath>
#include <filesystem>

#include "analysis/policy/policy.h"

namespace gpucanary::canary {
namespace {

constexpr std::array<std::string_view, 5> kKeys = {"policy", "history", "duration",
                                                   "baseline_nodes", "lag"};

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
  return Status::Ok();
}

}  // namespace gpucanary::canary
