// The field suite (README.md) as a CI accuracy check: the judge against
// scenarios it was not tuned on. Seed 1, one case of each kind the judge of
// issue 18 gets right on seeds 1-3 — a healthy release (plain, with missing
// fields, with a canary given 1.4x the traffic), a slower release, a power
// cap, a PCIe downtrain, an idle canary, an XID crash loop — each generated,
// judged as `gpucanary judge` does, and held to its labels: verdict, and for
// a fail the cause's kind and scope. A change that breaks one of these breaks
// the judge on data it did not make; the whole suite's figures are in
// docs/judge-accuracy.md.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "analysis/policy/policy.h"
#include "eval/field/field_case.h"
#include "eval/field/field_generator.h"
#include "eval/field/field_run.h"

namespace gpucanary::eval::field {
namespace {

const std::map<std::string, FieldCase>& Seed1() {
  static const std::map<std::string, FieldCase> cases = [] {
    std::map<std::string, FieldCase> out;
    for (FieldCase& c : MakeSuite(1, 56)) out.emplace(c.name, std::move(c));
    return out;
  }();
  return cases;
}

class FieldAccuracyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FieldAccuracyTest, VerdictAndCauseAsLabelled) {
  const auto it = Seed1().find(GetParam());
  ASSERT_NE(it, Seed1().end()) << GetParam() << " is not a seed-1 case any more";
  const FieldCase& c = it->second;
  const std::string dir = ::testing::TempDir() + "/field_accuracy_" + c.name;
  std::filesystem::create_directories(dir);
  Result<CaseFiles> files = GenerateCase(c, dir, false);
  ASSERT_TRUE(files.has_value()) << files.error().message();
  Result<analysis::Policy> policy = analysis::DefaultPolicy();
  ASSERT_TRUE(policy.has_value());
  Result<FieldOutcome> o = JudgeCase(c, *files, *policy);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(o.has_value()) << o.error().message();
  std::string causes;
  for (const std::string& k : o->causes) causes += k + " ";
  EXPECT_TRUE(o->verdict_ok) << c.name << ": " << c.description << "; verdict "
                             << analysis::VerdictName(o->verdict) << "; causes " << causes << "; "
                             << o->first_summary;
  if (c.expect == Expect::kFail) {
    EXPECT_TRUE(o->cause_ok) << c.name << ": causes " << causes << "; " << o->first_summary;
  }
}

INSTANTIATE_TEST_SUITE_P(Seed1, FieldAccuracyTest,
                         ::testing::Values("aa-02", "missing-fields-02", "load-mismatch-03",
                                           "software-slower-01", "power-cap-01",
                                           "pcie-downtrain-01", "canary-idle-01",
                                           "xid-crashloop-01"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

}  // namespace
}  // namespace gpucanary::eval::field
