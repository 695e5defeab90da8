#include "canary/flagger.h"

#include <array>
#include <nlohmann/json.hpp>
#include <utility>

namespace gpucanary::canary {
namespace {

using Json = nlohmann::json;

constexpr std::array<std::pair<FlaggerHook, std::string_view>, 8> kHooks = {{
    {FlaggerHook::kConfirmRollout, "confirm-rollout"},
    {FlaggerHook::kPreRollout, "pre-rollout"},
    {FlaggerHook::kRollout, "rollout"},
    {FlaggerHook::kConfirmTrafficIncrease, "confirm-traffic-increase"},
    {FlaggerHook::kConfirmPromotion, "confirm-promotion"},
    {FlaggerHook::kPostRollout, "post-rollout"},
    {FlaggerHook::kRollback, "rollback"},
    {FlaggerHook::kEvent, "event"},
}};

// How many recent annotations rule 3 looks through.
constexpr int kRecentReleases = 500;

Status BadField(std::string_view field, std::string_view expected) {
  return Status(StatusCode::kInvalidArgument,
                "field '" + std::string(field) + "': expected " + std::string(expected));
}

// A string field of `j`, "" when absent; an error when it is not a string.
Status StringField(const Json& j, const char* key, std::string& out) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return BadField(key, "a string");
  out = it->get<std::string>();
  return Status::Ok();
}

std::string WorkloadKey(const std::string& ns, const std::string& name) { return ns + "/" + name; }

}  // namespace

std::optional<FlaggerHook> ParseFlaggerHook(std::string_view name) {
  for (const auto& [hook, n] : kHooks) {
    if (n == name) return hook;
  }
  return std::nullopt;
}

std::string_view FlaggerHookName(FlaggerHook hook) {
  for (const auto& [h, n] : kHooks) {
    if (h == hook) return n;
  }
  return "?";
}

std::string FlaggerHookList() {
  std::string out;
  for (const auto& [hook, n] : kHooks) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

Result<FlaggerPayload> ParseFlaggerPayload(std::string_view body) {
  const Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return Error(StatusCode::kInvalidArgument, "the webhook body is not a JSON object");
  }
  FlaggerPayload p;
  GC_RETURN_IF_ERROR(StringField(j, "name", p.name));
  GC_RETURN_IF_ERROR(StringField(j, "namespace", p.namespace_));
  GC_RETURN_IF_ERROR(StringField(j, "phase", p.phase));
  GC_RETURN_IF_ERROR(StringField(j, "checksum", p.checksum));
  const auto md = j.find("metadata");
  if (md != j.end() && !md->is_null()) {
    if (!md->is_object()) return Error(BadField("metadata", "an object of strings"));
    for (const auto& [key, value] : md->items()) {
      if (!value.is_string()) return Error(BadField("metadata." + key, "a string"));
      p.metadata[key] = value.get<std::string>();
    }
  }
  return p;
}

std::string_view FlaggerStandingName(FlaggerStanding s) {
  switch (s) {
    case FlaggerStanding::kUnknown:
      return "unknown";
    case FlaggerStanding::kNoCanary:
      return "no_canary";
    case FlaggerStanding::kUndecided:
      return "running";
    case FlaggerStanding::kPassing:
      return "passing";
    case FlaggerStanding::kPassed:
      return "passed";
    case FlaggerStanding::kFailed:
      return "failed";
    case FlaggerStanding::kInconclusive:
      return "inconclusive";
    case FlaggerStanding::kAborted:
      return "aborted";
  }
  return "unknown";
}

Result<OnInconclusive> ParseOnInconclusive(const std::map<std::string, std::string>& metadata) {
  const auto it = metadata.find("on_inconclusive");
  if (it == metadata.end() || it->second == "rollback") return OnInconclusive::kRollback;
  if (it->second == "promote") return OnInconclusive::kPromote;
  return Error(
      StatusCode::kInvalidArgument,
      "metadata 'on_inconclusive': expected rollback or promote, got '" + it->second + "'");
}

