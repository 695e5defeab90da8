#include "eval/suite/suite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "expfmt/reader.h"
#include "model/metric_type.h"

namespace gpucanary::eval::suite {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string SuiteDir() { return std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/suite"; }

const std::vector<SuiteCase>& Suite() {
  static const std::vector<SuiteCase> cases = [] {
    Result<std::vector<SuiteCase>> s = LoadSuite(SuiteDir() + "/labels.yaml");
    EXPECT_TRUE(s.has_value()) << s.error().message();
    return s ? *s : std::vector<SuiteCase>{};
  }();
  return cases;
}

std::vector<const SuiteCase*> OfCategory(Category category) {
  std::vector<const SuiteCase*> out;
  for (const SuiteCase& c : Suite()) {
    if (c.category == category) out.push_back(&c);
  }
  return out;
}

bool HasTag(const SuiteCase& c, const std::string& tag) {
  return std::find(c.tags.begin(), c.tags.end(), tag) != c.tags.end();
}

TEST(SuiteTest, LabelsLoadAndEveryScenarioIsLabelledOnce) {
  ASSERT_FALSE(Suite().empty());
  std::set<std::string> labelled;
  for (const SuiteCase& c : Suite()) {
    EXPECT_TRUE(fs::exists(c.path)) << c.path;
    EXPECT_EQ(c.scenario.file, c.path);
    EXPECT_FALSE(c.description.empty()) << c.name;
    labelled.insert(c.file);
  }
  for (const auto& entry : fs::directory_iterator(SuiteDir())) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".yaml" || name == "labels.yaml") continue;
    EXPECT_TRUE(labelled.contains(name)) << name << " is not in labels.yaml";
  }
}

TEST(SuiteTest, EveryCategoryMeetsTheIssuesCounts) {
  const auto aa = OfCategory(Category::kAa);
  const auto release = OfCategory(Category::kRelease);
  const auto node = OfCategory(Category::kNode);
  const auto regression = OfCategory(Category::kRegression);
  EXPECT_GE(aa.size(), 30u);
  EXPECT_FALSE(release.empty());
  EXPECT_FALSE(node.empty());
  EXPECT_FALSE(regression.empty());

  // A/A confounders: blips, load shifts, a fleet-wide heat event, bursts, diurnal.
  for (const char* tag : {"blip", "load_shift", "heat", "bursts", "diurnal"}) {
    EXPECT_TRUE(std::any_of(aa.begin(), aa.end(), [&](const SuiteCase* c) {
      return HasTag(*c, tag);
    })) << tag;
  }
  // Every cause of the vocabulary, caused by a release.
  std::set<std::string> covered;
  for (const SuiteCase* c : release) {
    for (const ExpectedCause& cause : c->causes) {
      if (cause.scope == vocab::Scope::kRelease)
        covered.insert(std::string(vocab::Name(cause.kind)));
    }
  }
  for (std::string_view kind : CauseKinds()) {
    EXPECT_TRUE(covered.contains(std::string(kind))) << kind << " has no release case";
  }
  // Subtle regressions: at least 3 each of 5% and 10% slower.
  std::map<int, int> by_percent;
  for (const SuiteCase* c : regression) {
    const double slowdown = c->scenario.releases.at(c->release).slowdown;
    ++by_percent[static_cast<int>(std::lround((slowdown - 1) * 100))];
  }
  EXPECT_GE(by_percent[5], 3);
  EXPECT_GE(by_percent[10], 3);
}

