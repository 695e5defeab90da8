// LoadCorrelateSuite on malformed labels: every error names the file, the
// line and column, and the field.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "eval/correlate/suite.h"
#include "vocab/vocab.h"

namespace gpucanary::eval::correlate {
namespace {

using ::testing::HasSubstr;

std::string Write(const std::string& name, const std::string& text) {
  const std::filesystem::path p =
      std::filesystem::path(::testing::TempDir()) / (std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p.string();
}

std::string ErrorOf(const std::string& name, const std::string& text) {
  Result<std::vector<CorrelateCase>> cases = LoadCorrelateSuite(Write(name, text));
  EXPECT_FALSE(cases.has_value()) << name;
  return cases.has_value() ? "" : cases.error().message();
}

constexpr const char* kGood =
    "cases:\n"
    "  - file: a.yaml\n"
    "    category: guilty\n"
    "    guilty: r2\n"
    "    kind: power_brake\n"
    "    releases: [stable, r2]\n";

TEST(CorrelateSuiteLabelsTest, AGoodCaseLoads) {
  Result<std::vector<CorrelateCase>> cases = LoadCorrelateSuite(Write("good.yaml", kGood));
  ASSERT_TRUE(cases.has_value()) << cases.error().message();
  ASSERT_EQ(cases->size(), 1u);
  EXPECT_EQ((*cases)[0].name, "a");
  EXPECT_EQ((*cases)[0].guilty, "r2");
  EXPECT_EQ((*cases)[0].kind, vocab::CauseKind::kPowerBrake);
  EXPECT_EQ((*cases)[0].releases, (std::vector<std::string>{"stable", "r2"}));
}

TEST(CorrelateSuiteLabelsTest, MalformedLabelsAreErrorsWithTheirPlace) {
  EXPECT_THAT(ErrorOf("unknown.yaml", std::string(kGood) + "    colour: red\n"),
              AllOf(HasSubstr("unknown.yaml:7:"), HasSubstr("colour")));
  EXPECT_THAT(
      ErrorOf("category.yaml",
              "cases:\n  - file: a.yaml\n    category: maybe\n    releases: [a]\n"),
      AllOf(HasSubstr("category.yaml:3:"), HasSubstr("expected one of guilty, none, mixed")));
  EXPECT_THAT(ErrorOf("missing.yaml", "cases:\n  - file: a.yaml\n    category: none\n"),
              AllOf(HasSubstr("cases[0].releases"), HasSubstr("required field is missing")));
  EXPECT_THAT(ErrorOf("notin.yaml",
                      "cases:\n  - file: a.yaml\n    category: guilty\n    guilty: r9\n"
                      "    kind: power_brake\n    releases: [stable, r2]\n"),
              AllOf(HasSubstr("notin.yaml:4:"), HasSubstr("'r9' is not in the case's releases")));
  EXPECT_THAT(ErrorOf("kind.yaml",
                      "cases:\n  - file: a.yaml\n    category: guilty\n    guilty: r2\n"
                      "    kind: power_brakes\n    releases: [stable, r2]\n"),
              AllOf(HasSubstr("kind.yaml:5:"), HasSubstr("cases[0].kind"),
                    HasSubstr("unknown cause kind 'power_brakes' (valid: thermal_throttle, "
                              "power_brake,")));
  EXPECT_THAT(ErrorOf("noneguilty.yaml",
                      "cases:\n  - file: a.yaml\n    category: none\n    guilty: r2\n"
                      "    releases: [stable, r2]\n"),
              HasSubstr("a case of category none names no guilty release"));
  EXPECT_THAT(ErrorOf("guiltyless.yaml",
                      "cases:\n  - file: a.yaml\n    category: guilty\n    releases: [a]\n"),
              HasSubstr("required for a guilty or mixed case"));
  EXPECT_THAT(ErrorOf("twice.yaml", std::string(kGood) + std::string(kGood).substr(7)),
              HasSubstr("'a' is labelled twice"));
  EXPECT_THAT(
      ErrorOf("list.yaml", "cases:\n  - file: a.yaml\n    category: none\n    releases: stable\n"),
      AllOf(HasSubstr("list.yaml:4:"), HasSubstr("expected a list")));
  EXPECT_THAT(ErrorOf("empty.yaml", "cases: []\n"), HasSubstr("expected a non-empty list"));
  EXPECT_THAT(ErrorOf("syntax.yaml", "cases: [\n"), HasSubstr("syntax.yaml:"));
  Result<std::vector<CorrelateCase>> none = LoadCorrelateSuite("/nonexistent/labels.yaml");
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpucanary::eval::correlate
