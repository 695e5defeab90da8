#include "canary/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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

TEST(CanaryConfigTest, ReadsHistoryPrometheus) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gc_canary_config_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "prom-token") << "  s3cret\n";
  const config::Reporter r{"serve.yaml"};
  const YAML::Node root = YAML::Load(
      "canary:\n"
      "  history_prometheus:\n"
      "    url: http://mimir:8080/prometheus\n"
      "    token_file: prom-token\n"
      "    headers: {X-Scope-OrgID: fleet-a}\n"
      "    timeout: 4s\n");
  CanaryOptions o;
  const Status st = ReadCanaryConfig(r, root["canary"], dir.string(), o);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(o.history_prometheus.url, "http://mimir:8080/prometheus");
  EXPECT_EQ(o.history_prometheus.client.bearer_token, "s3cret");
  ASSERT_EQ(o.history_prometheus.client.headers.size(), 1U);
  EXPECT_EQ(o.history_prometheus.client.headers[0].first, "X-Scope-OrgID");
  EXPECT_EQ(o.history_prometheus.client.headers[0].second, "fleet-a");
  EXPECT_EQ(o.history_prometheus.client.timeout_ms, 4000);
  EXPECT_EQ(o.history_prometheus.client.query_timeout_s, 4.0);

  // https, with tls_config paths relative to the configuration's folder.
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "ca.pem") << "x";
  const YAML::Node tls = YAML::Load(
      "canary:\n"
      "  history_prometheus:\n"
      "    url: https://mimir:8443/prometheus\n"
      "    tls_config: {ca_file: ca.pem, server_name: mimir.internal}\n");
  CanaryOptions with_tls;
  const Status tls_st = ReadCanaryConfig(r, tls["canary"], dir.string(), with_tls);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(tls_st.ok()) << tls_st.ToString();
  EXPECT_EQ(with_tls.history_prometheus.client.tls.ca_file, (dir / "ca.pem").string());
  EXPECT_EQ(with_tls.history_prometheus.client.tls.server_name, "mimir.internal");

  // Off unless configured; 10 s per exchange by default.
  auto plain = Read("canary:\n  history_prometheus: {url: \"http://prom:9090\", token: abc}\n");
  ASSERT_TRUE(plain.has_value()) << plain.error().ToString();
  EXPECT_EQ(plain->history_prometheus.client.bearer_token, "abc");
  EXPECT_EQ(plain->history_prometheus.client.timeout_ms, 10000);
  auto none = Read("canary:\n  history: 1m\n");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->history_prometheus.url.empty());
}

TEST(CanaryConfigTest, HistoryPrometheusErrorsSayWhere) {
  const auto error = [](const std::string& yaml) {
    auto o = Read(yaml);
    return o.has_value() ? std::string("(no error)") : o.error().message();
  };
  EXPECT_EQ(error("canary:\n  history_prometheus: {token: x}\n"),
            "serve.yaml:2:23: canary.history_prometheus.url: required");
  EXPECT_EQ(error("canary:\n  history_prometheus:\n    url: ftp://prom:9090\n"),
            "serve.yaml:3:10: canary.history_prometheus.url: bad URL 'ftp://prom:9090': only "
            "http:// and https:// are supported");
  EXPECT_EQ(error("canary:\n  history_prometheus:\n    url: https://p\n    tls_config:\n"
                  "      cert_file: /nonexistent/c.pem\n"),
            "serve.yaml:5:18: canary.history_prometheus.tls_config.cert_file: cannot read "
            "'/nonexistent/c.pem': No such file or directory");
  EXPECT_EQ(error("canary:\n  history_prometheus:\n    url: http://p\n    token: a\n"
                  "    token_file: b\n"),
            "serve.yaml:5:17: canary.history_prometheus.token_file: give token or token_file, "
            "not both");
  EXPECT_EQ(error("canary:\n  history_prometheus:\n    url: http://p\n    timeout: 0s\n"),
            "serve.yaml:4:14: canary.history_prometheus.timeout: must be between 1 s and 600 s");
  EXPECT_EQ(
      error("canary:\n  history_prometheus:\n    url: http://p\n    headers: {Host: x}\n"),
      "serve.yaml:4:15: canary.history_prometheus.headers.Host: not a header name gpucanary may "
      "set");
  EXPECT_EQ(error("canary:\n  history_prometheus:\n    url: http://p\n    tenant: x\n")
                .rfind("serve.yaml:4:5: ", 0),
            0U)
      << error("canary:\n  history_prometheus:\n    url: http://p\n    tenant: x\n");
}

}  // namespace
}  // namespace gpucanary::canary
