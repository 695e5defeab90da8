// The fleet generator writes what a Prometheus scraping a real fleet would
// store, a release log the product loads and labels that agree with both.
// The correlator's accuracy on the suite is fleet_suite's job, not this.

#include "eval/fleet/fleet_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "analysis/replay/replay.h"
#include "eval/fleet/fleet_case.h"
#include "eval/fleet/fleet_score.h"
#include "expfmt/reader.h"
#include "releases/release.h"

namespace gpucanary::eval::fleet {
namespace {

class FleetGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fleet_generator_test_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  FleetFiles Generate(const FleetCase& c) {
    const std::string dir = (dir_ / c.name).string();
    std::filesystem::create_directories(dir);
    Result<FleetFiles> files = GenerateFleetCase(c, dir);
    EXPECT_TRUE(files.has_value()) << (files ? "" : files.error().message());
    return files ? *files : FleetFiles{};
  }

  std::filesystem::path dir_;
};

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
  std::int64_t ts_ms = 0;
};

std::vector<Sample> ReadAll(const std::string& path) {
  std::vector<Sample> out;
  expfmt::ReadOptions options;
  Result<expfmt::ReadReport> report = expfmt::ReadFile(
      path, options, [&](const expfmt::SampleView& s, std::string_view, model::MetricType) {
        Sample x;
        x.name = std::string(s.name);
        for (const auto& l : s.labels) x.labels[std::string(l.name)] = std::string(l.value);
        x.value = s.value;
        EXPECT_TRUE(s.has_timestamp()) << x.name;
        x.ts_ms = s.timestamp_ms;
        out.push_back(std::move(x));
      });
  EXPECT_TRUE(report.has_value());
  if (!report) return out;
  EXPECT_TRUE(report->ok()) << (report->messages.empty() ? "" : report->messages[0]);
  EXPECT_EQ(report->format, expfmt::Format::kOpenMetrics);
  return out;
}

std::string HostOf(const Sample& s) {
  for (const char* k : {"Hostname", "hostname"}) {
    auto it = s.labels.find(k);
    if (it != s.labels.end()) return it->second;
  }
  auto it = s.labels.find("instance");
  return it == s.labels.end() ? "" : it->second.substr(0, it->second.rfind(':'));
}

TEST_F(FleetGeneratorTest, SuiteIsDeterministicAndSized) {
  const std::vector<FleetCase> a = MakeFleetSuite(3);
  const std::vector<FleetCase> b = MakeFleetSuite(3);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_GE(a.size(), 22u);
  std::set<std::string> names;
  bool big_sensitivity = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].description, b[i].description);
    EXPECT_TRUE(names.insert(a[i].name).second) << a[i].name;
    EXPECT_GE(a[i].nodes, 12) << a[i].name;
    EXPECT_LE(a[i].nodes, 24) << a[i].name;
    EXPECT_GE(a[i].duration_s, 2400) << a[i].name;
    EXPECT_LE(a[i].duration_s, 4200) << a[i].name;
    const int releases =
        static_cast<int>(std::count_if(a[i].releases.begin(), a[i].releases.end(),
                                       [](const Release& r) { return r.rollback_of < 0; }));
    EXPECT_GE(releases, 3) << a[i].name;
    EXPECT_LE(releases, 5) << a[i].name;
    for (const Release& r : a[i].releases) {
      if (a[i].cls == FleetClass::kSensitivity && r.effect.kind == EffectKind::kSlower) {
        const double gpus = static_cast<double>(r.deploys.size()) * a[i].gpus_per_node;
        const double after = a[i].duration_s - r.deploys.back().at_s;
        big_sensitivity |= gpus >= 16 && after >= 1500;
      }
    }
  }
  EXPECT_TRUE(big_sensitivity);
}

