#include "scrape/target.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "scrape/relabel_config.h"

namespace gpucanary::scrape {
namespace {

// MakeTarget for a target relabeling keeps.
Result<Target> Make(const JobConfig& job, std::string_view address, const TargetGroup& g) {
  Result<std::optional<Target>> t = MakeTarget(job, address, g);
  if (!t) return Error(t.error());
  if (!t->has_value()) return Error(StatusCode::kNotFound, "dropped");
  return std::move(**t);
}

JobConfig Job(std::string name) {
  JobConfig j;
  j.job_name = std::move(name);
  j.scrape_interval_ms = 15000;
  j.scrape_timeout_ms = 10000;
  return j;
}

TEST(TargetTest, LabelsFollowPrometheusPopulateLabels) {
  TargetGroup g;
  g.labels = {{"site", "a"}, {"empty", ""}, {"__meta_x", "dropped"}, {"Hostname", "node-1"}};
  Result<Target> t = Make(Job("dcgm"), "10.0.0.1:9400", g);
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->url, "http://10.0.0.1:9400/metrics");
  EXPECT_EQ(t->host, "10.0.0.1");
  EXPECT_EQ(t->port, 9400);
  EXPECT_EQ(t->path, "/metrics");
  EXPECT_EQ(
      t->labels,
      (model::Labels{
          {"Hostname", "node-1"}, {"instance", "10.0.0.1:9400"}, {"job", "dcgm"}, {"site", "a"}}));
  EXPECT_EQ(t->instance(), "10.0.0.1:9400");
}

TEST(TargetTest, GroupLabelsMaySetInstanceJobAndPath) {
  TargetGroup g;
  g.labels = {{"instance", "node-7"}, {"job", "theirs"}, {"__metrics_path__", "/m?x=1"}};
  Result<Target> t = Make(Job("dcgm"), "[::1]:9400", g);
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->url, "http://[::1]:9400/m?x=1");
  EXPECT_EQ(t->host, "::1");
  EXPECT_EQ(t->path, "/m?x=1");
  EXPECT_EQ(t->instance(), "node-7");
  EXPECT_EQ(model::LabelValue(t->labels, "job"), "theirs");
  EXPECT_EQ(t->job, "dcgm");
}

TEST(TargetTest, BadAddressOrLabelNamesTheSource) {
  TargetGroup g;
  g.source = "t.json:3:5";
  EXPECT_EQ(Make(Job("a"), "http://h:1", g).error().message(),
            "t.json:3:5: bad target address 'http://h:1': no scheme allowed (host:port)");
  g.labels = {{"bad-name", "x"}};
  EXPECT_EQ(Make(Job("a"), "h:1", g).error().message(),
            "t.json:3:5: invalid label name 'bad-name'");
}

TEST(TargetTest, MakeTargetsDeduplicatesAndSkipsBadOnes) {
  TargetGroup a{{"h:1", "h:2", "h:1"}, {}, "a"};
  TargetGroup b{{"h:1", "bad/"}, {}, "b"};
  std::vector<Status> errors;
  const std::vector<Target> ts = MakeTargets(Job("j"), {a, b}, &errors);
  ASSERT_EQ(ts.size(), 2U);
  EXPECT_EQ(ts[0].url, "http://h:1/metrics");
  EXPECT_EQ(ts[1].url, "http://h:2/metrics");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].message().find("'bad/'"), std::string::npos);
}

