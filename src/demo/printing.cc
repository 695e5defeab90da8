// What the demo prints as it goes: timestamped lines, the live canary's
// comparison, the verdict and its causes, the circuit breaker's actions and
// the fleet after them (docs/demo.md, "What a run looks like").

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "demo/demo_internal.h"
#include "vocab/vocab.h"

namespace gpucanary::demo {

using vocab::Verdict;

std::string Fixed(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string Percent(double ratio) {
  if (!std::isfinite(ratio)) return "-";
  std::ostringstream s;
  s << std::showpos << std::fixed << std::setprecision(1) << ratio * 100 << "%";
  return s.str();
}

double NumberOr(const Json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string StringOr(const Json& j, const char* key, std::string fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::move(fallback);
}

void Demo::Say(const std::string& line) {
  const double t = static_cast<double>(clock_.NowMs() - t0_) / 1000.0;
  char stamp[16];
  std::snprintf(stamp, sizeof stamp, "[%5.1fs] ", t);
  out_ << stamp << line << "\n";
  out_.flush();
}

void Demo::SayMore(const std::string& line) {
  out_ << "         " << line << "\n";
  out_.flush();
}

// What runs where, before anything happens.
void Demo::PrintBanner() {
  out_ << "gpucanary demo: the canary service on a simulated fleet, on loopback only\n"
       << "  fleet      " << kNodes << " nodes x " << kGpusPerNode << " H100 SXM (node-1 .. node-"
       << kNodes << "), vLLM on each, running " << kStable << "\n"
       << "  simulator  " << control_ << " (control API: GET /state)\n"
       << "  gpucanary  " << api_ << " (dashboard and API; log in "
       << (dir_ / "daemon.log").string() << "; the dashboard asks for the token in "
       << (dir_ / "token").string() << ")\n"
       << "  scenario   " << scenario_.name << ": " << kFaulty << " brings " << scenario_.change
       << "\n"
       << "  files      " << dir_.string()
       << " (serve.yaml, policy.yaml and targets.json reproduce it with `gpucanary serve`)\n\n";
  out_.flush();
}

void Demo::PrintProgress(const Json& canary) {
  const Json& report = canary["report"];
  std::map<std::string, const Json*> metrics;
  for (const Json& m : report["metrics"]) metrics[StringOr(m, "name")] = &m;
  auto pair = [&](const char* name, const char* label, double scale, int digits,
                  const char* unit) -> std::string {
    auto it = metrics.find(name);
    if (it == metrics.end()) return "";
    const Json& m = *it->second;
    const double b = NumberOr(m, "baseline", kNaN) * scale;
    const double c = NumberOr(m, "canary", kNaN) * scale;
    if (!std::isfinite(b) || !std::isfinite(c)) return "";
    return std::string(label) + " " + Fixed(c, digits) + " vs " + Fixed(b, digits) + unit + " (" +
           Percent(NumberOr(m, "change", kNaN)) + ")";
  };
  const double started = NumberOr(canary, "started_at", 0);
  const double last = NumberOr(canary, "last_tick", kNaN);
  const std::string judged =
      std::isfinite(last)
          ? std::to_string(static_cast<std::int64_t>(last - std::floor(started)) + 1)
          : std::string("0");
  std::string line = StringOr(canary, "release") + " " + StringOr(canary, "state") + ", " + judged +
                     " s judged, verdict " + StringOr(report, "verdict") + ": ";
  std::string parts;
  // The policy's measures (policies/default.yaml), whichever server the
  // simulator serves.
  for (const std::string& p : {pair("per_token_latency", "TPOT", 1000, 1, " ms"),
                               pair("generated_tokens", "tokens/s", 1, 0, ""),
                               pair("DCGM_FI_DEV_SM_CLOCK", "SM clock", 1, 0, " MHz")}) {
    if (p.empty()) continue;
    parts += (parts.empty() ? "" : ", ") + p;
  }
  Say(line + (parts.empty() ? "no comparison yet (the release's warm-up, then the first blocks)"
                            : parts + " (canary vs baseline)"));
}

// Causes and actions the last poll had not shown, as they appear.
void Demo::PrintNews(const Json& canary) {
  for (const Json& cause : canary["report"]["causes"]) {
    std::string key = StringOr(cause, "kind") + "/" + StringOr(cause, "scope");
    for (const Json& n : cause["nodes"]) key += "/" + n.get<std::string>();
    if (!shown_causes_.insert(key).second) continue;
    SayMore("finding: " + StringOr(cause, "kind") + " (scope " + StringOr(cause, "scope") +
            "): " + StringOr(cause, "summary"));
  }
  const Json& actions = canary["actions"];
  if (actions.size() > shown_actions_) {
    Say("the circuit breaker acts (GET /api/v1/canaries/" + StringOr(canary, "id") + "):");
    for (std::size_t i = shown_actions_; i < actions.size(); ++i) PrintAction(actions[i]);
    shown_actions_ = actions.size();
  }
}

void Demo::PrintVerdict(const Json& canary) {
  const Json& report = canary["report"];
  const std::string verdict_word = StringOr(report, "verdict");
  const std::optional<Verdict> verdict = vocab::Parse<Verdict>(verdict_word);
  const double started = NumberOr(canary, "started_at", kNaN);
  const double decided = NumberOr(report, "decided_at", kNaN);
  std::string when = std::isfinite(decided) && std::isfinite(started)
                         ? " " + Fixed(decided - started, 0) + " s after the release started"
                         : "";
  if (verdict == Verdict::kFail) {
    Say("HALT: " + StringOr(canary, "release") + " FAILED" + when + " (score " +
        Fixed(NumberOr(report, "score", kNaN), 1) + ")");
  } else if (verdict == Verdict::kPass) {
    Say(StringOr(canary, "release") + " PASSED" + when + ", canary " + StringOr(canary, "state"));
  } else {
    Say(StringOr(canary, "release") + ": verdict " + verdict_word + ", canary " +
        StringOr(canary, "state"));
  }
  for (const Json& cause : report["causes"]) {
    const double since = NumberOr(cause, "since", kNaN);
    std::string lag;
    if (verdict == Verdict::kFail && std::isfinite(since) && std::isfinite(decided) &&
        WordAt<vocab::Scope>(cause, "scope") == vocab::Scope::kRelease) {
      lag = ", decided " + Fixed(decided - since, 0) + " s after it began";
    }
    SayMore("cause: " + StringOr(cause, "kind") + " (scope " + StringOr(cause, "scope") + lag +
            ")");
    SayMore("  " + StringOr(cause, "summary"));
  }
  if (verdict == Verdict::kPass) PrintCriticalMetrics(report);
}

// A pass shows each critical metric within its margin.
void Demo::PrintCriticalMetrics(const Json& report) {
  for (const Json& m : report["metrics"]) {
    if (!m.value("critical", false)) continue;
    const Json& interval = m["interval"];
    SayMore(StringOr(m, "name") + ": " + Percent(NumberOr(m, "change", kNaN)) + " [" +
            (interval.is_array() && interval.size() == 2 && interval[0].is_number()
                 ? Percent(interval[0].get<double>()) + ", " + Percent(interval[1].get<double>())
                 : std::string("-")) +
            "], shown within its " + Fixed(NumberOr(m, "margin", kNaN) * 100, 0) + "% margin");
  }
}

void Demo::PrintAction(const Json& a) {
  const std::string detail = StringOr(a, "detail");
  const bool skipped = detail.rfind("skipped", 0) == 0;
  const std::string incident = StringOr(a, "incident", "fail");
  SayMore(std::string(skipped                ? "- "
                      : a.value("ok", false) ? "+ "
                                             : "! ") +
          StringOr(a, "kind") + (incident == "fail" ? "" : " [" + incident + "]") + ": " + detail);
}

Status Demo::ShowFleet(Outcome& result) {
  auto state = SimState();
  if (!state) return state.error();
  std::string weights;
  result.traffic_weights.clear();
  for (auto& [release, w] : (*state)["traffic_weights"].items()) {
    const double weight = w.is_number() ? w.get<double>() : kNaN;
    result.traffic_weights.emplace_back(release, weight);
    weights += (weights.empty() ? "" : ", ") + release + " " + Fixed(weight * 100, 0) + "%";
  }
  std::string nodes;
  result.cordoned.clear();
  for (const Json& n : (*state)["nodes"]) {
    const std::string host = StringOr(n, "hostname");
    if (n.value("cordoned", false)) result.cordoned.push_back(host);
    nodes += (nodes.empty() ? "" : ", ") + host + " " + StringOr(n, "release") +
             (n.value("cordoned", false) ? " CORDONED" : "") + " " +
             Fixed(NumberOr(n, "arrival_rate", kNaN), 1) + " req/s";
  }
  Say("the fleet now (simulator GET /state): traffic weights " +
      (weights.empty() ? std::string("even") : weights));
  SayMore(nodes);
  return Status::Ok();
}

}  // namespace gpucanary::demo