// Recording readable (and replayable as the product reads it), releases
// loadable, labels consistent with both.
TEST_F(FleetGeneratorTest, FilesAreReadableAndLabelsConsistent) {
  const FleetCase c = MakeSmallCase(FleetClass::kStaged, 11, 1200);
  const FleetFiles f = Generate(c);
  ASSERT_FALSE(f.telemetry.empty());
  const std::vector<Sample> samples = ReadAll(f.telemetry);
  EXPECT_EQ(samples.size(), f.samples);

  Result<std::unique_ptr<analysis::Replay>> replay =
      analysis::Replay::Open({{f.telemetry, analysis::Role::kBaseline, std::nullopt}});
  ASSERT_TRUE(replay.has_value()) << replay.error().message();
  analysis::Tick tick;
  int ticks = 0;
  for (;;) {
    Result<bool> more = (*replay)->Next(tick);
    ASSERT_TRUE(more.has_value()) << more.error().message();
    if (!*more) break;
    ++ticks;
  }
  EXPECT_GT(ticks, 100);
  EXPECT_EQ(static_cast<int>((*replay)->gpus().size()), c.nodes * c.gpus_per_node);

  Result<std::vector<releases::Release>> log = releases::LoadReleasesJsonl(f.releases);
  ASSERT_TRUE(log.has_value()) << log.error().message();
  EXPECT_EQ(log->size(), c.releases.size());
  std::set<std::string> ids, hosts(c.hosts.begin(), c.hosts.end());
  for (const releases::Release& r : *log) {
    ids.insert(r.id);
    EXPECT_GE(r.started_at, static_cast<double>(f.start_unix_s));
    for (const std::string& t : r.targets) EXPECT_TRUE(hosts.count(t)) << t;
  }
  ASSERT_FALSE(f.events.empty());
  bool guilty = false;
  for (const FleetEvent& e : f.events) {
    if (e.type == "release") {
      guilty = true;
      EXPECT_TRUE(ids.count(e.release)) << e.release;
      EXPECT_FALSE(e.kinds.empty());
      EXPECT_EQ(e.must, Must::kYes);
    }
    ASSERT_EQ(e.nodes.size(), e.node_onsets.size());
    for (const std::string& n : e.nodes) EXPECT_TRUE(hosts.count(n)) << n;
    EXPECT_GE(e.onset, static_cast<double>(f.start_unix_s));
    EXPECT_LE(e.onset, static_cast<double>(f.start_unix_s) + c.duration_s);
  }
  EXPECT_TRUE(guilty);

  std::ifstream in(f.labels);
  const nlohmann::json labels = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(labels.is_discarded());
  EXPECT_EQ(labels["events"].size(), f.events.size());
  EXPECT_EQ(labels["case"], c.name);
}

// A deploy with a restart leaves that node's vLLM series without samples for
// the restart, and its counters start again from 0.
TEST_F(FleetGeneratorTest, DeployRestartIsAGapInTheServerSeries) {
  FleetCase c = MakeSmallCase(FleetClass::kHealthy, 5, 1200);
  c.expo.miss_prob = 0;
  c.expo.vllm_hostname_label = false;
  Deploy* restart = nullptr;
  for (Release& r : c.releases) {
    for (Deploy& d : r.deploys) {
      if (d.at_s < c.duration_s - 120 && restart == nullptr) {
        d.restart_s = 30;
        restart = &d;
      }
    }
  }
  ASSERT_NE(restart, nullptr);
  const Deploy d = *restart;
  const FleetFiles f = Generate(c);
  const std::string host = c.hosts[static_cast<std::size_t>(d.node)];
  std::vector<std::int64_t> ts;
  double before = -1, after = -1;
  for (const Sample& s : ReadAll(f.telemetry)) {
    if (s.name != "vllm:generation_tokens_total" || HostOf(s) != host) continue;
    if (s.labels.count("engine") && s.labels.at("engine") != "0") continue;
    ts.push_back(s.ts_ms);
    const double t = static_cast<double>(s.ts_ms) / 1000 - static_cast<double>(f.start_unix_s);
    if (t < d.at_s) before = s.value;
    if (t > d.at_s + d.restart_s && after < 0) after = s.value;
  }
  ASSERT_GT(ts.size(), 10u);
  std::int64_t widest = 0;
  for (std::size_t i = 1; i < ts.size(); ++i) widest = std::max(widest, ts[i] - ts[i - 1]);
  EXPECT_GE(widest, 25000);  // 30 s restart, 5 or 15 s scrapes
  EXPECT_GT(before, 0);
  EXPECT_GE(after, 0);
  EXPECT_LT(after, before);  // counters restarted
}

