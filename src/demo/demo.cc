// `gpucanary demo`'s story (docs/demo.md, "What it does"): history, the
// healthy release rolled out and promoted while a baseline node gets a
// fault of its own, the faulty release halted, the HTML report, and whether
// all of it went as the scenario promised. demo_internal.h lists the files
// that hold the steps.

#include "demo/demo.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "demo/demo_internal.h"
#include "report/html_report.h"
#include "vocab/vocab.h"

namespace gpucanary::demo {

namespace fs = std::filesystem;

gpucanary::Result<Outcome> Demo::Run() {
  GC_RETURN_IF_ERROR(Setup());
  Outcome result;
  result.dir = dir_;
  result.dashboard_url = api_ + "/";
  PrintBanner();
  GC_RETURN_IF_ERROR(WaitForHistory());

  std::string stable = kStable;
  if (options_.healthy_first) GC_RETURN_IF_ERROR(RollOutHealthy(result, stable));
  GC_RETURN_IF_ERROR(RollOutFaulty(result, stable));
  GC_RETURN_IF_ERROR(ShowFleet(result));

  std::string report_problem;
  GC_RETURN_IF_ERROR(WriteReport(result, &report_problem));
  Check(result);
  if (!report_problem.empty()) {
    result.problems.push_back(report_problem);
    result.as_expected = false;
  }
  Conclude(result, stable);
  std::ofstream(dir_ / "summary.json") << OutcomeToJson(result) << "\n";
  if (!options_.exit_after_verdict) {
    Say("the fleet and gpucanary keep running for the dashboard; Ctrl-C ends the demo");
    WaitForInterrupt();
  }
  Shutdown();
  return result;
}

// The healthy release to the canary node; 12 s into its canary, baseline
// node-2 gets a fault of its own. Once the judge has decided, node-2 is
// repaired, and the release promoted to every node when it passed (it is
// then `stable`), else taken back.
Status Demo::RollOutHealthy(Outcome& result, std::string& stable) {
  Say(std::string("deploying ") + kHealthy + " (a new checkpoint, nothing harmful) to " +
      kCanaryNode + " through the simulator's control API (POST /deploy); while its canary " +
      "runs, baseline " + kFaultyBaselineNode + " will get a fault of its own");
  GC_RETURN_IF_ERROR(Deploy(kHealthy, {kCanaryNode}));
  GC_RETURN_IF_ERROR(WaitServing(kHealthy, {kCanaryNode}));
  auto canary = Announce(kHealthy, kStable, "bf16", "a new checkpoint (ckpt-18000)");
  if (!canary) return canary.error();
  auto done = FollowCanary(StringOr(*canary, "id"), /*stop_on_pass=*/true,
                           /*inject_node_fault=*/true);
  if (!done) return done.error();
  PrintVerdict(*done);
  result.healthy = Seen(*done);
  GC_RETURN_IF_ERROR(RepairNode());
  if (result.healthy->verdict == vocab::Verdict::kPass) {
    Say(std::string("promoting ") + kHealthy + " to every node (rolling restart, " +
        Fixed(kRestartSeconds, 0) + " s a node)");
    GC_RETURN_IF_ERROR(Deploy(kHealthy, {}));
    GC_RETURN_IF_ERROR(WaitServing(kHealthy, {}));
    Say(std::string(kHealthy) + " serves on every node; it is the stable release now");
    stable = kHealthy;
  } else {
    Say(std::string(kHealthy) + " did not pass; the demo goes on from " + kStable);
    GC_RETURN_IF_ERROR(Deploy(kStable, {kCanaryNode}));
    GC_RETURN_IF_ERROR(WaitServing(kStable, {kCanaryNode}));
  }
  return Sleep(5);  // a few seconds of the stable fleet as history
}

// The operators repair the node before the next release.
Status Demo::RepairNode() {
  for (const auto& [path, body] : std::vector<std::pair<std::string, std::string>>{
           {"/faults/clear", R"({"kind": "power_brake", "nodes": ["node-2"]})"},
           {"/uncordon", R"({"node": "node-2"})"}}) {
    auto r = Call("POST", control_ + path, body);
    if (!r) return r.error();
  }
  Say(std::string(kFaultyBaselineNode) +
      " repaired (power supply swapped): fault cleared (POST /faults/clear), back in service "
      "(POST /uncordon)");
  return Status::Ok();
}

// The scenario's release to the canary node, followed until the judge
// decides (bad-node: until it passes, with the node's fault injected), and
// then until the circuit breaker's actions are recorded.
Status Demo::RollOutFaulty(Outcome& result, const std::string& stable) {
  Say(std::string("deploying ") + kFaulty + " (" + scenario_.change + ") to " + kCanaryNode);
  GC_RETURN_IF_ERROR(Deploy(kFaulty, {kCanaryNode}));
  GC_RETURN_IF_ERROR(WaitServing(kFaulty, {kCanaryNode}));
  auto canary = Announce(kFaulty, stable, scenario_.quantization, scenario_.change);
  if (!canary) return canary.error();
  const std::string id = StringOr(*canary, "id");
  const bool node_fault = !scenario_.node_fault.empty();
  auto done = FollowCanary(id, /*stop_on_pass=*/node_fault, node_fault);
  if (!done) return done.error();
  PrintVerdict(*done);
  Json final_canary = *done;
  if (WordAt<vocab::Verdict>((*done)["report"], "verdict") == vocab::Verdict::kFail || node_fault) {
    auto acted = WaitForActions(id, kConfiguredActions);
    if (!acted) return acted.error();
    final_canary = *acted;
    PrintNews(final_canary);
  }
  result.faulty = Seen(final_canary);
  return Status::Ok();
}

// The HTML report of the faulty canary's diagnostic bundle, next to the
// demo's files. A bundle that cannot be rendered is a problem (`problem`),
// not an error; writing the report is.
Status Demo::WriteReport(Outcome& result, std::string* problem) {
  for (const ActionSeen& a : result.faulty.actions) {
    if (a.kind != "diagnostic_bundle" || !a.ok) continue;
    const std::string prefix = "wrote ";
    const auto end = a.detail.find(" (");
    if (a.detail.rfind(prefix, 0) != 0 || end == std::string::npos) continue;
    const fs::path bundle = a.detail.substr(prefix.size(), end - prefix.size());
    auto html = report::RenderHtmlReport(bundle);
    if (!html) {
      *problem =
          "the report of " + bundle.string() + " could not be made: " + html.error().message();
      Say(*problem);
      continue;
    }
    result.report = dir_ / ("report-" + result.faulty.release + ".html");
    GC_RETURN_IF_ERROR(WriteFile(result.report, *html));
    Say("report: " + result.report.string() + " (`gpucanary report " + bundle.string() +
        "` makes it; open it in a browser, it works offline)");
    break;
  }
  return Status::Ok();
}

void Demo::Conclude(const Outcome& result, const std::string& stable) {
  if (result.as_expected) {
    Say("as expected: " +
        std::string(scenario_.expect_verdict == ExpectedVerdict::kFail
                        ? "the faulty release was halted and its traffic sent back to " + stable
                        : std::string("the release was not blamed and the bad node was isolated")));
  } else {
    for (const std::string& p : result.problems) Say("NOT AS EXPECTED: " + p);
  }
  Say("dashboard: " + result.dashboard_url);
}

void Demo::WaitForInterrupt() const {
  while (!Interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

gpucanary::Result<Outcome> Run(const Options& options, std::ostream& out) {
  const Scenario* scenario = FindScenario(options.scenario);
  if (scenario == nullptr) {
    std::string names;
    for (const Scenario& s : Scenarios()) names += (names.empty() ? "" : ", ") + s.name;
    return Error(StatusCode::kInvalidArgument,
                 "unknown scenario '" + options.scenario + "' (one of: " + names + ")");
  }
  Demo demo(options, *scenario, out);
  return demo.Run();
}

}  // namespace gpucanary::demo
