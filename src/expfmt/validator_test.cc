#include "expfmt/validator.h"

#include <gtest/gtest.h>

#include "expfmt/reader.h"

namespace gpucanary::expfmt {
namespace {

ReadReport Om(std::string_view text) {
  ReadOptions o;
  o.skip_bad_lines = true;
  return ReadBuffer(text, Format::kOpenMetrics, "t.om", o);
}

TEST(ValidatorTest, TimeBlockedRecordingIsAccepted) {
  // Each tick writes every series once; families reappear without metadata.
  const char* text =
      "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} 1980 1.000\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"1\"} 1980 1.000\n"
      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 650.5 1.000\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} 1050 2.000\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"1\"} 1980 2.000\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 700 2.000\n"
      "# EOF\n";
  ReadReport r = Om(text);
  EXPECT_TRUE(r.ok()) << (r.messages.empty() ? "" : r.messages[0]);
  EXPECT_EQ(r.stats.families, 2u);
  EXPECT_EQ(r.stats.series, 3u);
  EXPECT_EQ(r.stats.samples, 6u);
  EXPECT_EQ(r.stats.min_timestamp_ms, 1000);
  EXPECT_EQ(r.stats.max_timestamp_ms, 2000);
}

TEST(ValidatorTest, RecordingGoingBackInTimeIsRejected) {
  ReadReport r =
      Om("# TYPE g gauge\ng{gpu=\"0\"} 1 2.000\n# TYPE h gauge\nh 1 2.000\ng{gpu=\"0\"} 1 1.000\n# "
         "EOF\n");
  ASSERT_EQ(r.bad_lines, 1u);
  EXPECT_NE(r.messages[0].find("t.om:5:1: timestamp"), std::string::npos) << r.messages[0];
}

TEST(ValidatorTest, InterleavedFamiliesWithoutTimestampsAreRejected) {
  ReadReport r = Om("# TYPE g gauge\ng 1\n# TYPE h gauge\nh 1\ng 2\n# EOF\n");
  ASSERT_EQ(r.bad_lines, 1u);
  EXPECT_NE(r.messages[0].find("t.om:5:1"), std::string::npos) << r.messages[0];
  EXPECT_NE(r.messages[0].find("interleaved"), std::string::npos) << r.messages[0];
}

TEST(ValidatorTest, HistogramPointsPerTimestamp) {
  const char* ok =
      "# TYPE lat histogram\n"
      "lat_bucket{le=\"0.1\"} 1 10\nlat_bucket{le=\"+Inf\"} 2 10\nlat_count 2 10\nlat_sum 0.3 10\n"
      "lat_bucket{le=\"0.1\"} 2 11\nlat_bucket{le=\"+Inf\"} 5 11\nlat_count 5 11\nlat_sum 0.9 11\n"
      "# EOF\n";
  EXPECT_TRUE(Om(ok).ok());
  const char* bad_count =
      "# TYPE lat histogram\n"
      "lat_bucket{le=\"0.1\"} 1 10\nlat_bucket{le=\"+Inf\"} 2 10\nlat_count 2 10\nlat_sum 0.3 10\n"
      "lat_bucket{le=\"0.1\"} 2 11\nlat_bucket{le=\"+Inf\"} 5 11\nlat_count 4 11\nlat_sum 0.9 11\n"
      "# EOF\n";
  ReadReport r = Om(bad_count);
  ASSERT_EQ(r.bad_lines, 1u);
  EXPECT_NE(r.messages[0].find("lat_count"), std::string::npos) << r.messages[0];
}

TEST(ValidatorTest, PrometheusDuplicatesAreCountedNotFatal) {
  ReadOptions o;
  o.skip_bad_lines = true;
  ReadReport r =
      ReadBuffer("m{a=\"1\"} 1\nm{a=\"1\"} 2\nm{a=\"\"} 3\nm 4\n", Format::kPrometheusText, "x", o);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stats.series, 2u);  // an empty label value is no label: m{a=""} is m
  EXPECT_EQ(r.stats.duplicate_samples, 2u);
}

TEST(ValidatorTest, LabelOrderDoesNotMakeANewSeries) {
  EXPECT_EQ(HashSeries("m", {{"a", "1"}, {"b", "2"}}), HashSeries("m", {{"b", "2"}, {"a", "1"}}));
  EXPECT_NE(HashSeries("m", {{"a", "1"}, {"b", "2"}}), HashSeries("m", {{"a", "2"}, {"b", "1"}}));
  EXPECT_NE(HashSeries("m", {{"a", "1"}}), HashSeries("n", {{"a", "1"}}));
}

TEST(ValidatorTest, CounterNamesMustFitTheFamily) {
  ReadReport r = Om("# TYPE a counter\na 1\n# EOF\n");
  ASSERT_EQ(r.bad_lines, 1u);
  EXPECT_NE(r.messages[0].find("expected a_total, a_created"), std::string::npos) << r.messages[0];
}

}  // namespace
}  // namespace gpucanary::expfmt
