// Goal G-CPD-3 (shared/reference/papers-benchmarks.md, section 6): the default
// cpd::Segment, one fixed configuration for every series, scores a mean F1 >=
// 0.75 on the 31 local univariate TCPD series (binseg's default: 0.714, the
// zero detector: 0.663) and a mean Cover no lower than the zero detector's.
// The per-series table is printed; `tcpd_score` prints the same one.

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <span>

#include "analysis/cpd/cpd.h"
#include "eval/cpd/tcpd_metrics.h"

namespace gpucanary::eval::cpd {
namespace {

TEST(CpdTcpdTest, DefaultSegmentBeatsTheGoalOnUnivariateTcpd) {
  auto data = tcpd::LoadDataset(std::filesystem::path(GPUCANARY_SHARED_DIR) / "data/tcpd");
  ASSERT_TRUE(data.has_value()) << data.error().ToString();
  const tcpd::ScoreTable table = tcpd::ScoreUnivariate(
      *data, [](std::span<const double> y) { return analysis::cpd::Segment(y); });
  std::cout << tcpd::FormatMarkdown(table);
  ASSERT_EQ(table.rows.size(), 31u);
  EXPECT_GE(table.mean_f1, 0.75);
  EXPECT_GE(table.mean_cover, table.zero_mean_cover);
}

}  // namespace
}  // namespace gpucanary::eval::cpd
