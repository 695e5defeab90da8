#include "canary/config.h"

#include <gtest/gtest.h>

#include <string>

namespace gpucanary::canary {
namespace {

Result<CanaryOptions> Read(const std::string& yaml) {
  const config::Reporter r{"serve.yaml"};
  const YAML::Node root = YAML::Load(yaml);
  CanaryOptions options;
  if (Status st = ReadCanaryConfig(r, root["canary"], "", options); !st.ok()) return Error(st);
  return options;
}

TEST(CanaryConfigTest, ReadsEveryField) {
  auto o = Read("canary:\n  history: 2m\n  duration: 15m\n  baseline_nodes: 2\n  lag: 1500ms\n");
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  EXPECT_EQ(o->history_s, 120);
  EXPECT_EQ(o->duration_s, 900);
  EXPECT_EQ(o->baseline_nodes, 2);
  EXPECT_EQ(o->lag_ms, 1500);
  EXPECT_FALSE(o->policy.metrics.empty());  // the built-in default policy
}

TEST(CanaryConfigTest, ErrorsSayWhere) {
  auto o = Read("canary:\n  duration: 5s\n");
  ASSERT_FALSE(o.has_value());
  EXPECT_EQ(o.error().message(),
            "serve.yaml:2:13: canary.duration: must be between 10 s and 604800 s");
  o = Read("canary:\n  baseline: 3\n");
  ASSERT_FALSE(o.has_value());
  EXPECT_NE(o.error().message().find("serve.yaml:2:3"), std::string::npos) << o.error().message();
  o = Read("canary:\n  policy: /nonexistent/policy.yaml\n");
  ASSERT_FALSE(o.has_value());
  EXPECT_NE(o.error().message().find("serve.yaml:2:11: canary.policy: "), std::string::npos)
      << o.error().message();
}

}  // namespace
}  // namespace gpucanary::canary