TEST_F(FleetGeneratorTest, NoThrottleFieldMeansNoThrottleSeries) {
  FleetCase c = MakeSmallCase(FleetClass::kHealthy, 7, 900);
  c.expo.throttle_field = false;
  const FleetFiles f = Generate(c);
  const std::vector<Sample> samples = ReadAll(f.telemetry);
  ASSERT_FALSE(samples.empty());
  for (const Sample& s : samples) {
    ASSERT_NE(s.name, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS");
    ASSERT_NE(s.name, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS");
  }
  EXPECT_TRUE(std::any_of(samples.begin(), samples.end(),
                          [](const Sample& s) { return s.name == "DCGM_FI_DEV_SM_CLOCK"; }));
}

// Ground truth: a release 2 % slower per step shows as ~2 % more inter-token
// latency on its nodes against their own past (the labeller's measure).
TEST_F(FleetGeneratorTest, TwoPercentReleaseIsTwoPercentSlower) {
  const FleetCase c = MakeSmallCase(FleetClass::kSensitivity, 3, 1800);
  const FleetFiles f = Generate(c);
  const FleetEvent* e = nullptr;
  for (const FleetEvent& x : f.events) {
    if (x.type == "release") e = &x;
  }
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->measure, "per_token_latency");
  EXPECT_EQ(e->nodes.size(), 4u);  // 16 GPUs
  EXPECT_GT(e->magnitude, 0.01);
  EXPECT_LT(e->magnitude, 0.04);
}

TEST(FleetScoreTest, MatchesReportsToEvents) {
  FleetEvent rel;
  rel.type = "release";
  rel.release = "vllm-0.11.1-build.8";
  rel.nodes = {"n1", "n2"};
  rel.node_onsets = {1000, 1300};
  rel.onset = 1000;
  rel.kinds = {"software_regression"};
  FleetEvent load;
  load.type = "load";
  load.nodes = {"n1", "n2", "n3"};
  load.node_onsets = {5000, 5000, 5000};
  load.onset = 5000;
  load.must = Must::kNo;
  const std::string json = R"({"regressions": [
    {"metric": "vllm:inter_token_latency_seconds", "at": 1100, "change": 0.1, "gpus": ["n1/0"],
     "nodes": ["n1"], "suspects": [{"release": "vllm-0.11.1-build.8", "score": 0.9}],
     "causes": [{"kind": "software_regression", "scope": "release"}],
     "candidates": [{"release": "vllm-0.11.1-build.8"}, {"release": "other"}]},
    {"metric": "DCGM_FI_PROF_SM_OCCUPANCY", "at": 1400, "change": -0.1, "gpus": ["n2/1"],
     "suspects": [], "causes": [{"kind": null, "scope": "node"}]},
    {"metric": "vllm:e2e_request_latency_seconds", "at": 5100, "change": 0.5, "gpus": ["n3/0"],
     "suspects": [{"release": "other"}], "causes": []}
  ]})";
  Result<std::vector<Report>> reports = ParseCorrelateJson(json);
  ASSERT_TRUE(reports.has_value()) << reports.error().message();
  const CaseScore s = ScoreCase({rel, load}, *reports, 0);
  EXPECT_EQ(s.events, 1);
  EXPECT_EQ(s.reports, 3);
  EXPECT_EQ(s.matched, 2);
  EXPECT_EQ(s.noise, 1);
  EXPECT_EQ(s.dup, 1);
  EXPECT_EQ(s.found, 1);
  EXPECT_EQ(s.top1, 1);
  EXPECT_EQ(s.top3, 1);
  EXPECT_EQ(s.false_blames, 1);
  EXPECT_EQ(s.kinds_ok, 1);
  EXPECT_FALSE(ParseCorrelateJson("{\"regressions\": 3}").has_value());
  EXPECT_FALSE(ParseCorrelateJson("not json").has_value());
}

}  // namespace
}  // namespace gpucanary::eval::fleet