// Shards (docs/scale-out.md §2): N instances with the same targets and the
// documented hashmod rules, hashing a label a node's exporters share, split
// a 64-node fleet exactly once, each node's dcgm-exporter and vLLM together.
TEST(TargetTest, HashmodShardsSplitAFleetOnceWithEachNodesTargetsTogether) {
  std::vector<TargetGroup> groups;
  for (int n = 1; n <= 64; ++n) {
    TargetGroup g;
    const std::string ip = "10.0." + std::to_string(n / 250) + "." + std::to_string(n % 250);
    g.targets = {ip + ":9400", ip + ":8000"};
    g.labels = {{"node", "node-" + std::to_string(n)}};
    g.source = "targets.json";
    groups.push_back(g);
  }
  constexpr int kShards = 3;
  std::map<std::string, int> shard_of;               // target -> shard
  std::map<std::string, std::set<int>> node_shards;  // node -> shards its targets are in
  std::vector<std::size_t> sizes;
  for (int k = 0; k < kShards; ++k) {
    JobConfig job = Job("fleet");
    auto rules = ParseRelabelConfigs(
        "- {source_labels: [node], modulus: 3, target_label: __tmp_shard, action: hashmod}\n"
        "- {source_labels: [__tmp_shard], regex: '" +
            std::to_string(k) + "', action: keep}\n",
        "shard.yaml");
    ASSERT_TRUE(rules.has_value()) << rules.error().ToString();
    job.relabel_configs = *rules;
    std::vector<Status> errors;
    const std::vector<Target> targets = MakeTargets(job, groups, &errors);
    EXPECT_TRUE(errors.empty());
    sizes.push_back(targets.size());
    for (const Target& t : targets) {
      EXPECT_TRUE(shard_of.emplace(t.url, k).second) << t.url << " in two shards";
      node_shards[std::string(model::LabelValue(t.labels, "node"))].insert(k);
      EXPECT_EQ(model::LabelValue(t.labels, "__tmp_shard"), "");  // __tmp_ labels go
    }
  }
  EXPECT_EQ(shard_of.size(), 128U);  // every target, once
  EXPECT_EQ(node_shards.size(), 64U);
  for (const auto& [node, shards] : node_shards) EXPECT_EQ(shards.size(), 1U) << node;
  // Prometheus's hashmod: MD5 of "node-N", its last 8 bytes big-endian,
  // modulo 3. Python's hashlib puts 18, 26 and 20 of the nodes in shards 0,
  // 1 and 2 (int.from_bytes(md5(b"node-N").digest()[8:], "big") % 3).
  EXPECT_EQ(sizes, (std::vector<std::size_t>{36, 52, 40}));
}

TEST(TargetTest, KeyChangesWithLabels) {
  TargetGroup g{{"h:1"}, {{"a", "1"}}, ""};
  const std::string k1 = Make(Job("j"), "h:1", g)->Key();
  g.labels = {{"a", "2"}};
  EXPECT_NE(Make(Job("j"), "h:1", g)->Key(), k1);
  EXPECT_NE(Make(Job("k"), "h:1", g)->Key(), k1);
}

TEST(TargetTest, MatchHostsByInstanceHostOrHostnameLabel) {
  TargetGroup g{{}, {{"Hostname", "node-3"}}, ""};
  const Target t = *Make(Job("j"), "10.0.0.3:9400", g);
  const Target v6 = *Make(Job("j"), "[::1]:9400", TargetGroup{});
  EXPECT_TRUE(MatchHosts({"node-3"})(t));
  EXPECT_TRUE(MatchHosts({"x", "10.0.0.3"})(t));
  EXPECT_TRUE(MatchHosts({"10.0.0.3:9400"})(t));
  EXPECT_FALSE(MatchHosts({"node-30", "10.0.0.33", "j"})(t));
  EXPECT_TRUE(MatchHosts({"::1"})(v6));
  EXPECT_FALSE(MatchHosts({})(t));
}

// PopulateLabels and Target.URL as Prometheus has them: cases after
// TestPopulateLabels (scrape/manager_test.go), TestTargetURL and
// TestTargetsFromGroupWithLabelKeepDrop (scrape/target_test.go) of
// github.com/prometheus/prometheus at d15adb9ad7e5d9fbde3a9a8f30200593a5a14d86,
// for http (the scraper speaks nothing else; Prometheus 3 also no longer
// adds a default port to the address, gpucanary adds ":80" as 2.x did).
JobConfig RelabelJob(std::string_view rules) {
  JobConfig j = Job("job");
  j.scrape_interval_ms = 1000;
  j.scrape_timeout_ms = 1000;
  Result<std::vector<model::RelabelRule>> r = ParseRelabelConfigs(rules, "r.yaml");
  EXPECT_TRUE(r.has_value()) << r.error().message();
  if (r) j.relabel_configs = std::move(*r);
  return j;
}

TEST(PopulateLabelsTest, DiscoveredLabelsCarryTheScrapeSettings) {
  JobConfig j = RelabelJob("[]");
  j.params = {{"module", {"a", "b"}}};
  TargetGroup g{{}, {{"custom", "value"}, {"__meta_x", "y"}}, ""};
  EXPECT_EQ(DiscoveredLabels(j, "1.2.3.4:1000", g), (model::Labels{{"__address__", "1.2.3.4:1000"},
                                                                   {"__meta_x", "y"},
                                                                   {"__metrics_path__", "/metrics"},
                                                                   {"__param_module", "a"},
                                                                   {"__scheme__", "http"},
                                                                   {"__scrape_interval__", "1s"},
                                                                   {"__scrape_timeout__", "1s"},
                                                                   {"custom", "value"},
                                                                   {"job", "job"}}));
}

