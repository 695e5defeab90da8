#include "scrape/file_sd.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace gpucanary::scrape {
namespace {

namespace fs = std::filesystem;

TEST(ParseTargetFileTest, ReadsJsonAndYaml) {
  const std::string json = R"([
  {"targets": ["10.0.0.1:9400", "10.0.0.2:9400"], "labels": {"site": "a"}},
  {"targets": ["node-3"]}
])";
  Result<std::vector<TargetGroup>> j = ParseTargetFile(json, "t.json");
  ASSERT_TRUE(j.has_value()) << j.error().message();
  ASSERT_EQ(j->size(), 2U);
  EXPECT_EQ((*j)[0].targets, (std::vector<std::string>{"10.0.0.1:9400", "10.0.0.2:9400"}));
  EXPECT_EQ((*j)[0].labels, (LabelPairs{{"site", "a"}}));
  EXPECT_EQ((*j)[0].source, "t.json:2:3");
  EXPECT_EQ((*j)[1].targets, (std::vector<std::string>{"node-3:80"}));

  const std::string yaml = "- targets: ['h:1']\n  labels:\n    rack: r1\n";
  Result<std::vector<TargetGroup>> y = ParseTargetFile(yaml, "t.yml");
  ASSERT_TRUE(y.has_value()) << y.error().message();
  EXPECT_EQ((*y)[0].labels, (LabelPairs{{"rack", "r1"}}));
  EXPECT_TRUE(ParseTargetFile("", "empty.yaml")->empty());
}

TEST(ParseTargetFileTest, ErrorsNameFileLineAndColumn) {
  struct Case {
    const char* name;
    const char* text;
    const char* error;
  };
  for (const Case& c : {
           Case{"t.json", "[\n  {\"targets\": [\"h:1\",]}\n]\n",
                "t.json:2:22: syntax: syntax error while parsing value - unexpected ']'; "
                "expected '[', '{', or a literal"},
           Case{"t.json", "[{\"targets\": [\"h:1\"], \"lables\": {}}]",
                "t.json:1:23: [0].lables: unknown field (expected one of targets, labels)"},
           Case{"t.json", "{\"targets\": [\"h:1\"]}",
                "t.json:1:1: file: expected a list of target groups"},
           Case{"t.yaml", "- targets: ['h:1', 'h:1/metrics']\n",
                "t.yaml:1:20: [0].targets[1]: bad target address 'h:1/metrics': expected "
                "host:port, without a path"},
           Case{"t.yaml", "- labels: {a: b}\n", "t.yaml:1:3: [0].targets: missing"},
           Case{"t.yaml", "- targets: ['h:1']\n  labels: {a-b: c}\n",
                "t.yaml:2:12: [0].labels.a-b: invalid label name"},
           Case{"t.yaml", "- targets: ['h:1'\n",
                "t.yaml:2:1: syntax: end of sequence flow not found"},
       }) {
    Result<std::vector<TargetGroup>> r = ParseTargetFile(c.text, c.name);
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_EQ(r.error().code(), StatusCode::kParseError);
    EXPECT_EQ(r.error().message(), c.error) << c.text;
  }
}

class FileSdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpucanary-file-sd-" + std::to_string(getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    // Make the change visible even within one mtime tick.
    fs::last_write_time(dir_ / name,
                        fs::last_write_time(dir_ / name) + std::chrono::seconds(++tick_));
  }

  static std::vector<std::string> Addresses(const FileSd& sd) {
    std::vector<std::string> out;
    for (const TargetGroup& g : sd.Groups())
      out.insert(out.end(), g.targets.begin(), g.targets.end());
    return out;
  }

  fs::path dir_;
  int tick_ = 0;
};

// Prometheus's file SD labels each group with __meta_filepath (relabeling may read it).
TEST_F(FileSdTest, GroupsCarryTheirFilePath) {
  Write("a.json", R"([{"targets": ["h:1"], "labels": {"site": "x"}}])");
  FileSdConfig c;
  c.files = {(dir_ / "a.json").string()};
  FileSd sd(c);
  std::vector<Status> errors;
  EXPECT_TRUE(sd.Refresh(false, &errors));
  ASSERT_EQ(sd.Groups().size(), 1U);
  EXPECT_EQ(sd.Groups()[0].labels,
            (LabelPairs{{"site", "x"}, {"__meta_filepath", (dir_ / "a.json").string()}}));
}

TEST_F(FileSdTest, ReloadsChangedFilesKeepsLastGoodAndDropsDeletedOnes) {
  FileSdConfig c;
  c.files = {(dir_ / "*.json").string(), (dir_ / "extra.yaml").string()};
  FileSd sd(c);
  std::vector<Status> errors;
  EXPECT_FALSE(sd.Refresh(false, &errors));  // nothing there yet
  EXPECT_TRUE(Addresses(sd).empty());

  Write("a.json", R"([{"targets": ["h:1"]}])");
  Write("extra.yaml", "- targets: ['h:3']\n");
  EXPECT_TRUE(sd.Refresh(false, &errors));
  EXPECT_EQ(Addresses(sd), (std::vector<std::string>{"h:1", "h:3"}));
  EXPECT_FALSE(sd.Refresh(false, &errors));  // unchanged: not re-read

  Write("b.json", R"([{"targets": ["h:2"]}])");
  EXPECT_TRUE(sd.Refresh(false, &errors));
  EXPECT_EQ(Addresses(sd), (std::vector<std::string>{"h:1", "h:2", "h:3"}));
  EXPECT_TRUE(errors.empty());

  // A bad edit keeps the last good targets and reports where it broke.
  Write("a.json", R"([{"targets": ["h:1", "h:9"]})");
  EXPECT_FALSE(sd.Refresh(false, &errors));
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].message().rfind((dir_ / "a.json").string() + ":1:", 0), 0U)
      << errors[0].message();
  EXPECT_EQ(Addresses(sd), (std::vector<std::string>{"h:1", "h:2", "h:3"}));
  EXPECT_EQ(sd.CurrentErrors().size(), 1U);

  Write("a.json", R"([{"targets": ["h:1", "h:9"]}])");
  errors.clear();
  EXPECT_TRUE(sd.Refresh(false, &errors));
  EXPECT_TRUE(errors.empty());
  EXPECT_TRUE(sd.CurrentErrors().empty());
  EXPECT_EQ(Addresses(sd), (std::vector<std::string>{"h:1", "h:9", "h:2", "h:3"}));

  fs::remove(dir_ / "b.json");
  EXPECT_TRUE(sd.Refresh(false, &errors));
  EXPECT_EQ(Addresses(sd), (std::vector<std::string>{"h:1", "h:9", "h:3"}));
}

}  // namespace
}  // namespace gpucanary::scrape