TEST(SuiteTest, NodeFaultsCoverTheShapesTheIssueAsksFor) {
  bool one_canary_after = false;
  bool canary_before = false;
  bool baseline = false;
  bool subset = false;
  bool one_of_eight = false;
  for (const SuiteCase* c : OfCategory(Category::kNode)) {
    for (const ExpectedCause& cause : c->causes) {
      const bool on_canary = std::find(c->canary_nodes.begin(), c->canary_nodes.end(),
                                       cause.node) != c->canary_nodes.end();
      ASSERT_TRUE(c->onset_s.has_value()) << c->name;
      one_canary_after |= on_canary && *c->onset_s > c->release_start_s;
      canary_before |= on_canary && *c->onset_s < c->release_start_s;
      baseline |= !on_canary;
      int gpus_on_node = 0;
      for (const sim::NodeGroup& g : c->scenario.fleet) {
        if (std::find(g.hostnames.begin(), g.hostnames.end(), cause.node) != g.hostnames.end()) {
          gpus_on_node = g.gpus_per_node;
        }
      }
      const auto faulted = static_cast<int>(cause.gpus.size());
      subset |= faulted > 1 && faulted < gpus_on_node;
      one_of_eight |= faulted == 1 && gpus_on_node == 8;
    }
    // Only the seed's throttle rule halts a canary for a node's fault.
    const bool halt = std::find(c->tags.begin(), c->tags.end(), "halt") != c->tags.end();
    if (!halt) EXPECT_NE(c->verdict, Verdict::kFail) << c->name;
  }
  EXPECT_TRUE(one_canary_after);
  EXPECT_TRUE(canary_before);
  EXPECT_TRUE(baseline);
  EXPECT_TRUE(subset);
  EXPECT_TRUE(one_of_eight);
}

TEST(SuiteTest, ReleaseCasesNameAnOnsetAtOrAfterTheDeploy) {
  for (const SuiteCase& c : Suite()) {
    if (c.category == Category::kAa) {
      EXPECT_FALSE(c.onset_s.has_value()) << c.name;
      continue;
    }
    ASSERT_TRUE(c.onset_s.has_value()) << c.name;
    if (c.category == Category::kRelease || c.category == Category::kRegression) {
      EXPECT_GE(*c.onset_s, c.release_start_s) << c.name;
    }
  }
}

struct BadLabels {
  const char* name;
  const char* yaml;
  const char* prefix;  // "file:line:col: field:"
  const char* detail;
};

// One good case; bad ones change a line of it.
constexpr const char* kGood = R"(cases:
  - file: release-power-brake-1.yaml
    category: release
    release: next
    canary_nodes: [node-2, node-5]
    release_start: 60
    verdict: fail
    causes: [{kind: power_brake, scope: release}]
    onset_s: 70
    description: "brake"
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(SuiteTest, GoodLabelsParse) {
  Result<std::vector<SuiteCase>> s = ParseSuite(kGood, SuiteDir() + "/t.yaml");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ASSERT_EQ(s->size(), 1u);
  const SuiteCase& c = (*s)[0];
  EXPECT_EQ(c.name, "release-power-brake-1");
  EXPECT_EQ(c.category, Category::kRelease);
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_DOUBLE_EQ(c.release_start_s, 60);
  EXPECT_EQ(c.onset_s, 70);
  ASSERT_EQ(c.causes.size(), 1u);
  EXPECT_EQ(c.causes[0].kind, vocab::CauseKind::kPowerBrake);
  EXPECT_EQ(CategoryName(c.category), "release");
  EXPECT_EQ(VerdictName(Verdict::kNotFail), "not_fail");
}

