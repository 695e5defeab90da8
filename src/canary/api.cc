#include "canary/api.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "analysis/report/report_json.h"
#include "canary/flagger.h"
#include "vocab/vocab.h"

namespace gpucanary::canary {
namespace {

using Json = nlohmann::json;
using vocab::CanaryState;

void ReplyJson(net::HttpResponse& response, int status, const Json& body) {
  response.status = status;
  response.content_type = "application/json";
  response.body = body.dump();
}

void Success(net::HttpResponse& response, Json data) {
  ReplyJson(response, 200, {{"status", "success"}, {"data", std::move(data)}});
}

void Failure(net::HttpResponse& response, int status, std::string_view type,
             std::string_view message) {
  ReplyJson(response, status, {{"status", "error"}, {"errorType", type}, {"error", message}});
}

Json OptionalNumber(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? Json(*v) : Json(nullptr);
}

Json Summary(const CanaryView& c) {
  return {{"id", c.id},
          {"release", c.release_id},
          {"state", vocab::Name(c.state)},
          {"verdict", vocab::Name(c.report.verdict)},
          {"started_at", c.started_at},
          {"ended_at", OptionalNumber(c.ended_at)},
          {"canary_hosts", c.canary_hosts},
          {"baseline_hosts", c.baseline_hosts},
          {"last_tick", c.last_tick ? Json(*c.last_tick) : Json(nullptr)}};
}

// The reason a verdict endpoint gives: the first failing cause, else the
// judge's first note, else where the canary stands.
std::string Reason(const CanaryView& c) {
  for (const analysis::Cause& cause : c.report.causes) {
    if (cause.failing) return cause.summary;
  }
  if (c.state == CanaryState::kRunning) {
    // The history before the release is judged too; only the release's own
    // seconds count here (none yet while the judge reads its history).
    const std::int64_t judged =
        c.last_tick ? *c.last_tick - static_cast<std::int64_t>(std::floor(c.started_at)) + 1 : 0;
    return "running: " + std::to_string(std::max<std::int64_t>(judged, 0)) +
           " s of the release judged";
  }
  if (!c.report.notes.empty()) return c.report.notes.front();
  return "canary " + std::string(vocab::Name(c.state));
}

// Every verdict change committed for the canary, oldest first, without the
// judge's full report (GET /api/v1/canaries/{id} has the latest).
Result<Json> VerdictHistory(store::MetaDb& meta, const std::string& id) {
  auto verdicts = meta.Verdicts(id);
  if (!verdicts) return Error(verdicts.error());
  Json out = Json::array();
  for (const store::VerdictRecord& v : *verdicts) {
    Json causes = Json::array();
    for (const store::CauseRecord& c : v.causes) {
      causes.push_back({{"kind", c.kind},
                        {"scope", c.scope},
                        {"since", OptionalNumber(c.since)},
                        {"summary", c.summary}});
    }
    out.push_back({{"at", v.at},
                   {"verdict", v.verdict},
                   {"score", OptionalNumber(v.score)},
                   {"causes", std::move(causes)}});
  }
  return out;
}

// /api/v1/canaries[/{id}[/{action}]] split into its parts; nullopt for any
// other path.
struct CanaryPath {
  std::string_view id;      // "" for the list
  std::string_view action;  // "" for the canary itself
};

std::optional<CanaryPath> SplitCanaryPath(std::string_view path) {
  static constexpr std::string_view kCanaries = "/api/v1/canaries";
  if (path != kCanaries && !path.starts_with(std::string(kCanaries) + "/")) return std::nullopt;
  CanaryPath out;
  out.id = path.substr(kCanaries.size());
  if (!out.id.empty()) out.id.remove_prefix(1);
  if (const auto slash = out.id.find('/'); slash != std::string_view::npos) {
    out.action = out.id.substr(slash + 1);
    out.id = out.id.substr(0, slash);
  }
  return out;
}

// GET /api/v1/canaries/{id}/verdict: always 200, because Argo Rollouts reads
// the body's fields, not the status.
void ReplyVerdict(const std::string& id, const std::optional<CanaryView>& c,
                  net::HttpResponse& response) {
  if (!c) {
    ReplyJson(response, 200,
              {{"verdict", vocab::Name(vocab::Verdict::kInconclusive)},
               {"decided", false},
               {"state", "unknown"},
               {"score", 0.0},
               {"reason", "no canary " + id}});
    return;
  }
  ReplyJson(response, 200,
            {{"verdict", vocab::Name(c->report.verdict)},
             {"decided", c->report.decided_at.has_value() || c->state != CanaryState::kRunning},
             {"state", vocab::Name(c->state)},
             {"score", c->report.score},
             {"reason", Reason(*c)}});
}

// POST /api/v1/canaries/{id}/stop.
void StopCanary(CanaryManager& manager, const std::string& id, net::HttpResponse& response) {
  if (Status st = manager.Stop(id, "POST /api/v1/canaries/" + id + "/stop"); !st.ok()) {
    const bool conflict = st.code() == StatusCode::kFailedPrecondition;
    Failure(response, conflict ? 409 : 500, conflict ? "conflict" : "internal", st.message());
    return;
  }
  Success(response, Summary(*manager.Get(id)));
}

// The actions recorded for the canary, oldest first; none when the record
// cannot be read (the canary's own fields still answer).
Json ActionsJson(store::MetaDb& meta, const std::string& id) {
  Json actions = Json::array();
  auto recorded = meta.Actions(id);
  if (!recorded) return actions;
  for (const store::ActionRecord& a : *recorded) {
    actions.push_back(
        {{"name", a.name},
         {"kind", a.kind},
         {"at", a.at},
         {"duration_ms", a.duration_ms},
         {"ok", a.ok},
         {"attempts", a.attempts},
         {"detail", a.detail},
         // "" in the record: the incident of the canary's fail
         {"incident",
          a.incident.empty() ? std::string(vocab::Name(vocab::Verdict::kFail)) : a.incident}});
  }
  return actions;
}

// GET /api/v1/canaries/{id}: the summary, the reason, the judge's full
// report and the actions taken.
Json CanaryDetail(const CanaryView& c, store::MetaDb& meta, const std::string& id) {
  Json data = Summary(c);
  data["reason"] = Reason(c);
  data["report"] = Json::parse(analysis::ReportToJson(c.report));
  data["actions"] = ActionsJson(meta, id);
  return data;
}

}  // namespace

CanaryApi::CanaryApi(CanaryManager& manager, store::MetaDb& meta,
                     std::function<void(std::string_view)> log)
    : manager_(manager),
      meta_(meta),
      log_(std::move(log)),
      flagger_releases_(std::make_unique<FlaggerReleases>(meta)) {}

CanaryApi::~CanaryApi() = default;

bool CanaryApi::Handle(const net::HttpRequest& request, net::HttpResponse& response) const {
  static constexpr std::string_view kFlagger = "/api/v1/flagger/";
  const std::string_view path = request.path;
  if (path.starts_with(kFlagger)) {
    if (request.method != "POST") {
      response.headers.emplace_back("Allow", "POST");
      Failure(response, 405, "bad_data", "Flagger webhooks are POST");
      return true;
    }
    Flagger(path.substr(kFlagger.size()), request, response);
    return true;
  }
  const std::optional<CanaryPath> route = SplitCanaryPath(path);
  if (!route) return false;
  const bool is_stop = route->action == "stop";
  const char* allowed = is_stop ? "POST" : "GET, HEAD";
  if ((is_stop && request.method != "POST") ||
      (!is_stop && request.method != "GET" && request.method != "HEAD")) {
    response.headers.emplace_back("Allow", allowed);
    Failure(response, 405, "bad_data", std::string("this endpoint takes ") + allowed);
    return true;
  }
  if (route->id.empty()) {
    Json data = Json::array();
    for (const CanaryView& c : manager_.List()) data.push_back(Summary(c));
    Success(response, std::move(data));
    return true;
  }
  const std::string id(route->id);
  const std::optional<CanaryView> c = manager_.Get(id);
  if (route->action == "verdict") {
    ReplyVerdict(id, c, response);
    return true;
  }
  if (!c) {
    Failure(response, 404, "not_found", "no canary " + id);
  } else if (is_stop) {
    StopCanary(manager_, id, response);
  } else if (route->action == "verdicts") {
    Result<Json> history = VerdictHistory(meta_, id);
    if (!history) {
      Failure(response, 500, "internal", history.error().message());
    } else {
      Success(response, std::move(*history));
    }
  } else if (!route->action.empty()) {
    Failure(response, 404, "not_found", "no endpoint " + std::string(path));
  } else {
    Success(response, CanaryDetail(*c, meta_, id));
  }
  return true;
}

namespace {

// Where the release stands for Flagger: its newest canary's state and verdict.
FlaggerStanding StandingOf(const std::optional<CanaryView>& c) {
  if (!c) return FlaggerStanding::kNoCanary;
  switch (c->state) {
    case CanaryState::kRunning:
      return c->report.verdict == vocab::Verdict::kPass ? FlaggerStanding::kPassing
                                                        : FlaggerStanding::kUndecided;
    case CanaryState::kPassed:
      return FlaggerStanding::kPassed;
    case CanaryState::kFailed:
      return FlaggerStanding::kFailed;
    case CanaryState::kInconclusive:
      return FlaggerStanding::kInconclusive;
    case CanaryState::kAborted:
      return FlaggerStanding::kAborted;
  }
  return FlaggerStanding::kUndecided;
}

// A payload string fit for one log line: control characters escaped (a
// Canary name with a newline must not forge a second line).
std::string LogSafe(std::string_view text) {
  std::string out;
  for (const char ch : text.substr(0, 200)) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(ch));
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

// The canary a release id (or canary id) names: that canary, else the
// newest canary of that release.
std::optional<CanaryView> CanaryApi::CanaryOf(const std::string& id) const {
  if (std::optional<CanaryView> c = manager_.Get(id)) return c;
  for (const CanaryView& c : manager_.List()) {  // newest first
    if (c.release_id == id) return c;
  }
  return std::nullopt;
}

void CanaryApi::Flagger(std::string_view hook_name, const net::HttpRequest& request,
                        net::HttpResponse& response) const {
  const std::optional<FlaggerHook> hook = ParseFlaggerHook(hook_name);
  if (!hook) {
    Failure(response, 404, "not_found",
            "no Flagger hook '" + std::string(hook_name) + "' (" + FlaggerHookList() + ")");
    return;
  }
  Result<FlaggerPayload> payload = ParseFlaggerPayload(request.body);
  if (!payload) {
    Failure(response, 400, "bad_data", payload.error().message());
    return;
  }
  Result<std::optional<std::string>> release =
      flagger_releases_->Find(*payload, *hook == FlaggerHook::kConfirmRollout);
  if (!release) {
    Failure(response, 500, "internal", release.error().message());
    return;
  }
  Result<OnInconclusive> policy = flagger_releases_->Policy(*release, payload->metadata);
  if (!policy) {
    Failure(response, 400, "bad_data", policy.error().message());
    return;
  }
  std::optional<CanaryView> canary;
  FlaggerStanding standing = FlaggerStanding::kUnknown;
  if (*release) {
    canary = CanaryOf(**release);
    // A release id no annotation or canary knows (a typo in the metadata).
    bool known = canary.has_value();
    if (!known) {
      Result<std::optional<store::ReleaseRecord>> stored = meta_.GetRelease(**release);
      known = stored && stored->has_value();
    }
    standing = known ? StandingOf(canary) : FlaggerStanding::kUnknown;
  }
  // Flagger rolled the release back (its post-rollout hook with phase
  // Failed): a canary still running ends, so its hosts leave fast scraping.
  if (*hook == FlaggerHook::kPostRollout && payload->phase == "Failed" && canary &&
      canary->state == CanaryState::kRunning) {
    (void)manager_.Stop(canary->id, "Flagger rolled the release back");
    canary = manager_.Get(canary->id);
  }
  const FlaggerAnswer answer = AnswerHook(*hook, standing, *policy);
  const std::string reason = canary ? Reason(*canary)
                                    : (*release ? "release " + **release + " names no canary GPUs"
                                                : "no release annotation matches " +
                                                      payload->namespace_ + "/" + payload->name);
  if (log_) {
    log_("flagger " + std::string(FlaggerHookName(*hook)) + " for " +
         LogSafe(payload->namespace_ + "/" + payload->name) + " (" + LogSafe(payload->phase) +
         "): release " + LogSafe(release->value_or("?")) + ", " +
         std::string(FlaggerStandingName(standing)) + " -> " + std::to_string(answer.status) + " " +
         answer.meaning);
  }
  Json body = {{"hook", FlaggerHookName(*hook)},
               {"release", *release ? Json(**release) : Json(nullptr)},
               {"canary", canary ? Json(canary->id) : Json(nullptr)},
               {"standing", FlaggerStandingName(standing)},
               {"go", answer.go},
               {"meaning", answer.meaning},
               {"reason", reason}};
  ReplyJson(response, answer.status, body);
}

}  // namespace gpucanary::canary
