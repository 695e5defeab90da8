// What the demo saw of each canary, whether the scenario kept its promise
// (docs/demo.md, "Scenarios"), and the outcome as JSON (--summary).

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "demo/demo.h"
#include "demo/demo_internal.h"
#include "vocab/vocab.h"

namespace gpucanary::demo {

using vocab::CauseKind;
using vocab::Scope;
using vocab::Verdict;

namespace {

// An action of `kind` ran and did something (not "skipped ...").
bool Acted(const std::vector<ActionSeen>& actions, const std::string& kind) {
  for (const ActionSeen& a : actions) {
    if (a.kind == kind && a.ok && a.detail.rfind("skipped", 0) != 0) return true;
  }
  return false;
}

// The healthy release passes, while baseline node-2's own power brake is
// named (scope node) and the node isolated.
void CheckHealthy(const CanarySeen& h, std::vector<std::string>& problems) {
  if (h.verdict != Verdict::kPass) {
    problems.push_back("the healthy release " + h.release + " got verdict " + NameOr(h.verdict) +
                       ", not pass");
  }
  const bool named = std::any_of(h.causes.begin(), h.causes.end(), [](const CauseSeen& c) {
    return c.kind == CauseKind::kPowerBrake && c.scope == Scope::kNode &&
           std::find(c.nodes.begin(), c.nodes.end(), kFaultyBaselineNode) != c.nodes.end();
  });
  if (!named) {
    problems.push_back(std::string("no node-scoped power_brake on ") + kFaultyBaselineNode +
                       " in the healthy canary");
  }
  const bool isolated = std::any_of(h.actions.begin(), h.actions.end(), [](const ActionSeen& a) {
    return a.kind == "isolate_node" && a.ok && a.detail.rfind("skipped", 0) != 0 &&
           a.incident == std::string("node:") + kFaultyBaselineNode;
  });
  if (!isolated) {
    problems.push_back(std::string(kFaultyBaselineNode) +
                       " was not isolated during the healthy canary");
  }
}

// A release fault: traffic back to `stable`, none to the faulty release, a
// diagnostic bundle written.
void CheckReleaseFault(const Outcome& result, const std::string& stable,
                       std::vector<std::string>& problems) {
  const std::vector<ActionSeen>& actions = result.faulty.actions;
  if (!Acted(actions, "traffic_shift")) {
    problems.push_back("traffic was not shifted back to " + stable);
  }
  double faulty_weight = kNaN;
  for (const auto& [release, w] : result.traffic_weights) {
    if (release == kFaulty) faulty_weight = w;
  }
  if (!(faulty_weight == 0)) {
    problems.push_back(std::string("the simulator still sends traffic to ") + kFaulty);
  }
  if (!Acted(actions, "diagnostic_bundle")) problems.push_back("no diagnostic bundle was written");
}

// A node fault: the node isolated, and cordoned in the simulator.
void CheckNodeFault(const Outcome& result, std::vector<std::string>& problems) {
  if (!Acted(result.faulty.actions, "isolate_node")) {
    problems.push_back("the faulty node was not isolated");
  }
  if (std::find(result.cordoned.begin(), result.cordoned.end(), kFaultyBaselineNode) ==
      result.cordoned.end()) {
    problems.push_back(std::string(kFaultyBaselineNode) + " is not cordoned in the simulator");
  }
}

Json CanaryJson(const CanarySeen& c) {
  Json causes = Json::array();
  for (const CauseSeen& cause : c.causes) {
    causes.push_back({{"kind", NameOr(cause.kind)},
                      {"scope", NameOr(cause.scope)},
                      {"nodes", cause.nodes},
                      {"summary", cause.summary},
                      {"since", cause.since}});
  }
  Json actions = Json::array();
  for (const ActionSeen& a : c.actions) {
    actions.push_back({{"name", a.name},
                       {"kind", a.kind},
                       {"ok", a.ok},
                       {"detail", a.detail},
                       {"incident", a.incident}});
  }
  return Json{{"release", c.release},
              {"state", NameOr(c.state)},
              {"verdict", NameOr(c.verdict)},
              {"started_at", c.started_at},
              {"decided_at", c.decided_at ? Json(*c.decided_at) : Json(nullptr)},
              {"causes", std::move(causes)},
              {"actions", std::move(actions)}};
}

}  // namespace

CanarySeen Demo::Seen(const Json& canary) const {
  CanarySeen seen;
  seen.release = StringOr(canary, "release");
  seen.state = WordAt<vocab::CanaryState>(canary, "state");
  const Json& report = canary["report"];
  seen.verdict = WordAt<Verdict>(report, "verdict");
  seen.started_at = NumberOr(canary, "started_at", 0);
  if (report.contains("decided_at") && report["decided_at"].is_number()) {
    seen.decided_at = report["decided_at"].get<double>();
  }
  for (const Json& c : report["causes"]) {
    CauseSeen cause;
    cause.kind = WordAt<CauseKind>(c, "kind");
    cause.scope = WordAt<Scope>(c, "scope");
    for (const Json& n : c["nodes"]) cause.nodes.push_back(n.get<std::string>());
    cause.summary = StringOr(c, "summary");
    cause.since = NumberOr(c, "since", 0);
    seen.causes.push_back(std::move(cause));
  }
  if (canary.contains("actions")) {
    for (const Json& a : canary["actions"]) {
      seen.actions.push_back({StringOr(a, "name"), StringOr(a, "kind"), a.value("ok", false),
                              StringOr(a, "detail"), StringOr(a, "incident", "fail")});
    }
  }
  return seen;
}

// What the scenario promises: the healthy release passes; the faulty one
// fails with the cause (release faults) and traffic goes back to the stable
// release, or is not failed and the faulty node is cordoned (node faults).
void Demo::Check(Outcome& result) const {
  auto& problems = result.problems;
  if (result.healthy) CheckHealthy(*result.healthy, problems);
  const CanarySeen& f = result.faulty;
  const bool failed = f.verdict == Verdict::kFail;
  if (scenario_.expect_verdict == ExpectedVerdict::kFail && !failed) {
    problems.push_back(f.release + " got verdict " + NameOr(f.verdict) + ", not fail");
  }
  if (scenario_.expect_verdict == ExpectedVerdict::kNotFail && failed) {
    problems.push_back(f.release + " failed, but its release is harmless");
  }
  bool cause = false;
  for (const CauseSeen& c : f.causes) {
    cause = cause || (c.kind == scenario_.expect_cause && c.scope == scenario_.expect_scope);
  }
  if (!cause) {
    problems.push_back("no " + std::string(vocab::Name(scenario_.expect_cause)) +
                       " cause of scope " + std::string(vocab::Name(scenario_.expect_scope)) +
                       " named");
  }
  const std::string stable = result.healthy ? kHealthy : kStable;
  if (scenario_.expect_scope == Scope::kRelease) {
    CheckReleaseFault(result, stable, problems);
  } else {
    CheckNodeFault(result, problems);
  }
  result.as_expected = problems.empty();
}

std::string OutcomeToJson(const Outcome& result) {
  Json weights = Json::object();
  for (const auto& [release, w] : result.traffic_weights) {
    weights[release] = std::isfinite(w) ? Json(w) : Json(nullptr);
  }
  return Json{{"dir", result.dir.string()},
              {"dashboard", result.dashboard_url},
              {"healthy", result.healthy ? CanaryJson(*result.healthy) : Json(nullptr)},
              {"faulty", CanaryJson(result.faulty)},
              {"traffic_weights", std::move(weights)},
              {"cordoned", result.cordoned},
              {"report", result.report.string()},
              {"as_expected", result.as_expected},
              {"problems", result.problems}}
      .dump(2);
}

}  // namespace gpucanary::demo
