// `gpucanary demo --exit`, headless, as the README's first command runs it:
// the real binary, its simulated fleet and daemon on loopback, real time.
// Checks what the demo promises (docs/demo.md): the healthy release passes
// and is promoted while a baseline node's own fault gets that node isolated,
// the faulty one fails within seconds with the right cause,
// traffic really returns to the stable release in the simulator, a bundle
// and its HTML report are written; and in the bad-node scenario the release
// is not blamed and the node is cordoned in the simulator.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DemoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpucanary-demo-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs `gpucanary demo --exit ARGS`; returns the exit code, fills out_ and
  // summary_.
  int RunDemo(const std::string& args) {
    const fs::path out = dir_ / "stdout";
    const fs::path summary = dir_ / "summary.json";
    const std::string cmd = std::string(GPUCANARY_BIN) + " demo --exit --dir " +
                            (dir_ / "demo").string() + " --summary " + summary.string() + " " +
                            args + " >" + out.string() + " 2>&1";
    const int status = std::system(cmd.c_str());
    out_ = Slurp(out);
    summary_ = Json::parse(Slurp(summary), nullptr, /*allow_exceptions=*/false);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  bool HasCause(const Json& canary, const std::string& kind, const std::string& scope) const {
    for (const Json& c : canary["causes"]) {
      if (c["kind"] == kind && c["scope"] == scope) return true;
    }
    return false;
  }

  const Json* Action(const Json& canary, const std::string& kind) const {
    for (const Json& a : canary["actions"]) {
      if (a["kind"] == kind) return &a;
    }
    return nullptr;
  }

  fs::path dir_;
  std::string out_;
  Json summary_;
};

TEST_F(DemoTest, TheDefaultDemoPromotesTheHealthyReleaseAndHaltsThePowerBrake) {
  const int code = RunDemo("");
  ASSERT_EQ(code, 0) << out_;
  ASSERT_TRUE(summary_.is_object()) << out_;
  EXPECT_TRUE(summary_["as_expected"].get<bool>()) << summary_.dump(2);

  const Json& healthy = summary_["healthy"];
  EXPECT_EQ(healthy["release"], "v1.5.0");
  EXPECT_EQ(healthy["verdict"], "pass");
  EXPECT_EQ(healthy["state"], "passed");  // promoted on its pass
  // Baseline node-2 braked on its own during that canary: named as a node
  // fault, isolated (cordoned in the simulator), the release not blamed.
  EXPECT_TRUE(HasCause(healthy, "power_brake", "node")) << healthy.dump(2);
  EXPECT_FALSE(HasCause(healthy, "power_brake", "release")) << healthy.dump(2);
  const Json* cordon = Action(healthy, "isolate_node");
  ASSERT_NE(cordon, nullptr) << healthy.dump(2);
  EXPECT_TRUE((*cordon)["ok"].get<bool>()) << cordon->dump();
  EXPECT_EQ((*cordon)["incident"], "node:node-2");
  EXPECT_NE((*cordon)["detail"].get<std::string>().find("node-2: POST"), std::string::npos)
      << cordon->dump();

  const Json& faulty = summary_["faulty"];
  EXPECT_EQ(faulty["release"], "v1.6.0");
  EXPECT_EQ(faulty["verdict"], "fail");
  EXPECT_EQ(faulty["state"], "failed");
  EXPECT_TRUE(HasCause(faulty, "power_brake", "release")) << faulty.dump(2);
  // Halted within seconds of the brake, not at the end of the canary.
  ASSERT_TRUE(faulty["decided_at"].is_number());
  for (const Json& c : faulty["causes"]) {
    if (c["kind"] != "power_brake") continue;
    EXPECT_LE(faulty["decided_at"].get<double>() - c["since"].get<double>(), 6.0) << faulty.dump(2);
  }

  // The circuit breaker: traffic back to the stable release, in the simulator.
  const Json* shift = Action(faulty, "traffic_shift");
  ASSERT_NE(shift, nullptr) << faulty.dump(2);
  EXPECT_TRUE((*shift)["ok"].get<bool>()) << shift->dump();
  EXPECT_EQ(summary_["traffic_weights"]["v1.6.0"], 0.0) << summary_.dump(2);
  EXPECT_EQ(summary_["traffic_weights"]["v1.5.0"], 1.0) << summary_.dump(2);
  const Json* isolate = Action(faulty, "isolate_node");
  ASSERT_NE(isolate, nullptr);
  EXPECT_EQ((*isolate)["detail"].get<std::string>().rfind("skipped", 0), 0U)
      << "a release fault isolates no node: " << isolate->dump();
  EXPECT_TRUE(summary_["cordoned"].empty());

  // The evidence: a bundle and its self-contained report.
  const Json* bundle = Action(faulty, "diagnostic_bundle");
  ASSERT_NE(bundle, nullptr);
  EXPECT_TRUE((*bundle)["ok"].get<bool>()) << bundle->dump();
  const fs::path report = summary_["report"].get<std::string>();
  ASSERT_TRUE(fs::exists(report)) << report;
  const std::string html = Slurp(report);
  EXPECT_NE(html.find("power_brake"), std::string::npos);
  EXPECT_EQ(html.find("<script src="), std::string::npos) << "the report must work offline";

  // And the terminal said so, as it went.
  for (const char* line :
       {"announced v1.5.0", "finding: power_brake (scope node)", "isolate_node [node:node-2]",
        "v1.5.0 PASSED", "node-2 repaired", "promoting v1.5.0", "HALT: v1.6.0 FAILED",
        "cause: power_brake", "traffic weights v1.5.0 100%",
        "report: ", "dashboard: http://127.0.0.1:"}) {
    EXPECT_NE(out_.find(line), std::string::npos) << "missing '" << line << "' in\n" << out_;
  }
}

