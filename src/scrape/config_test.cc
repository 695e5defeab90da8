#include "scrape/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace gpucanary::scrape {
namespace {

constexpr std::string_view kFull = R"(global:
  scrape_interval: 30s
  scrape_timeout: 5s
  fast_interval: 500ms
scrape_configs:
  - job_name: dcgm
    scrape_interval: 15s
    metrics_path: /metrics
    honor_labels: true
    honor_timestamps: false
    scheme: http
    static_configs:
      - targets: ['10.0.0.1:9400', 'node-2:9400', '[::1]:9400', 'bare-host']
        labels: {site: a, rack: "r1"}
    file_sd_configs:
      - files: ['targets/*.json', '/etc/gpucanary/vllm.yaml']
        refresh_interval: 1m
    prometheus_sd_configs:
      - {url: 'http://prom:9090/', job: dcgm, refresh_interval: 10s}
  - job_name: vllm
    scrape_interval: 2s
)";

TEST(ScrapeConfigTest, HttpsJobsTakeTlsConfigRelativeToTheFile) {
  std::string dir = ::testing::TempDir();
  if (dir.ends_with('/')) dir.pop_back();
  for (const char* name : {"ca.pem", "c.pem", "c.key"}) std::ofstream(dir + "/" + name) << "x";
  Result<ScrapeConfig> c = ParseScrapeConfig(R"(scrape_configs:
  - job_name: dcgm
    scheme: https
    tls_config:
      ca_file: ca.pem
      cert_file: c.pem
      key_file: c.key
      server_name: dcgm.internal
      insecure_skip_verify: false
    static_configs: [{targets: ['gpu-1:9400', 'gpu-2']}]
    prometheus_sd_configs:
      - url: https://prom.internal:9090
        tls_config: {ca_file: ca.pem, server_name: prom}
)",
                                             dir + "/scrape.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  const JobConfig& job = c->jobs[0];
  EXPECT_EQ(job.scheme, "https");
  EXPECT_EQ(job.tls_config.ca_file, dir + "/ca.pem");
  EXPECT_EQ(job.tls_config.cert_file, dir + "/c.pem");
  EXPECT_EQ(job.tls_config.key_file, dir + "/c.key");
  EXPECT_EQ(job.tls_config.server_name, "dcgm.internal");
  EXPECT_FALSE(job.tls_config.insecure_skip_verify);
  // Prometheus adds :443 to a bare https target.
  EXPECT_EQ(job.static_configs[0].targets, (std::vector<std::string>{"gpu-1:9400", "gpu-2:443"}));
  // Discovery from a Prometheus behind HTTPS has its own tls_config.
  ASSERT_EQ(job.prometheus_sd_configs.size(), 1U);
  EXPECT_EQ(job.prometheus_sd_configs[0].url, "https://prom.internal:9090");
  EXPECT_EQ(job.prometheus_sd_configs[0].tls.ca_file, dir + "/ca.pem");
  EXPECT_EQ(job.prometheus_sd_configs[0].tls.server_name, "prom");
}

