// The auth, releases and publish sections of the serve configuration.

#include "daemon/serve_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpucanary::daemon {
namespace {

namespace fs = std::filesystem;

std::string ErrorOf(const std::string& yaml) {
  auto c = ParseServeConfig(yaml, "serve.yaml");
  if (c) return "(parsed)";
  EXPECT_EQ(c.error().code(), StatusCode::kParseError);
  return c.error().message();
}

TEST(ServeConfigTest, DefaultsLeaveEverythingOpenAndPublishNothing) {
  auto c = ParseServeConfig("listen: 127.0.0.1:0\n", "serve.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->auth.token, "");
  EXPECT_FALSE(c->auth.protect_reads);
  EXPECT_FALSE(c->auth.protect_remote_write);
  EXPECT_EQ(c->releases.max_body_bytes, 1U << 20);
  EXPECT_EQ(c->releases.info_window_ms, 7LL * 24 * 3600 * 1000);
  EXPECT_TRUE(c->publish.empty());
  EXPECT_EQ(c->publish.timeout_ms, 5000);
  EXPECT_EQ(c->publish.attempts, 5);
}

TEST(ServeConfigTest, ReadsAuthReleasesAndPublish) {
  const fs::path dir = fs::temp_directory_path() / ("gc_serve_config_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "api.token") << "  tok-123\n";
  std::ofstream(dir / "grafana.token") << "glsa_abc\n";
  const std::string yaml =
      "auth:\n"
      "  token_file: api.token\n"
      "  protect_reads: true\n"
      "  protect_remote_write: true\n"
      "releases:\n"
      "  max_body: 64KiB\n"
      "  info_window: 2d\n"
      "publish:\n"
      "  timeout: 2s\n"
      "  attempts: 3\n"
      "  grafana:\n"
      "    url: http://grafana:3000\n"
      "    token_file: " +
      (dir / "grafana.token").string() +
      "\n"
      "    tags: [prod, gpu]\n"
      "    dashboard_uid: fleet\n"
      "  otlp:\n"
      "    endpoint: http://collector:4318\n"
      "    headers: {X-Scope-OrgID: tenant-1, Authorization: Bearer abc}\n";
  auto c = ParseServeConfig(yaml, (dir / "serve.yaml").string());
  fs::remove_all(dir);
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->auth.token, "tok-123");
  EXPECT_TRUE(c->auth.protect_reads);
  EXPECT_TRUE(c->auth.protect_remote_write);
  EXPECT_EQ(c->releases.max_body_bytes, 64U << 10);
  EXPECT_EQ(c->releases.info_window_ms, 2LL * 24 * 3600 * 1000);
  EXPECT_EQ(c->publish.timeout_ms, 2000);
  EXPECT_EQ(c->publish.attempts, 3);
  ASSERT_TRUE(c->publish.grafana.has_value());
  EXPECT_EQ(c->publish.grafana->url, "http://grafana:3000");
  EXPECT_EQ(c->publish.grafana->token, "glsa_abc");
  EXPECT_EQ(c->publish.grafana->tags, (std::vector<std::string>{"prod", "gpu"}));
  EXPECT_EQ(c->publish.grafana->dashboard_uid, "fleet");
  ASSERT_TRUE(c->publish.otlp.has_value());
  EXPECT_EQ(c->publish.otlp->endpoint, "http://collector:4318");
  EXPECT_EQ(c->publish.otlp->headers,
            (std::vector<std::pair<std::string, std::string>>{{"X-Scope-OrgID", "tenant-1"},
                                                              {"Authorization", "Bearer abc"}}));
}

TEST(ServeConfigTest, ErrorsSayWhere) {
  EXPECT_EQ(ErrorOf("auth:\n  token: a\n  token_file: b\n"),
            "serve.yaml:3:15: auth.token_file: give token or token_file, not both");
  EXPECT_EQ(ErrorOf("auth:\n  token: has space\n"),
            "serve.yaml:2:10: auth.token: a token must be printable ASCII without spaces");
  EXPECT_EQ(ErrorOf("auth:\n  token_file: /nonexistent/token\n"),
            "serve.yaml:2:15: auth.token_file: /nonexistent/token: No such file or directory");
  EXPECT_EQ(ErrorOf("auth:\n  protect_reads: true\n"),
            "serve.yaml:2:18: auth.protect_reads: needs auth.token or auth.token_file");
  EXPECT_EQ(ErrorOf("auth:\n  tokn: x\n"),
            "serve.yaml:2:3: auth.tokn: unknown field (expected one of token, token_file, "
            "protect_reads, protect_remote_write)");
  EXPECT_EQ(ErrorOf("releases:\n  max_body: lots\n"),
            "serve.yaml:2:13: releases.max_body: bad size 'lots' (1B to 64MiB)");
  EXPECT_EQ(ErrorOf("releases:\n  info_window: 7 days\n"),
            "serve.yaml:2:16: releases.info_window: bad duration '7 days' (e.g. 7d, 12h)");
  EXPECT_EQ(ErrorOf("publish:\n  grafana:\n    token: x\n"),
            "serve.yaml:3:5: publish.grafana.url: required");
  EXPECT_EQ(ErrorOf("publish:\n  grafana:\n    url: https://grafana.example.com\n"),
            "serve.yaml:3:10: publish.grafana.url: bad URL 'https://grafana.example.com': only "
            "http:// is supported");
  EXPECT_EQ(ErrorOf("publish:\n  otlp:\n    endpoint: http://c:4318\n    headers: {Host: x}\n"),
            "serve.yaml:4:15: publish.otlp.headers.Host: not a header name gpucanary may set");
  EXPECT_NE(ErrorOf("publish:\n  attempts: 0\n").find("serve.yaml:2:13: publish.attempts: "),
            std::string::npos);
}

TEST(ServeConfigTest, NvmlIsOffUnlessASectionAsksForIt) {
  auto c = ParseServeConfig("listen: 127.0.0.1:0\n", "serve.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_FALSE(c->nvml.enabled);

  c = ParseServeConfig("nvml: {}\n", "/etc/gpucanary/serve.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_TRUE(c->nvml.enabled);
  EXPECT_EQ(c->nvml.library, "libnvidia-ml.so.1");  // searched by dlopen, not resolved
  EXPECT_EQ(c->nvml.interval_ms, 1000);
  EXPECT_EQ(c->nvml.job, "nvml");
  EXPECT_TRUE(c->nvml.gpm);
  EXPECT_TRUE(c->nvml.xid_events);
  EXPECT_FALSE(c->nvml.lowercase_hostname);

  c = ParseServeConfig(
      "nvml:\n  enabled: true\n  library: lib/libnvidia-ml.so.1\n  interval: 250ms\n"
      "  hostname: node-3\n  hostname_label: hostname\n  gpm: false\n  xid_events: false\n"
      "  job: gpus\n",
      "/etc/gpucanary/serve.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_TRUE(c->nvml.enabled);
  EXPECT_EQ(c->nvml.library, "/etc/gpucanary/lib/libnvidia-ml.so.1");  // a path: relative
  EXPECT_EQ(c->nvml.interval_ms, 250);
  EXPECT_EQ(c->nvml.hostname, "node-3");
  EXPECT_TRUE(c->nvml.lowercase_hostname);
  EXPECT_FALSE(c->nvml.gpm);
  EXPECT_FALSE(c->nvml.xid_events);
  EXPECT_EQ(c->nvml.job, "gpus");

  c = ParseServeConfig("nvml: {enabled: false}\n", "serve.yaml");
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->nvml.enabled);
}

TEST(ServeConfigTest, NvmlErrorsSayWhere) {
  EXPECT_EQ(ErrorOf("nvml:\n  interval: 50ms\n"),
            "serve.yaml:2:13: nvml.interval: bad interval '50ms' (at least 100ms, NVML's GPM "
            "minimum; e.g. 1s)");
  EXPECT_EQ(ErrorOf("nvml:\n  hostname_label: HOST\n"),
            "serve.yaml:2:19: nvml.hostname_label: 'HOST' is neither Hostname (dcgm-exporter up "
            "to 4.8.2) nor hostname");
  EXPECT_EQ(ErrorOf("nvml:\n  library: \"\"\n"), "serve.yaml:2:12: nvml.library: expected a name");
  EXPECT_EQ(ErrorOf("nvml:\n  gpm: maybe\n").rfind("serve.yaml:2:8: nvml.gpm: ", 0), 0U);
  EXPECT_EQ(ErrorOf("nvml:\n  intervall: 1s\n"),
            "serve.yaml:2:3: nvml.intervall: unknown field (expected one of enabled, library, "
            "interval, hostname, hostname_label, gpm, xid_events, job)");
}

}  // namespace
}  // namespace gpucanary::daemon