TEST_F(DemoTest, ABadNodeIsIsolatedAndTheReleaseIsNotBlamed) {
  const int code = RunDemo("--scenario bad-node --skip-healthy");
  ASSERT_EQ(code, 0) << out_;
  ASSERT_TRUE(summary_.is_object()) << out_;
  EXPECT_TRUE(summary_["healthy"].is_null());
  const Json& canary = summary_["faulty"];
  EXPECT_NE(canary["verdict"], "fail") << canary.dump(2);
  EXPECT_TRUE(HasCause(canary, "power_brake", "node")) << canary.dump(2);
  EXPECT_FALSE(HasCause(canary, "power_brake", "release")) << canary.dump(2);
  const Json* isolate = Action(canary, "isolate_node");
  ASSERT_NE(isolate, nullptr) << canary.dump(2);
  EXPECT_TRUE((*isolate)["ok"].get<bool>());
  EXPECT_EQ((*isolate)["incident"], "node:node-2");
  EXPECT_NE((*isolate)["detail"].get<std::string>().find("node-2"), std::string::npos);
  EXPECT_EQ(summary_["cordoned"], Json::array({"node-2"})) << summary_.dump(2);
  const Json* shift = Action(canary, "traffic_shift");
  ASSERT_NE(shift, nullptr);
  EXPECT_EQ((*shift)["detail"].get<std::string>().rfind("skipped", 0), 0U) << shift->dump();
}

TEST_F(DemoTest, AnUnknownScenarioIsABadFlag) {
  const int code = RunDemo("--scenario no-such-thing");
  EXPECT_EQ(code, 3) << out_;
  EXPECT_NE(out_.find("unknown scenario 'no-such-thing' (one of: power-brake,"), std::string::npos)
      << out_;
}

TEST_F(DemoTest, AFolderWithAnEarlierDemosDataIsRefused) {
  fs::create_directories(dir_ / "demo" / "data");
  const int code = RunDemo("");
  EXPECT_EQ(code, 3) << out_;
  EXPECT_NE(out_.find("holds an earlier demo's data"), std::string::npos) << out_;
}

}  // namespace