FlaggerAnswer AnswerHook(FlaggerHook hook, FlaggerStanding standing, OnInconclusive policy) {
  using S = FlaggerStanding;
  // No verdict will come (ended without one, or nothing to judge): the
  // policy decides.
  const bool verdictless =
      standing == S::kInconclusive || standing == S::kAborted || standing == S::kNoCanary;
  const bool bad = standing == S::kFailed || (verdictless && policy == OnInconclusive::kRollback);
  const bool good = standing == S::kPassed || standing == S::kPassing ||
                    (verdictless && policy == OnInconclusive::kPromote);
  switch (hook) {
    case FlaggerHook::kConfirmRollout:
      if (standing == S::kUnknown) {
        return {403, false, "wait: no release annotation for this revision yet"};
      }
      if (bad) return {403, false, "hold: the release failed or has no verdict to show"};
      return {200, true, "go on: start the rollout"};
    case FlaggerHook::kPreRollout:
    case FlaggerHook::kRollout:
      if (bad) return {409, false, "a failed check: the release failed or has no verdict"};
      return {200, true, "go on"};
    case FlaggerHook::kConfirmTrafficIncrease:
      if (bad) return {403, false, "hold the weight: the release failed or has no verdict"};
      return {200, true, "go on: more traffic"};
    case FlaggerHook::kConfirmPromotion:
      if (good) return {200, true, "promote"};
      if (standing == S::kFailed) return {403, false, "do not promote: the release failed"};
      if (standing == S::kUnknown) {
        return {403, false, "wait: no release annotation matches this canary"};
      }
      if (verdictless)
        return {403, false, "do not promote: no verdict (on_inconclusive: rollback)"};
      return {403, false, "wait: the judge has not decided yet"};
    case FlaggerHook::kRollback:
      if (bad) return {200, true, "roll back"};
      return {409, false, "no rollback"};
    case FlaggerHook::kPostRollout:
    case FlaggerHook::kEvent:
      return {200, true, "noted"};
  }
  return {200, true, "noted"};
}

Result<std::optional<std::string>> FlaggerReleases::Find(const FlaggerPayload& p,
                                                         bool next_revision) {
  for (const char* key : {"release", "canary"}) {
    const auto it = p.metadata.find(key);
    if (it != p.metadata.end() && !it->second.empty()) return std::optional(it->second);
  }
  if (p.name.empty()) return std::optional<std::string>();
  const std::string workload = WorkloadKey(p.namespace_, p.name);
  const std::string key = workload + "/" + p.checksum;
  if (!next_revision) {
    MutexLock lock(mu_);
    if (auto it = bound_.find(key); it != bound_.end()) return std::optional(it->second);
  }
  store::ReleaseFilter filter;
  filter.limit = kRecentReleases;
  Result<std::vector<store::ReleaseRecord>> recent = meta_.ListReleases(filter);
  if (!recent) return Error(recent.error());
  MutexLock lock(mu_);
  std::set<std::string>& claimed = claimed_[workload];
  for (const store::ReleaseRecord& r : *recent) {  // newest first
    const Json a = Json::parse(r.annotation, nullptr, /*allow_exceptions=*/false);
    if (!a.is_object()) continue;
    const auto text = [&](const char* field) {
      const auto it = a.find(field);
      return it != a.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const std::string name = !text("workload").empty() ? text("workload") : text("service");
    const std::string ns = text("namespace");
    if (name != p.name || (!ns.empty() && ns != p.namespace_)) continue;
    if (claimed.contains(r.id)) return std::optional<std::string>();  // newest is taken
    if (!next_revision) {
      claimed.insert(r.id);
      bound_[key] = r.id;
    }
    return std::optional(r.id);
  }
  return std::optional<std::string>();
}

Result<OnInconclusive> FlaggerReleases::Policy(const std::optional<std::string>& release,
                                               const std::map<std::string, std::string>& metadata) {
  Result<OnInconclusive> given = ParseOnInconclusive(metadata);
  if (!given) return given;
  MutexLock lock(mu_);
  if (metadata.contains("on_inconclusive")) {
    if (release) policy_[*release] = *given;
    return given;
  }
  if (release) {
    if (auto it = policy_.find(*release); it != policy_.end()) return it->second;
  }
  return OnInconclusive::kRollback;
}

}  // namespace gpucanary::canary
