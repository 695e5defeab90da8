// The circuit breaker against the real fleet simulator's control API
// (docs/simulator.md, "Live mode and the control API"): traffic_shift and
// isolate_node must drive it as the docs say, and the fleet must follow.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "actions/runner.h"
#include "core/clock.h"
#include "net/http_client.h"
#include "sim/live.h"
#include "sim/scenario.h"

namespace gpucanary::actions {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kFleet = R"(
seed: 5
duration: 600s
fleet:
  - {nodes: "node-[1-3]", gpu: h100-sxm}
releases:
  stable: {profile: baseline}
  next: {profile: baseline}
traffic: {rps: 90}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 1s, deploy: next, nodes: [node-2]}
)";

class SimControlTest : public ::testing::Test {
 protected:
  SimControlTest() : clock_(1764680000000) {}

  void SetUp() override {
    Result<sim::Scenario> s = sim::ParseScenario(kFleet, "fleet.yaml");
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    sim::LiveOptions options;
    options.base_port = 0;
    options.control_port = 0;
    live_ = std::make_unique<sim::LiveSim>(*s, sim::EngineOptions{}, options, clock_);
    ASSERT_TRUE(live_->Start().ok());
    Advance(15000);  // node-2 has restarted on "next"
  }

  void Advance(std::int64_t ms) {
    clock_.Advance(ms);
    const std::int64_t target = clock_.NowMs();
    for (int i = 0; i < 5000; ++i) {
      if (live_->WithEngine([](sim::Engine& e) { return e.now_ms(); }) + 100 > target) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    FAIL() << "the engine did not catch up with the clock";
  }

  std::string ControlUrl() const {
    return "http://127.0.0.1:" + std::to_string(live_->control_port());
  }

  Json State() {
    auto r = net::Fetch(ControlUrl() + "/state");
    EXPECT_TRUE(r.has_value());
    return r ? Json::parse(r->body) : Json();
  }

  ManualClock clock_;
  std::unique_ptr<sim::LiveSim> live_;
};

TEST_F(SimControlTest, TrafficShiftAndIsolateNodeDriveTheFleet) {
  Json before = State();
  ASSERT_EQ(before["nodes"][1]["release"], "next");
  EXPECT_GT(before["nodes"][1]["arrival_rate"].get<double>(), 0);
  EXPECT_FALSE(before["nodes"][2]["cordoned"].get<bool>());

  ActionConfig shift;
  shift.name = "shift";
  shift.kind = ActionKind::kTrafficShift;
  shift.scope = ScopeFilter::kRelease;
  shift.url = ControlUrl();
  ActionConfig isolate;
  isolate.name = "isolate";
  isolate.kind = ActionKind::kIsolateNode;
  isolate.scope = ScopeFilter::kNode;
  isolate.url = ControlUrl();
  RunnerOptions options;
  options.actions = {shift, isolate};
  Runner runner(std::move(options));

  Incident incident;
  incident.release = {"next", "chat-api", R"({"id": "next", "previous": "stable"})"};
  incident.canary_id = "canary-next";
  incident.causes = {
      {vocab::CauseKind::kPowerBrake,
       vocab::Scope::kRelease,
       "node-2",
       {"node-2/0"},
       "HW power brake on node-2/0"},
      {vocab::CauseKind::kXidErrors,
       vocab::Scope::kNode,
       "node-3",
       {"node-3/5"},
       "XID 79 on node-3/5"},
  };
  incident.canary_nodes = {"node-2"};
  incident.baseline_nodes = {"node-1", "node-3"};
  ASSERT_TRUE(runner.Run(incident).started);
  const auto outcomes = runner.Wait("canary-next");
  ASSERT_EQ(outcomes.size(), 2U);
  EXPECT_TRUE(outcomes[0].ok) << outcomes[0].detail << " " << outcomes[0].output;
  EXPECT_TRUE(outcomes[1].ok) << outcomes[1].detail << " " << outcomes[1].output;
  EXPECT_EQ(outcomes[1].attempts, 1);  // node-3 only: node-2's cause is the release's

  Advance(500);
  const Json after = State();
  EXPECT_EQ(after["traffic_weights"]["stable"].get<double>(), 1);
  EXPECT_EQ(after["traffic_weights"]["next"].get<double>(), 0);
  EXPECT_EQ(after["nodes"][1]["arrival_rate"].get<double>(), 0);  // "next" gets no traffic
  EXPECT_FALSE(after["nodes"][1]["cordoned"].get<bool>());
  EXPECT_TRUE(after["nodes"][2]["cordoned"].get<bool>());
  EXPECT_EQ(after["nodes"][2]["arrival_rate"].get<double>(), 0);
  EXPECT_GT(after["nodes"][0]["arrival_rate"].get<double>(), 0);
}

}  // namespace
}  // namespace gpucanary::actions
