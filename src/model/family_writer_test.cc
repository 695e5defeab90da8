#include "model/family_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpucanary::model {
namespace {

TEST(FamilyWriterTest, WritesHeaderAndSamples) {
  std::string out;
  FamilyWriter w(out);
  w.Family("gpucanary_scrapes_total", MetricType::kCounter, "Scrapes finished.");
  w.Sample({}, "12");
  w.Family("gpucanary_canary_state", MetricType::kGauge, "A live canary's state.");
  w.Sample({{"canary", "c1"}, {"state", "running"}}, "1");
  EXPECT_EQ(out,
            "# HELP gpucanary_scrapes_total Scrapes finished.\n"
            "# TYPE gpucanary_scrapes_total counter\n"
            "gpucanary_scrapes_total 12\n"
            "# HELP gpucanary_canary_state A live canary's state.\n"
            "# TYPE gpucanary_canary_state gauge\n"
            "gpucanary_canary_state{canary=\"c1\",state=\"running\"} 1\n");
}

TEST(FamilyWriterTest, EscapesLabelValuesAndKeepsEmptyOnes) {
  std::string out;
  FamilyWriter w(out);
  w.Family("m", MetricType::kGauge, "h");
  const std::vector<LabelView> labels = {{"a", "x\"y\\z\nw"}, {"node", ""}};
  w.Sample(labels, "0");
  EXPECT_EQ(out,
            "# HELP m h\n# TYPE m gauge\n"
            "m{a=\"x\\\"y\\\\z\\nw\",node=\"\"} 0\n");
}

TEST(FamilyWriterTest, EscapesHelpAsTextFormat004) {
  std::string out;
  FamilyWriter w(out);
  w.Family("m", MetricType::kUnknown, "a \\ b\nc \"d\"");
  EXPECT_EQ(out, "# HELP m a \\\\ b\\nc \"d\"\n# TYPE m unknown\n");
}

TEST(FamilyWriterTest, WritesACallersLabelText) {
  std::string out;
  FamilyWriter w(out);
  w.Family("m", MetricType::kGauge, "h");
  w.SampleWithLabelText("{gpu=\"0\"}", "1.500000");
  w.SampleWithLabelText("", "2");
  EXPECT_EQ(out, "# HELP m h\n# TYPE m gauge\nm{gpu=\"0\"} 1.500000\nm 2\n");
}

}  // namespace
}  // namespace gpucanary::model
