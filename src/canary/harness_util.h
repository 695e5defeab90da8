#pragma once
// What the Flagger and Argo Rollouts harnesses share (flagger_harness_test.cc,
// argo_harness_test.cc): the YAML examples of docs/ci-cd.md, read from the
// page, and a fixture with live canaries on the power-brake fleet (its
// recording in a store, a manager judging every second, the canary API).
// Header-only; for tests.

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "canary/api.h"
#include "canary/test_util.h"

namespace gpucanary::canary::testing {

// docs/ci-cd.md, whole.
inline std::string CiCdPage() {
  std::ifstream in(std::string(GPUCANARY_SOURCE_DIR) + "/docs/ci-cd.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The ```yaml block after the page's `<!-- marker` comment.
inline YAML::Node YamlAfter(const std::string& marker) {
  const std::string page = CiCdPage();
  const std::size_t at = page.find("<!-- " + marker);
  EXPECT_NE(at, std::string::npos) << marker;
  const std::size_t open = page.find("```yaml\n", at);
  const std::size_t close = page.find("```", open + 8);
  EXPECT_NE(close, std::string::npos) << marker;
  return YAML::Load(page.substr(open + 8, close - open - 8));
}

// Live canaries on kPowerBrakeScenario's recording, the clock at +20 s (the
// power-brake release's start); NewManager(duration) replaces the manager
// and the API with canaries judged for `duration_s`; every log line is kept.
class LiveCanaryFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gc_live_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    store_ = std::move(*store::Store::Open(dir_ / "data", {}));
    meta_ = std::move(*store::MetaDb::Open(dir_ / "data" / "meta.sqlite"));
    LoadRecording(PowerBrakeRecording(), *store_);
  }
  void TearDown() override {
    api_.reset();
    manager_.reset();
    meta_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void NewManager(std::int64_t duration_s) {
    api_.reset();
    manager_.reset();
    CanaryOptions options;
    options.policy = analysis::DefaultPolicy();
    options.history_s = 15;
    options.duration_s = duration_s;
    options.baseline_nodes = 3;
    CanaryHooks hooks;
    hooks.log = [this](std::string_view line) { log_.emplace_back(line); };
    manager_ = std::make_unique<CanaryManager>(*store_, *meta_, clock_, options, hooks);
    api_ = std::make_unique<CanaryApi>(*manager_, *meta_, hooks.log);
  }
  // Advances the clock `seconds`, the canaries judged every second.
  void Judge(std::int64_t seconds) {
    for (std::int64_t s = 0; s < seconds; ++s) {
      clock_.Advance(1000);
      manager_->Poll();
    }
  }

  std::filesystem::path dir_;
  ManualClock clock_{(kSimStart + 20) * 1000};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::MetaDb> meta_;
  std::unique_ptr<CanaryManager> manager_;
  std::unique_ptr<CanaryApi> api_;
  std::vector<std::string> log_;
};

}  // namespace gpucanary::canary::testing