TEST(ScrapeConfigTest, ReadsEveryFieldInPrometheusShapes) {
  Result<ScrapeConfig> c = ParseScrapeConfig(kFull, "/srv/gpucanary/scrape.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->global.scrape_interval_ms, 30000);
  EXPECT_EQ(c->global.scrape_timeout_ms, 5000);
  EXPECT_EQ(c->global.fast_interval_ms, 500);
  ASSERT_EQ(c->jobs.size(), 2U);
  const JobConfig& dcgm = c->jobs[0];
  EXPECT_EQ(dcgm.job_name, "dcgm");
  EXPECT_EQ(dcgm.scrape_interval_ms, 15000);
  EXPECT_EQ(dcgm.scrape_timeout_ms, 5000);
  EXPECT_TRUE(dcgm.honor_labels);
  EXPECT_FALSE(dcgm.honor_timestamps);
  ASSERT_EQ(dcgm.static_configs.size(), 1U);
  EXPECT_EQ(
      dcgm.static_configs[0].targets,
      (std::vector<std::string>{"10.0.0.1:9400", "node-2:9400", "[::1]:9400", "bare-host:80"}));
  EXPECT_EQ(dcgm.static_configs[0].labels, (LabelPairs{{"site", "a"}, {"rack", "r1"}}));
  ASSERT_EQ(dcgm.file_sd_configs.size(), 1U);
  EXPECT_EQ(
      dcgm.file_sd_configs[0].files,
      (std::vector<std::string>{"/srv/gpucanary/targets/*.json", "/etc/gpucanary/vllm.yaml"}));
  EXPECT_EQ(dcgm.file_sd_configs[0].refresh_interval_ms, 60000);
  EXPECT_EQ(dcgm.file_sd_configs[0].where, "/srv/gpucanary/scrape.yaml:16:9");
  ASSERT_EQ(dcgm.prometheus_sd_configs.size(), 1U);
  EXPECT_EQ(dcgm.prometheus_sd_configs[0].url, "http://prom:9090");
  EXPECT_EQ(dcgm.prometheus_sd_configs[0].job, "dcgm");
  EXPECT_EQ(dcgm.prometheus_sd_configs[0].refresh_interval_ms, 10000);
  // Unset timeout: the global one, capped at the job's interval.
  EXPECT_EQ(c->jobs[1].scrape_interval_ms, 2000);
  EXPECT_EQ(c->jobs[1].scrape_timeout_ms, 2000);
  EXPECT_EQ(c->jobs[1].metrics_path, "/metrics");
  EXPECT_FALSE(c->jobs[1].honor_labels);
  EXPECT_TRUE(c->jobs[1].honor_timestamps);
}

TEST(ScrapeConfigTest, ReadsRelabelConfigsWithPrometheusDefaults) {
  Result<ScrapeConfig> c = ParseScrapeConfig(R"(scrape_configs:
  - job_name: vllm
    params: {format: [prometheus, x]}
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: Hostname
      - regex:
        separator:
        replacement:
        target_label: empty
        action: Replace
    metric_relabel_configs:
      - {source_labels: [__name__], regex: 'vllm:.*_bucket', action: drop}
)",
                                             "s.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  const JobConfig& j = c->jobs[0];
  EXPECT_EQ(j.params.at("format"), (std::vector<std::string>{"prometheus", "x"}));
  ASSERT_EQ(j.relabel_configs.size(), 2U);
  const model::RelabelConfig& a = j.relabel_configs[0].config();
  EXPECT_EQ(a.source_labels, (std::vector<std::string>{"__meta_kubernetes_pod_node_name"}));
  EXPECT_EQ(a.separator, ";");
  EXPECT_FALSE(a.regex.has_value());  // the default (.*)
  EXPECT_EQ(a.replacement, "$1");
  EXPECT_EQ(a.action, model::RelabelAction::kReplace);
  // Null values are yaml.v2's zero values, as Prometheus reads them.
  const model::RelabelConfig& b = j.relabel_configs[1].config();
  EXPECT_EQ(b.regex, std::optional<std::string>(""));
  EXPECT_EQ(b.separator, "");
  EXPECT_EQ(b.replacement, "");
  ASSERT_EQ(j.metric_relabel_configs.size(), 1U);
  EXPECT_EQ(j.metric_relabel_configs[0].config().action, model::RelabelAction::kDrop);
}

TEST(ScrapeConfigTest, DefaultsFollowPrometheus) {
  Result<ScrapeConfig> c = ParseScrapeConfig("scrape_configs:\n  - job_name: a\n", "s.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->global.scrape_interval_ms, 15000);
  EXPECT_EQ(c->global.scrape_timeout_ms, 10000);
  EXPECT_EQ(c->global.fast_interval_ms, 1000);
  EXPECT_EQ(c->jobs[0].scrape_interval_ms, 15000);
  EXPECT_EQ(c->jobs[0].scrape_timeout_ms, 10000);
  EXPECT_EQ(c->jobs[0].file_sd_configs.size(), 0U);
  Result<ScrapeConfig> empty = ParseScrapeConfig("", "s.yaml");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->jobs.empty());
}

// Prometheus's scrape limits: global values are the jobs' defaults, a job
// may set its own, 0 is no limit. Ours has defaults sized for dcgm-exporter.
TEST(ScrapeConfigTest, LimitsComeFromTheJobTheGlobalSectionOrOurDefaults) {
  Result<ScrapeConfig> defaults = ParseScrapeConfig("scrape_configs:\n  - job_name: a\n", "s.yaml");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message();
  for (const ScrapeLimits& l : {defaults->global.limits, defaults->jobs[0].limits}) {
    EXPECT_EQ(l.sample_limit, 20'000U);
    EXPECT_EQ(l.label_limit, 64U);
    EXPECT_EQ(l.label_name_length_limit, 256U);
    EXPECT_EQ(l.label_value_length_limit, 2048U);
    EXPECT_EQ(l.body_size_limit, 8U << 20);
  }
  EXPECT_EQ(JobConfig{}.limits, kDefaultScrapeLimits);
  EXPECT_EQ(GlobalConfig{}.limits, kDefaultScrapeLimits);

  Result<ScrapeConfig> c = ParseScrapeConfig(R"(global:
  sample_limit: 5000
  label_limit: 40
  body_size_limit: 2MB
scrape_configs:
  - job_name: dcgm
  - job_name: node
    sample_limit: 0
    label_limit: 30
    label_name_length_limit: 100
    label_value_length_limit: 500
    body_size_limit: 512KiB
  - job_name: open
    body_size_limit: 0
)",
                                             "s.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->global.limits.sample_limit, 5000U);
  EXPECT_EQ(c->global.limits.label_limit, 40U);
  EXPECT_EQ(c->global.limits.body_size_limit, 2U << 20);  // Prometheus: MB is 1024 * 1024
  EXPECT_EQ(c->jobs[0].limits, c->global.limits);
  const ScrapeLimits& node = c->jobs[1].limits;
  EXPECT_EQ(node.sample_limit, 0U);
  EXPECT_EQ(node.label_limit, 30U);
  EXPECT_EQ(node.label_name_length_limit, 100U);
  EXPECT_EQ(node.label_value_length_limit, 500U);
  EXPECT_EQ(node.body_size_limit, 512U << 10);
  EXPECT_EQ(c->jobs[2].limits.body_size_limit, 0U);
  EXPECT_EQ(c->jobs[2].limits.sample_limit, 5000U);
}

TEST(PrometheusSizeTest, ReadsUnitsAsPrometheusDoes) {
  std::uint64_t bytes = 1;
  EXPECT_TRUE(ParsePrometheusSize("0", &bytes));
  EXPECT_EQ(bytes, 0U);
  EXPECT_TRUE(ParsePrometheusSize("100B", &bytes));
  EXPECT_EQ(bytes, 100U);
  EXPECT_TRUE(ParsePrometheusSize("15MB", &bytes));
  EXPECT_EQ(bytes, 15U << 20);
  EXPECT_TRUE(ParsePrometheusSize("15MiB", &bytes));
  EXPECT_EQ(bytes, 15U << 20);
  EXPECT_TRUE(ParsePrometheusSize("1GB", &bytes));
  EXPECT_EQ(bytes, 1U << 30);
  EXPECT_TRUE(ParsePrometheusSize("2KB", &bytes));
  EXPECT_EQ(bytes, 2048U);
  for (const char* bad :
       {"", "10", "1.5MB", "MB", "10 MB", "-1MB", "10mb", "99999999999999999999B"}) {
    EXPECT_FALSE(ParsePrometheusSize(bad, &bytes)) << bad;
  }
}

TEST(ScrapeConfigTest, RelativeFileSdPathsAreRelativeToTheConfigFile) {
  Result<ScrapeConfig> c = ParseScrapeConfig(
      "scrape_configs:\n  - job_name: a\n    file_sd_configs: [{files: ['t/a.yml']}]\n",
      "conf/s.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->jobs[0].file_sd_configs[0].files[0], "conf/t/a.yml");
  EXPECT_EQ(c->jobs[0].file_sd_configs[0].refresh_interval_ms, 300000);
}

struct BadCase {
  const char* yaml;
  const char* error;  // the whole message
};

class ScrapeConfigErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ScrapeConfigErrorTest, NamesFileLineColumnAndField) {
  Result<ScrapeConfig> c = ParseScrapeConfig(GetParam().yaml, "s.yaml");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code(), StatusCode::kParseError);
  EXPECT_EQ(c.error().message(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ScrapeConfigErrorTest,
    ::testing::Values(
        BadCase{"global: {scrape_interval: 15s\n", "s.yaml:2:1: syntax: end of map flow not found"},
        BadCase{"rule_files: []\n",
                "s.yaml:1:1: config.rule_files: unknown field (expected one of global, "
                "scrape_configs)"},
        BadCase{"global:\n  scrape_interval: 1.5s\n",
                "s.yaml:2:20: global.scrape_interval: bad duration '1.5s' (expected e.g. 15s, "
                "1m30s, 500ms)"},
        BadCase{"global:\n  scrape_interval: 0s\n",
                "s.yaml:2:20: global.scrape_interval: must be greater than 0"},
        BadCase{"global:\n  scrape_interval: 5s\n  scrape_timeout: 10s\n",
                "s.yaml:3:19: global.scrape_timeout: greater than scrape_interval (5s)"},
        BadCase{"scrape_configs:\n  - job_name: a\n    scrape_interval: 5s\n"
                "    scrape_timeout: 6s\n",
                "s.yaml:4:21: scrape_configs[0].scrape_timeout: greater than scrape_interval "
                "(5s)"},
        BadCase{"scrape_configs:\n  - scrape_interval: 5s\n",
                "s.yaml:2:5: scrape_configs[0].job_name: missing"},
        BadCase{"scrape_configs:\n  - job_name: a\n  - job_name: a\n",
                "s.yaml:3:15: scrape_configs[1].job_name: duplicate job name 'a'"},
        BadCase{"scrape_configs:\n  - job_name: a\n    basic_auth: {}\n",
                "s.yaml:3:5: scrape_configs[0].basic_auth: unknown field (expected one of "
                "job_name, scrape_interval, scrape_timeout, metrics_path, honor_labels, "
                "honor_timestamps, scheme, tls_config, static_configs, file_sd_configs, "
                "prometheus_sd_configs, kubernetes_sd_configs, params, relabel_configs, "
                "metric_relabel_configs, sample_limit, label_limit, label_name_length_limit, "
                "label_value_length_limit, body_size_limit)"},
        BadCase{"global:\n  sample_limit: -1\n",
                "s.yaml:2:17: global.sample_limit: must be in 0..2147483647"},
        BadCase{"scrape_configs:\n  - job_name: a\n    label_limit: many\n",
                "s.yaml:3:18: scrape_configs[0].label_limit: expected an integer"},
        BadCase{"scrape_configs:\n  - job_name: a\n    body_size_limit: 10\n",
                "s.yaml:3:22: scrape_configs[0].body_size_limit: bad size '10' (a number and a "
                "unit, e.g. 10MB or 512KiB; B KB MB GB TB, powers of 1024 as in Prometheus)"},
        BadCase{"scrape_configs:\n  - job_name: a\n    relabel_configs:\n"
                "      - {action: keep, regexp: x}\n",
                "s.yaml:4:24: scrape_configs[0].relabel_configs[0].regexp: unknown field "
                "(expected one of source_labels, separator, regex, modulus, target_label, "
                "replacement, action)"},
        BadCase{"scrape_configs:\n  - job_name: a\n    relabel_configs:\n"
                "      - {action: kep}\n",
                "s.yaml:4:18: scrape_configs[0].relabel_configs[0].action: unknown relabel "
                "action \"kep\""},
        BadCase{"scrape_configs:\n  - job_name: a\n    metric_relabel_configs:\n"
                "      - {action: hashmod, target_label: t}\n",
                "s.yaml:4:9: scrape_configs[0].metric_relabel_configs[0]: relabel configuration "
                "for hashmod requires non-zero modulus"},
        BadCase{"scrape_configs:\n  - job_name: a\n    relabel_configs:\n"
                "      - {regex: 'a(', target_label: t}\n",
                "s.yaml:4:17: scrape_configs[0].relabel_configs[0].regex: bad regex 'a(': "
                "missing ): ^(?s:a()$"},
        BadCase{"scrape_configs:\n  - job_name: a\n    relabel_configs:\n"
                "      - {source_labels: [a], target_label: node-name}\n",
                "s.yaml:4:9: scrape_configs[0].relabel_configs[0]: \"node-name\" is invalid "
                "'target_label' for replace action"},
        BadCase{"scrape_configs:\n  - job_name: a\n    relabel_configs:\n"
                "      - {source_labels: [a.b], target_label: t}\n",
                "s.yaml:4:26: scrape_configs[0].relabel_configs[0].source_labels[0]: \"a.b\" is "
                "not a valid label name"},
        BadCase{"scrape_configs:\n  - job_name: a\n    relabel_configs:\n"
                "      - {source_labels: [a], regex: x, action: labeldrop}\n",
                "s.yaml:4:9: scrape_configs[0].relabel_configs[0]: labeldrop action requires only "
                "'regex', and no other fields"},
        BadCase{"scrape_configs:\n  - job_name: a\n    relabel_configs:\n"
                "      - {source_labels: [a], regex: '(.*)', target_label: b, action: keepequal}\n",
                "s.yaml:4:9: scrape_configs[0].relabel_configs[0]: keepequal action requires only "
                "'source_labels' and `target_label`, and no other fields"},
        BadCase{"scrape_configs:\n  - job_name: a\n    relabel_configs: {action: keep}\n",
                "s.yaml:3:22: scrape_configs[0].relabel_configs: expected a list of relabel rules"},
        BadCase{"scrape_configs:\n  - job_name: a\n    params: {module: x}\n",
                "s.yaml:3:22: scrape_configs[0].params.module: expected a list of values"},
        BadCase{"scrape_configs:\n  - job_name: a\n    scheme: ftp\n",
                "s.yaml:3:13: scrape_configs[0].scheme: must be http or https"},
        BadCase{
            "scrape_configs:\n  - job_name: a\n    tls_config: {ca_file: /nonexistent/ca.pem}\n",
            "s.yaml:3:27: scrape_configs[0].tls_config.ca_file: cannot read "
            "'/nonexistent/ca.pem': No such file or directory"},
        BadCase{"scrape_configs:\n  - job_name: a\n    tls_config: {insecure: true}\n",
                "s.yaml:3:18: scrape_configs[0].tls_config.insecure: unknown field (expected one "
                "of ca_file, cert_file, key_file, server_name, insecure_skip_verify)"},
        BadCase{"scrape_configs:\n  - job_name: a\n    metrics_path: metrics\n",
                "s.yaml:3:19: scrape_configs[0].metrics_path: must be a path starting with '/'"},
        BadCase{"scrape_configs:\n  - job_name: a\n    honor_labels: maybe\n",
                "s.yaml:3:19: scrape_configs[0].honor_labels: expected true or false"},
        BadCase{"scrape_configs:\n  - job_name: a\n    static_configs:\n"
                "      - targets: ['h:1', 'http://h:2']\n",
                "s.yaml:4:26: scrape_configs[0].static_configs[0].targets[1]: bad target address "
                "'http://h:2': no scheme allowed (host:port)"},
        BadCase{"scrape_configs:\n  - job_name: a\n    static_configs:\n"
                "      - targets: ['h:99999']\n",
                "s.yaml:4:19: scrape_configs[0].static_configs[0].targets[0]: bad target address "
                "'h:99999': expected host:port"},
        BadCase{"scrape_configs:\n  - job_name: a\n    static_configs:\n"
                "      - targets: ['h:1']\n        labels: {0bad: x}\n",
                "s.yaml:5:18: scrape_configs[0].static_configs[0].labels.0bad: invalid label "
                "name"},
        BadCase{"scrape_configs:\n  - job_name: a\n    file_sd_configs:\n"
                "      - files: ['a/*/b.json']\n",
                "s.yaml:4:17: scrape_configs[0].file_sd_configs[0].files[0]: not a valid file_sd "
                "path: one '*' at most, in the file name only, and a .json, .yml or .yaml "
                "extension"},
        BadCase{"scrape_configs:\n  - job_name: a\n    file_sd_configs:\n      - {}\n",
                "s.yaml:4:9: scrape_configs[0].file_sd_configs[0].files: missing"},
        BadCase{"scrape_configs:\n  - job_name: a\n    prometheus_sd_configs:\n"
                "      - url: 'ftp://prom:9090'\n",
                "s.yaml:4:14: scrape_configs[0].prometheus_sd_configs[0].url: bad URL "
                "'ftp://prom:9090': only http:// and https:// are supported"},
        BadCase{"scrape_configs:\n  - job_name: a\n    prometheus_sd_configs:\n"
                "      - job: dcgm\n",
                "s.yaml:4:9: scrape_configs[0].prometheus_sd_configs[0].url: missing"},
        BadCase{"scrape_configs: {job_name: a}\n",
                "s.yaml:1:17: scrape_configs: expected a list"}));

TEST(PrometheusDurationTest, AcceptsPrometheusGrammarOnly) {
  struct Case {
    const char* text;
    std::int64_t ms;
  };
  for (const Case& c : {Case{"0", 0}, Case{"1s", 1000}, Case{"500ms", 500}, Case{"1m30s", 90000},
                        Case{"2h", 7200000}, Case{"1d", 86400000}, Case{"1w", 604800000},
                        Case{"1h0m5s10ms", 3605010}}) {
    std::int64_t ms = -1;
    EXPECT_TRUE(ParsePrometheusDuration(c.text, &ms)) << c.text;
    EXPECT_EQ(ms, c.ms) << c.text;
  }
  for (const char* bad : {"", "1", "1.5s", "s", "1s1m", "1x", "-1s", "1s1s", "1 s"}) {
    std::int64_t ms = 0;
    EXPECT_FALSE(ParsePrometheusDuration(bad, &ms)) << bad;
  }
}

TEST(NormalizeAddressTest, AddsPort80AndRejectsUrls) {
  EXPECT_EQ(NormalizeAddress("h:9400").value(), "h:9400");
  EXPECT_EQ(NormalizeAddress("h").value(), "h:80");
  EXPECT_EQ(NormalizeAddress("[::1]").value(), "[::1]:80");
  EXPECT_EQ(NormalizeAddress("[::1]:9").value(), "[::1]:9");
  for (const char* bad : {"", "h:9400/metrics", "::1", "h:0", "h:x", "a b:1", "u@h:1"}) {
    EXPECT_FALSE(NormalizeAddress(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace gpucanary::scrape