TEST(PopulateLabelsTest, GroupLabelsOverrideTheScrapeSettings) {
  TargetGroup g{{},
                {{"__scheme__", "http"},
                 {"__metrics_path__", "/custom"},
                 {"job", "custom-job"},
                 {"__scrape_interval__", "2s"},
                 {"__scrape_timeout__", "2s"}},
                ""};
  Result<Target> t = Make(RelabelJob("[]"), "1.2.3.4", g);
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->url, "http://1.2.3.4:80/custom");
  EXPECT_EQ(t->labels, (model::Labels{{"instance", "1.2.3.4:80"}, {"job", "custom-job"}}));
  EXPECT_EQ(t->interval_ms, 2000);
  EXPECT_EQ(t->timeout_ms, 2000);
}

TEST(PopulateLabelsTest, AddressMissingButAddedInRelabelling) {
  const JobConfig j = RelabelJob(
      "- {action: replace, regex: '(.*)', source_labels: [custom], replacement: '${1}', "
      "target_label: __address__}");
  Result<Target> t = Make(j, "", TargetGroup{{}, {{"custom", "host:1234"}}, ""});
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->url, "http://host:1234/metrics");
  EXPECT_EQ(t->labels,
            (model::Labels{{"custom", "host:1234"}, {"instance", "host:1234"}, {"job", "job"}}));
  EXPECT_EQ(
      Make(RelabelJob("[]"), "", TargetGroup{{}, {{"custom", "value"}}, ""}).error().message(),
      "no address");
}

TEST(PopulateLabelsTest, InvalidValuesAndDurationsAreErrors) {
  const auto err = [](LabelPairs labels) {
    return Make(RelabelJob("[]"), "1.2.3.4:1000", TargetGroup{{}, std::move(labels), "g"})
        .error()
        .message();
  };
  EXPECT_EQ(err({{"custom", "\xbd"}}), "g: invalid label value for 'custom'");
  EXPECT_EQ(err({{"__scrape_interval__", "2notseconds"}}),
            "g: bad __scrape_interval__ '2notseconds'");
  EXPECT_EQ(err({{"__scrape_timeout__", "2notseconds"}}),
            "g: bad __scrape_timeout__ '2notseconds'");
  EXPECT_EQ(err({{"__scrape_interval__", "0s"}}), "g: __scrape_interval__ is 0");
  EXPECT_EQ(err({{"__scrape_timeout__", "0s"}}), "g: __scrape_timeout__ is 0");
  EXPECT_EQ(err({{"__scrape_interval__", "1s"}, {"__scrape_timeout__", "2s"}}),
            "g: scrape timeout cannot be greater than scrape interval (\"2s\" > \"1s\")");
  EXPECT_EQ(err({{"__scheme__", "ftp"}}), "g: scheme 'ftp' not supported (http or https)");
}

TEST(PopulateLabelsTest, HttpsJobsAndSchemeLabelsMakeHttpsTargets) {
  JobConfig j = RelabelJob("[]");
  j.scheme = "https";
  Result<Target> t = Make(j, "10.0.0.1:9400", TargetGroup{});
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->url, "https://10.0.0.1:9400/metrics");
  EXPECT_TRUE(t->https);
  // Relabeling may pick the scheme per target, as in Prometheus.
  t = Make(RelabelJob("[]"), "10.0.0.1:9400", TargetGroup{{}, {{"__scheme__", "https"}}, ""});
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->url, "https://10.0.0.1:9400/metrics");
  EXPECT_TRUE(t->https);
  t = Make(RelabelJob("[]"), "10.0.0.1:9400", TargetGroup{});
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE(t->https);
}

TEST(PopulateLabelsTest, ParamsAndParamLabelsMakeTheQuery) {
  JobConfig j = RelabelJob("[]");
  j.params = {{"abc", {"foo", "bar", "baz"}}, {"xyz", {"hoo"}}};
  TargetGroup g{{},
                {{"__metrics_path__", "/metricz"},
                 {"__param_abc", "overwrite"},
                 {"__param_cde", "huu"},
                 {"__param_sp", "a b&c"}},
                ""};
  Result<Target> t = Make(j, "example.com:1234", g);
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->url,
            "http://example.com:1234/metricz?abc=overwrite&abc=bar&abc=baz&cde=huu&sp=a+b%26c&"
            "xyz=hoo");
}

