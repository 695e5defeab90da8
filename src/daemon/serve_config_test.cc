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
  EXPECT_FALSE(c->auth.enabled());
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
  std::ofstream(dir / "api.token.ci") << "ci-77\n";
  std::ofstream(dir / "grafana.token") << "glsa_abc\n";
  const std::string yaml =
      "auth:\n"
      "  token_file: api.token\n"
      "  protect_reads: true\n"
      "  tokens:\n"
      "    - {name: grafana, scope: read, token: ro-9}\n"
      "    - {scope: write, token_file: api.token.ci}\n"
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
  ASSERT_EQ(c->auth.tokens.size(), 3U);
  EXPECT_EQ(c->auth.tokens[0].name, "default");
  EXPECT_EQ(c->auth.tokens[0].scope, TokenScope::kAdmin);
  EXPECT_EQ(c->auth.tokens[0].token, "tok-123");
  EXPECT_EQ(c->auth.tokens[1].name, "grafana");
  EXPECT_EQ(c->auth.tokens[1].scope, TokenScope::kRead);
  EXPECT_EQ(c->auth.tokens[1].token, "ro-9");
  EXPECT_EQ(c->auth.tokens[2].name, "auth.tokens[1]");
  EXPECT_EQ(c->auth.tokens[2].scope, TokenScope::kWrite);
  EXPECT_EQ(c->auth.tokens[2].token, "ci-77");
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

// HTTPS: the listener's tls_server_config (Prometheus's web config names)
// and the publishers' tls_config, paths relative to the file.
TEST(ServeConfigTest, ReadsTlsSections) {
  const fs::path dir = fs::temp_directory_path() / ("gc_serve_tls_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : {"tls.crt", "tls.key", "clients.pem", "ca.pem"}) {
    std::ofstream(dir / name) << "x";
  }
  auto c = ParseServeConfig(
      "listen: 0.0.0.0:9464\n"
      "tls_server_config:\n"
      "  cert_file: tls.crt\n"
      "  key_file: tls.key\n"
      "  client_ca_file: clients.pem\n"
      "  client_auth_type: VerifyClientCertIfGiven\n"
      "publish:\n"
      "  grafana: {url: 'https://grafana:3000', tls_config: {ca_file: ca.pem}}\n"
      "  otlp: {endpoint: 'https://c:4318', tls_config: {insecure_skip_verify: true}}\n",
      (dir / "serve.yaml").string());
  fs::remove_all(dir);
  ASSERT_TRUE(c) << c.error().ToString();
  ASSERT_TRUE(c->tls_server.has_value());
  EXPECT_EQ(c->tls_server->cert_file, (dir / "tls.crt").string());
  EXPECT_EQ(c->tls_server->key_file, (dir / "tls.key").string());
  EXPECT_EQ(c->tls_server->client_ca_file, (dir / "clients.pem").string());
  EXPECT_EQ(c->tls_server->client_auth, net::ClientAuth::kVerifyClientCertIfGiven);
  EXPECT_EQ(c->publish.grafana->tls.ca_file, (dir / "ca.pem").string());
  EXPECT_TRUE(c->publish.otlp->tls.insecure_skip_verify);
  EXPECT_FALSE(ParseServeConfig("listen: 127.0.0.1:1\n", "s.yaml")->tls_server.has_value());
}