TEST(SuiteTest, BadLabelsNameFileLineColumnAndField) {
  const std::string t = SuiteDir() + "/t.yaml";
  const BadLabels cases[] = {
      {"unknown key", "    colour: red\n", "t.yaml:11:5: cases[0].colour:", "unknown field"},
      {"missing file", "cases:\n  - {category: aa}\n",
       "t.yaml:2:5: cases[0].file:", "required field is missing"},
      {"empty cases", "cases: []\n", "t.yaml:1:8: cases:", "non-empty list"},
      {"unknown category", "category: rel\n",
       "t.yaml:3:15: cases[0].category:", "expected one of aa, release, node, regression"},
      {"unknown verdict", "verdict: flaky\n",
       "t.yaml:7:14: cases[0].verdict:", "expected one of pass, fail, not_fail"},
      {"missing scenario file", "file: nope.yaml\n",
       "t.yaml:2:11: cases[0].file:", "cannot open scenario file"},
      {"unknown release", "release: other\n",
       "t.yaml:4:14: cases[0].release:", "release 'other' is not in release-power-brake-1.yaml"},
      {"canary node not in the fleet", "canary_nodes: [node-2, node-9]\n",
       "t.yaml:5:28: cases[0].canary_nodes[1]:", "node 'node-9' is not in"},
      {"deploy at another time", "release_start: 90\n", "t.yaml:6:20: cases[0].release_start:",
       "does not deploy 'next' on exactly [node-2, node-5]"},
      {"deploy elsewhere", "canary_nodes: [node-2]\n",
       "t.yaml:6:20: cases[0].release_start:", "does not deploy"},
      {"bad release_start", "release_start: soon\n",
       "t.yaml:6:20: cases[0].release_start:", "bad duration 'soon'"},
      {"onset after the end", "onset_s: 1h\n",
       "t.yaml:9:14: cases[0].onset_s:", "after the end of the scenario"},
      {"unknown cause kind", "causes: [{kind: brownout, scope: release}]\n",
       "t.yaml:8:21: cases[0].causes[0].kind:", "unknown cause kind (valid: thermal_throttle"},
      {"unknown scope", "causes: [{kind: power_brake, scope: fleet}]\n",
       "t.yaml:8:41: cases[0].causes[0].scope:", "expected one of release, node"},
      {"node cause without a node", "causes: [{kind: power_brake, scope: node}]\n",
       "t.yaml:8:14: cases[0].causes[0].node:", "must name its node"},
      {"gpu of another node",
       "causes: [{kind: power_brake, scope: release, node: node-2, gpus: [node-5/0]}]\n",
       "t.yaml:8:71: cases[0].causes[0].gpus[0]:", "is not a GPU <node>/<index> of node-2"},
      {"gpu index outside the node",
       "causes: [{kind: power_brake, scope: release, gpus: [node-5/4]}]\n",
       "t.yaml:8:57: cases[0].causes[0].gpus[0]:", "is not a GPU"},
      {"release case that passes", "verdict: pass\n",
       "t.yaml:7:14: cases[0].verdict:", "a release fault must fail"},
      {"release case with node causes only",
       "causes: [{kind: power_brake, scope: node, node: node-5}]\n",
       "t.yaml:8:13: cases[0].causes:", "expected a cause with scope release"},
      {"aa case with causes", "category: aa\n",
       "t.yaml:7:14: cases[0].verdict:", "an aa case must not fail"},
      {"node case that fails", "category: node\n",
       "t.yaml:7:14: cases[0].verdict:", "node faults alone never fail"},
      {"regression without software_regression", "category: regression\n",
       "t.yaml:8:13: cases[0].causes:", "a regression needs software_regression"},
  };
  for (const BadLabels& c : cases) {
    std::string text;
    const std::string yaml = c.yaml;
    if (yaml.starts_with("cases:")) {
      text = yaml;
    } else if (yaml.starts_with("    ")) {
      text = kGood + yaml;
    } else {
      // Replace the line of that key (after its indentation or "- ").
      const std::string key = yaml.substr(0, yaml.find(':') + 1);
      const std::size_t at = std::string(kGood).find(" " + key);
      ASSERT_NE(at, std::string::npos) << c.name;
      const std::size_t eol = std::string(kGood).find('\n', at);
      text = Replace(kGood, std::string(kGood).substr(at + 1, eol - at), yaml);
    }
    Result<std::vector<SuiteCase>> s = ParseSuite(text, t);
    ASSERT_FALSE(s.has_value()) << c.name;
    EXPECT_EQ(s.error().code(), StatusCode::kParseError) << c.name;
    EXPECT_THAT(s.error().message(), StartsWith(SuiteDir() + "/" + c.prefix)) << c.name;
    EXPECT_THAT(s.error().message(), HasSubstr(c.detail)) << c.name;
  }
}

