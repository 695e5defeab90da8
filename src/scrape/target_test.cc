#include "scrape/target.h"

#include <gtest/gtest.h>

#include <set>

namespace gpucanary::scrape {
namespace {

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
  Result<Target> t = MakeTarget(Job("dcgm"), "10.0.0.1:9400", g);
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
  Result<Target> t = MakeTarget(Job("dcgm"), "[::1]:9400", g);
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
  EXPECT_EQ(MakeTarget(Job("a"), "http://h:1", g).error().message(),
            "t.json:3:5: bad target address 'http://h:1': no scheme allowed (host:port)");
  g.labels = {{"bad-name", "x"}};
  EXPECT_EQ(MakeTarget(Job("a"), "h:1", g).error().message(),
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

TEST(TargetTest, KeyChangesWithLabels) {
  TargetGroup g{{"h:1"}, {{"a", "1"}}, ""};
  const std::string k1 = MakeTarget(Job("j"), "h:1", g)->Key();
  g.labels = {{"a", "2"}};
  EXPECT_NE(MakeTarget(Job("j"), "h:1", g)->Key(), k1);
  EXPECT_NE(MakeTarget(Job("k"), "h:1", g)->Key(), k1);
}

TEST(TargetTest, MatchHostsByInstanceHostOrHostnameLabel) {
  TargetGroup g{{}, {{"Hostname", "node-3"}}, ""};
  const Target t = *MakeTarget(Job("j"), "10.0.0.3:9400", g);
  const Target v6 = *MakeTarget(Job("j"), "[::1]:9400", TargetGroup{});
  EXPECT_TRUE(MatchHosts({"node-3"})(t));
  EXPECT_TRUE(MatchHosts({"x", "10.0.0.3"})(t));
  EXPECT_TRUE(MatchHosts({"10.0.0.3:9400"})(t));
  EXPECT_FALSE(MatchHosts({"node-30", "10.0.0.33", "j"})(t));
  EXPECT_TRUE(MatchHosts({"::1"})(v6));
  EXPECT_FALSE(MatchHosts({})(t));
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