TEST(ServeConfigTest, ErrorsSayWhere) {
  EXPECT_EQ(ErrorOf("auth:\n  token: a\n  token_file: b\n"),
            "serve.yaml:3:15: auth.token_file: give token or token_file, not both");
  EXPECT_EQ(ErrorOf("auth:\n  token: has space\n"),
            "serve.yaml:2:10: auth.token: a token must be printable ASCII without spaces");
  EXPECT_EQ(ErrorOf("auth:\n  token_file: /nonexistent/token\n"),
            "serve.yaml:2:15: auth.token_file: /nonexistent/token: No such file or directory");
  EXPECT_EQ(ErrorOf("auth:\n  protect_reads: true\n"),
            "serve.yaml:2:18: auth.protect_reads: needs auth.token or auth.tokens");
  EXPECT_EQ(ErrorOf("auth:\n  token: a\n  protect_remote_write: false\n"),
            "serve.yaml:3:25: auth.protect_remote_write: cannot be false: with a token configured "
            "every read and write needs one; give read-only clients a token with scope: read "
            "(auth.tokens)");
  EXPECT_EQ(ErrorOf("auth:\n  tokn: x\n"),
            "serve.yaml:2:3: auth.tokn: unknown field (expected one of token, token_file, "
            "tokens, protect_reads, protect_remote_write)");
  EXPECT_EQ(ErrorOf("auth:\n  tokens: {scope: read}\n"),
            "serve.yaml:2:11: auth.tokens: expected a list of tokens");
  EXPECT_EQ(ErrorOf("auth:\n  tokens:\n    - {token: x}\n"),
            "serve.yaml:3:7: auth.tokens[0].scope: missing (read, write or admin)");
  EXPECT_EQ(ErrorOf("auth:\n  tokens:\n    - {scope: root, token: x}\n"),
            "serve.yaml:3:15: auth.tokens[0].scope: unknown scope 'root' (read, write or admin)");
  EXPECT_EQ(ErrorOf("auth:\n  tokens:\n    - {scope: read}\n"),
            "serve.yaml:3:7: auth.tokens[0].token: missing (token or token_file)");
  EXPECT_EQ(
      ErrorOf("auth:\n  token: same\n  tokens:\n    - {name: ro, scope: read, token: same}\n"),
      "serve.yaml:4:38: ro: the same token as default: each token needs its own value (its "
      "scope decides what it may do)");
  EXPECT_EQ(ErrorOf("releases:\n  max_body: lots\n"),
            "serve.yaml:2:13: releases.max_body: bad size 'lots' (1B to 64MiB)");
  EXPECT_EQ(ErrorOf("releases:\n  info_window: 7 days\n"),
            "serve.yaml:2:16: releases.info_window: bad duration '7 days' (e.g. 7d, 12h)");
  EXPECT_EQ(ErrorOf("publish:\n  grafana:\n    token: x\n"),
            "serve.yaml:3:5: publish.grafana.url: required");
  EXPECT_EQ(ErrorOf("publish:\n  grafana:\n    url: ftp://grafana.example.com\n"),
            "serve.yaml:3:10: publish.grafana.url: bad URL 'ftp://grafana.example.com': only "
            "http:// and https:// are supported");
  EXPECT_EQ(ErrorOf("publish:\n  grafana:\n    url: https://g\n    tls_config: {ca_file: "
                    "/nonexistent/ca.pem}\n"),
            "serve.yaml:4:27: publish.grafana.tls_config.ca_file: cannot read "
            "'/nonexistent/ca.pem': No such file or directory");
  EXPECT_EQ(ErrorOf("publish:\n  otlp:\n    endpoint: https://c:4318\n    tls_config: "
                    "{insecure_skip_verify: yes please}\n"),
            "serve.yaml:4:40: publish.otlp.tls_config.insecure_skip_verify: expected true or "
            "false");
  EXPECT_EQ(ErrorOf("tls_server_config:\n  key_file: /nonexistent/k\n"),
            "serve.yaml:2:13: tls_server_config.key_file: cannot read '/nonexistent/k': No such "
            "file or directory");
  EXPECT_EQ(ErrorOf("tls_server_config: {}\n"),
            "serve.yaml:1:20: tls_server_config.cert_file: required");
  EXPECT_EQ(ErrorOf("publish:\n  otlp:\n    endpoint: http://c:4318\n    headers: {Host: x}\n"),
            "serve.yaml:4:15: publish.otlp.headers.Host: not a header name gpucanary may set");
  EXPECT_NE(ErrorOf("publish:\n  attempts: 0\n").find("serve.yaml:2:13: publish.attempts: "),
            std::string::npos);
}