TEST(PopulateLabelsTest, RelabelingDropsTargetsAndMetaLabels) {
  const JobConfig j = RelabelJob(R"(
- source_labels: [__meta_kubernetes_pod_phase]
  regex: Succeeded|Failed
  action: drop
- source_labels: [__meta_kubernetes_pod_node_name]
  target_label: Hostname
- regex: __meta_kubernetes_pod_label_(.+)
  action: labelmap
)");
  TargetGroup running{{},
                      {{"__meta_kubernetes_pod_phase", "Running"},
                       {"__meta_kubernetes_pod_node_name", "gpu-node-7"},
                       {"__meta_kubernetes_pod_label_app", "vllm"}},
                      ""};
  Result<Target> t = Make(j, "10.4.0.17:8000", running);
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->labels, (model::Labels{{"Hostname", "gpu-node-7"},
                                      {"app", "vllm"},
                                      {"instance", "10.4.0.17:8000"},
                                      {"job", "job"}}));
  EXPECT_TRUE(MatchHosts({"gpu-node-7"})(*t));
  TargetGroup done = running;
  done.labels[0].second = "Succeeded";
  Result<std::optional<Target>> dropped = MakeTarget(j, "10.4.0.17:8000", done);
  ASSERT_TRUE(dropped.has_value());
  EXPECT_FALSE(dropped->has_value());
  std::vector<Status> errors;
  EXPECT_TRUE(MakeTargets(j, {done}, &errors).empty());
  EXPECT_TRUE(errors.empty());
  // labelkeep and labeldrop see the "__" labels too: dropping __address__ is an error.
  EXPECT_EQ(
      Make(RelabelJob("[{regex: foo, action: labelkeep}]"), "localhost:9090", {}).error().message(),
      "no address");
  EXPECT_EQ(Make(RelabelJob("[{regex: __address__, action: labeldrop}]"), "localhost:9090", {})
                .error()
                .message(),
            "no address");
}

TEST(PopulateLabelsTest, FormatsDurationsAsPrometheus) {
  EXPECT_EQ(FormatPrometheusDuration(0), "0s");
  EXPECT_EQ(FormatPrometheusDuration(15000), "15s");
  EXPECT_EQ(FormatPrometheusDuration(90000), "1m30s");
  EXPECT_EQ(FormatPrometheusDuration(500), "500ms");
  EXPECT_EQ(FormatPrometheusDuration(86400000LL * 8), "8d");
  EXPECT_EQ(FormatPrometheusDuration(86400000LL * 14), "2w");
}

TEST(ScheduleTest, Fnv1aMatchesGo) {
  // Go: fnv.New64a() over "" and "a".
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
}

TEST(ScheduleTest, PhasesSpreadTargetsOverTheInterval) {
  std::set<std::int64_t> phases;
  for (int port = 9400; port < 9500; ++port) {
    const std::int64_t p = PhaseMs("http://10.0.0.1:" + std::to_string(port) + "/metrics", 1000);
    EXPECT_GE(p, 0);
    EXPECT_LT(p, 1000);
    phases.insert(p);
  }
  EXPECT_GT(phases.size(), 90U);  // 100 targets, few collisions over 1000 ms
  EXPECT_EQ(PhaseMs("http://h:1/metrics", 15000), PhaseMs("http://h:1/metrics", 15000));
}

TEST(ScheduleTest, SlotAtOrAfter) {
  EXPECT_EQ(SlotAtOrAfter(250, 1000, 10'000), 10'250);
  EXPECT_EQ(SlotAtOrAfter(250, 1000, 10'250), 10'250);
  EXPECT_EQ(SlotAtOrAfter(250, 1000, 10'251), 11'250);
  EXPECT_EQ(SlotAtOrAfter(0, 15000, 1'764'680'000'001), 1'764'680'010'000);
  EXPECT_EQ(SlotAtOrAfter(999, 1000, 0), 999);
  EXPECT_EQ(SlotAtOrAfter(999, 1000, -5), -1);
}

}  // namespace
}  // namespace gpucanary::scrape
