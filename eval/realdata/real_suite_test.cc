// The judge on real GPU traces (docs/judge-accuracy.md, "Real traces"):
// every pair as labelled, the power-cap regressions failed as power_cap with
// scope release within the canary's busy period, and no summary contradicting
// its own numbers.

#include "eval/realdata/real_suite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace gpucanary::eval::realdata {
namespace {

class RealSuiteTest : public ::testing::TestWithParam<RealCase> {};

TEST_P(RealSuiteTest, AsLabelled) {
  const RealCase& c = GetParam();
  RunOptions options;
  options.shared_dir = GPUCANARY_SHARED_DIR;
  options.work_dir =
      (std::filesystem::path(::testing::TempDir()) / ("real_suite_" + std::to_string(::getpid())))
          .string();
  Result<RealOutcome> o = RunRealCase(c, options);
  ASSERT_TRUE(o.has_value()) << o.error().message();
  std::string causes;
  for (const analysis::Cause& cause : o->report.causes) causes += "\n  " + cause.summary;
  EXPECT_TRUE(o->ok) << c.name << " (" << c.what << "): expected " << ExpectName(c.expect) << " "
                     << c.cause << ", got " << analysis::VerdictName(o->report.verdict) << causes;
  if (c.expect == Expect::kFail && o->busy_to_s) {
    EXPECT_TRUE(o->within_busy) << c.name << ": decided after the canary's busy period";
  }
  for (const std::string& line : o->contradictions) ADD_FAILURE() << c.name << ": " << line;
  std::filesystem::remove_all(std::filesystem::path(options.work_dir) / c.name);
}

INSTANTIATE_TEST_SUITE_P(Traces, RealSuiteTest, ::testing::ValuesIn(RealCases()),
                         [](const ::testing::TestParamInfo<RealCase>& info) {
                           std::string name;
                           for (char ch : info.param.name) name += ch == '-' ? '_' : ch;
                           return name;
                         });

}  // namespace
}  // namespace gpucanary::eval::realdata