TEST(ServeConfigTest, ReadsRemoteWriteOutWithPrometheusKeys) {
  const fs::path dir = fs::temp_directory_path() / ("gc_rwout_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "mimir.token") << "s3cret\n";
  std::ofstream(dir / "pw") << "p ss\n";
  auto c = ParseServeConfig(
      "remote_write_out:\n"
      "  - url: http://mimir:9009/api/v1/push\n"
      "    name: central\n"
      "    remote_timeout: 10s\n"
      "    headers: {X-Scope-OrgID: gpu-fleet}\n"
      "    authorization: {credentials_file: mimir.token}\n"
      "    write_relabel_configs:\n"
      "      - {source_labels: [__name__], regex: 'DCGM_FI_PROF_.*', action: drop}\n"
      "    queue_config: {shards: 8, capacity: 5000, max_samples_per_send: 500,\n"
      "                   batch_send_deadline: 2s, min_backoff: 100ms, max_backoff: 10s,\n"
      "                   retry_on_http_429: false, max_backlog: 2GiB}\n"
      "    metadata_config: {send: false, send_interval: 5m}\n"
      "  - url: https://prom:9090/api/v1/write\n"
      "    basic_auth: {username: gc, password_file: pw}\n",
      (dir / "serve.yaml").string());
  fs::remove_all(dir);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  ASSERT_EQ(c->remote_write_out.size(), 2U);
  const remote::SenderConfig& a = c->remote_write_out[0];
  EXPECT_EQ(a.name, "central");
  EXPECT_EQ(a.url, "http://mimir:9009/api/v1/push");
  EXPECT_EQ(a.timeout_ms, 10000);
  ASSERT_EQ(a.headers.size(), 1U);
  EXPECT_EQ(a.headers[0].first, "X-Scope-OrgID");
  EXPECT_EQ(a.authorization, "Bearer s3cret");
  ASSERT_EQ(a.write_relabel.size(), 1U);
  EXPECT_EQ(a.write_relabel[0].config().action, model::RelabelAction::kDrop);
  EXPECT_EQ(a.queue.shards, 8);
  EXPECT_EQ(a.queue.capacity, 5000U);
  EXPECT_EQ(a.queue.max_samples_per_send, 500U);
  EXPECT_EQ(a.queue.batch_send_deadline_ms, 2000);
  EXPECT_EQ(a.queue.min_backoff_ms, 100);
  EXPECT_EQ(a.queue.max_backoff_ms, 10000);
  EXPECT_FALSE(a.queue.retry_on_http_429);
  EXPECT_EQ(a.queue.max_backlog_bytes, 2ULL << 30);
  EXPECT_FALSE(a.metadata.send);
  EXPECT_EQ(a.metadata.send_interval_ms, 300000);
  const remote::SenderConfig& b = c->remote_write_out[1];
  EXPECT_EQ(b.name, "rw1");
  EXPECT_EQ(b.authorization, "Basic Z2M6cCBzcw==");  // base64("gc:p ss")
  EXPECT_EQ(b.queue.shards, 4);                      // the defaults
  EXPECT_TRUE(b.queue.retry_on_http_429);
  EXPECT_TRUE(b.metadata.send);
}

TEST(ServeConfigTest, RemoteWriteOutErrorsSayWhere) {
  EXPECT_EQ(ErrorOf("remote_write_out: {url: http://x/}\n"),
            "serve.yaml:1:19: remote_write_out: expected a list of receivers (- url: ...)");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - name: a\n"),
            "serve.yaml:2:5: remote_write_out[0].url: required");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - url: ftp://x/\n"),
            "serve.yaml:2:10: remote_write_out[0].url: bad URL 'ftp://x/': only http:// and "
            "https:// are supported");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - url: http://x/\n    queue: {}\n"),
            "serve.yaml:3:5: remote_write_out[0].queue: unknown field (expected one of url, "
            "name, remote_timeout, headers, tls_config, authorization, basic_auth, "
            "write_relabel_configs, queue_config, metadata_config)");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - url: http://x/\n    queue_config: {shards: 0}\n"),
            "serve.yaml:3:28: remote_write_out[0].queue_config.shards: must be in 1..200");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - url: http://x/\n"
                    "    queue_config: {min_backoff: 10s, max_backoff: 1s}\n"),
            "serve.yaml:3:33: remote_write_out[0].queue_config.min_backoff: min_backoff (10000 "
            "ms) is above max_backoff (1000 ms)");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - url: http://x/\n    remote_timeout: 5 s\n"),
            "serve.yaml:3:21: remote_write_out[0].remote_timeout: bad duration '5 s' (e.g. 30s, "
            "5m, 250ms)");
  EXPECT_EQ(
      ErrorOf("remote_write_out:\n  - url: http://x/\n    queue_config: {max_backlog: 10KB}\n"),
      "serve.yaml:3:33: remote_write_out[0].queue_config.max_backlog: bad size '10KB' "
      "(e.g. 1GiB, 500MB; at least 1MiB)");
  EXPECT_EQ(
      ErrorOf("remote_write_out:\n  - url: http://x/\n    headers: {Content-Encoding: gzip}\n"),
      "serve.yaml:3:15: remote_write_out[0].headers.Content-Encoding: not a header name "
      "gpucanary may set");
  EXPECT_EQ(
      ErrorOf("remote_write_out:\n  - {url: http://x/, name: a}\n  - {url: http://y/, name: a}\n"),
      "serve.yaml:3:28: remote_write_out[1].name: 'a' names another remote_write_out entry "
      "too");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - {url: http://x/, name: ../up}\n"),
            "serve.yaml:2:28: remote_write_out[0].name: '../up': 1 to 64 of A-Z a-z 0-9 _ - . (it "
            "names a folder)");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - url: http://x/\n    authorization: {credentials: a}\n"
                    "    basic_auth: {username: u}\n"),
            "serve.yaml:4:17: remote_write_out[0].basic_auth: give authorization or basic_auth, "
            "not both");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - url: http://x/\n    authorization: {type: Bearer}\n"),
            "serve.yaml:3:20: remote_write_out[0].authorization.credentials: credentials or "
            "credentials_file required");
  EXPECT_EQ(ErrorOf("remote_write_out:\n  - url: http://x/\n    write_relabel_configs:\n"
                    "      - {action: hashmod}\n"),
            ErrorOf("remote_write_out:\n  - url: http://x/\n    write_relabel_configs:\n"
                    "      - {action: hashmod}\n"));
  EXPECT_NE(ErrorOf("remote_write_out:\n  - url: http://x/\n    write_relabel_configs:\n"
                    "      - {action: hashmod}\n")
                .find("serve.yaml:4:"),
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

// storage.max_series and remote_write's window and label limits (issue 22).
TEST(ServeConfigTest, ReadsTheSeriesLimitAndRemoteWriteLimits) {
  auto defaults = ParseServeConfig("listen: 127.0.0.1:0\n", "serve.yaml");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message();
  EXPECT_EQ(defaults->max_series, 2'000'000U);
  const RemoteWriteLimits& d = defaults->remote_write_limits;
  EXPECT_EQ(d.creation_grace_period_ms, 10 * 60 * 1000);
  EXPECT_EQ(d.past_grace_period_ms, defaults->retention_ms);  // 15d
  EXPECT_EQ(d.label_limit, 64U);
  EXPECT_EQ(d.label_name_length_limit, 256U);
  EXPECT_EQ(d.label_value_length_limit, 2048U);
  EXPECT_EQ(d.max_series_per_tenant, 150'000U);

  // The past bound follows storage.retention unless set.
  auto retention = ParseServeConfig("storage:\n  retention: 2d\n", "serve.yaml");
  ASSERT_TRUE(retention.has_value()) << retention.error().message();
  EXPECT_EQ(retention->remote_write_limits.past_grace_period_ms, 2LL * 24 * 3600 * 1000);

  auto c = ParseServeConfig(
      "storage:\n  retention: 30d\n  max_series: 500000\n"
      "remote_write:\n  creation_grace_period: 1m\n  past_grace_period: 0\n"
      "  label_limit: 30\n  label_name_length_limit: 100\n  label_value_length_limit: 0\n"
      "  max_series_per_tenant: 0\n",
      "serve.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->max_series, 500'000U);
  EXPECT_EQ(c->remote_write_limits.creation_grace_period_ms, 60'000);
  EXPECT_EQ(c->remote_write_limits.past_grace_period_ms, 0);
  EXPECT_EQ(c->remote_write_limits.label_limit, 30U);
  EXPECT_EQ(c->remote_write_limits.label_name_length_limit, 100U);
  EXPECT_EQ(c->remote_write_limits.label_value_length_limit, 0U);
  EXPECT_EQ(c->remote_write_limits.max_series_per_tenant, 0U);

  EXPECT_EQ(ErrorOf("storage:\n  max_series: 0\n"),
            "serve.yaml:2:15: storage.max_series: must be in 1..1000000000");
  EXPECT_EQ(ErrorOf("remote_write:\n  creation_grace_period: 0\n"),
            "serve.yaml:2:26: remote_write.creation_grace_period: bad duration '0' (e.g. 10m, 1h)");
  EXPECT_EQ(ErrorOf("remote_write:\n  past_grace_period: 1 day\n"),
            "serve.yaml:2:22: remote_write.past_grace_period: bad duration '1 day' (e.g. 10m, 1h; "
            "0: no bound)");
  EXPECT_EQ(ErrorOf("remote_write:\n  label_limit: -1\n"),
            "serve.yaml:2:16: remote_write.label_limit: must be in 0..2147483647");
  EXPECT_EQ(ErrorOf("remote_write:\n  max_series_per_tenant: lots\n"),
            "serve.yaml:2:26: remote_write.max_series_per_tenant: expected an integer");
  // The scrape limits live in global and scrape_configs, as in Prometheus.
  auto scrape = ParseServeConfig(
      "global:\n  sample_limit: 1000\nscrape_configs:\n  - job_name: dcgm\n"
      "    body_size_limit: 1MB\n",
      "serve.yaml");
  ASSERT_TRUE(scrape.has_value()) << scrape.error().message();
  EXPECT_EQ(scrape->scrape.jobs.at(0).limits.sample_limit, 1000U);
  EXPECT_EQ(scrape->scrape.jobs.at(0).limits.body_size_limit, 1U << 20);
}

}  // namespace
}  // namespace gpucanary::daemon