TEST(SuiteTest, DuplicateFilesSyntaxErrorsAndMissingLabels) {
  const std::string t = SuiteDir() + "/t.yaml";
  const std::string twice =
      std::string(kGood) + std::string(kGood).substr(std::string("cases:\n").size());
  Result<std::vector<SuiteCase>> s = ParseSuite(twice, t);
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message(), HasSubstr("t.yaml:11:11: cases[1].file: "
                                             "'release-power-brake-1.yaml' is labelled twice"));
  s = ParseSuite("cases: [\n", t);
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message(), ::testing::MatchesRegex(".*t\\.yaml:[0-9]+:[0-9]+: syntax: .*"));
  s = LoadSuite("/nonexistent/labels.yaml");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), StatusCode::kNotFound);
  // A scenario that does not parse: the labels entry, then the scenario's position.
  const fs::path dir = fs::path(::testing::TempDir()) / "gpucanary-suite-bad";
  fs::create_directories(dir);
  std::ofstream(dir / "bad.yaml") << "duration: 60s\nfleet: [{nodes: n1, gpu: h300}]\n";
  s = ParseSuite(Replace(kGood, "release-power-brake-1.yaml", "bad.yaml"),
                 (dir / "labels.yaml").string());
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message(), HasSubstr("labels.yaml:2:11: cases[0].file: "));
  EXPECT_THAT(s.error().message(), HasSubstr("bad.yaml:2:26: fleet[0].gpu: unknown GPU profile"));
  fs::remove_all(dir);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SuiteTest, GenerateCaseWritesCanaryAndBaselineRecordings) {
  ASSERT_FALSE(Suite().empty());
  auto it = std::find_if(Suite().begin(), Suite().end(),
                         [](const SuiteCase& c) { return c.name == "release-power-brake-1"; });
  ASSERT_NE(it, Suite().end());
  SuiteCase c = *it;
  c.scenario.duration_s = 90;  // past the deploy (60 s) and both restarts; quick in a debug build
  const std::string dir = ::testing::TempDir() + "gpucanary-suite-generate";
  Result<CaseFiles> files = GenerateCase(c, dir, false);
  ASSERT_TRUE(files.has_value()) << files.error().message();
  EXPECT_EQ(files->canary, dir + "/canary.om");
  EXPECT_EQ(files->baseline, dir + "/baseline.om");
  EXPECT_DOUBLE_EQ(files->release_start_unix_s, 1764680060.0);
  EXPECT_EQ(files->stats.scrapes, 90u);

  std::set<std::string> hosts;
  std::set<std::string> families;
  auto report = expfmt::ReadFile(
      files->canary, expfmt::ReadOptions{},
      [&](const expfmt::SampleView& s, std::string_view family, model::MetricType) {
        if (auto h = s.Label("Hostname")) hosts.insert(std::string(*h));
        families.insert(std::string(family));
      });
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->ok()) << (report->messages.empty() ? "" : report->messages[0]);
  EXPECT_EQ(hosts, (std::set<std::string>{"node-2", "node-5"}));
  EXPECT_TRUE(families.contains("vllm:inter_token_latency_seconds"));
  hosts.clear();
  report = expfmt::ReadFile(files->baseline, expfmt::ReadOptions{},
                            [&](const expfmt::SampleView& s, std::string_view, model::MetricType) {
                              if (auto h = s.Label("Hostname")) hosts.insert(std::string(*h));
                            });
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(hosts, (std::set<std::string>{"node-1", "node-3", "node-4", "node-6"}));
  const std::string truth = Slurp(files->truth);
  EXPECT_THAT(truth, HasSubstr(R"("kind":"power_brake","scope":"release","release":"next")"));
  EXPECT_THAT(Slurp(files->releases), HasSubstr(R"("targets":["node-2","node-5"])"));

  // The same case again, gzip-compressed: the same recording.
  Result<CaseFiles> again = GenerateCase(c, dir + "-gz", true);
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(again->canary, dir + "-gz/canary.om.gz");
  EXPECT_EQ(again->stats.samples, files->stats.samples);
  fs::remove_all(dir);
  fs::remove_all(dir + "-gz");
}

}  // namespace
}  // namespace gpucanary::eval::suite
