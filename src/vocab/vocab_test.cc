#include "vocab/vocab.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gpucanary::vocab {
namespace {

using ::testing::ElementsAre;

template <typename E>
std::vector<std::string> Names() {
  std::vector<std::string> out;
  for (const Word<E>& w : Words<E>()) out.emplace_back(w.name);
  return out;
}

// Every value once, named, described, and read back from its name.
template <typename E>
void ExpectWellFormed() {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < Words<E>().size(); ++i) {
    const Word<E>& w = Words<E>()[i];
    EXPECT_EQ(static_cast<std::size_t>(w.value), i);
    EXPECT_FALSE(w.name.empty());
    EXPECT_FALSE(w.description.empty()) << w.name;
    EXPECT_TRUE(names.insert(w.name).second) << "duplicate name " << w.name;
    EXPECT_EQ(Name(w.value), w.name);
    EXPECT_EQ(Description(w.value), w.description);
    EXPECT_EQ(Parse<E>(w.name), w.value);
  }
}

TEST(VocabTest, TablesHoldEveryValueOnceInEnumOrder) {
  ExpectWellFormed<CauseKind>();
  ExpectWellFormed<Scope>();
  ExpectWellFormed<Verdict>();
  ExpectWellFormed<CanaryState>();
}

// The wire names are a contract (docs/contracts.md §6): these exact words,
// in this order.
TEST(VocabTest, WireNamesAreTheContractsWords) {
  EXPECT_THAT(Names<CauseKind>(),
              ElementsAre("thermal_throttle", "power_brake", "power_cap", "hw_slowdown",
                          "pcie_downtrain", "pcie_errors", "memory_thrash", "low_occupancy",
                          "xid_errors", "ecc_errors", "software_regression"));
  EXPECT_THAT(Names<Scope>(), ElementsAre("release", "node", "fleet"));
  EXPECT_THAT(Names<Verdict>(), ElementsAre("pass", "fail", "inconclusive"));
  EXPECT_THAT(Names<CanaryState>(),
              ElementsAre("running", "passed", "failed", "inconclusive", "aborted"));
}

TEST(VocabTest, ParseIsExact) {
  EXPECT_EQ(Parse<CauseKind>("power_brake"), CauseKind::kPowerBrake);
  EXPECT_EQ(Parse<CauseKind>("Power_Brake"), std::nullopt);
  EXPECT_EQ(Parse<CauseKind>("power_brake "), std::nullopt);
  EXPECT_EQ(Parse<CauseKind>(""), std::nullopt);
  EXPECT_EQ(Parse<CauseKind>("thermal"), std::nullopt);  // the simulator's fault name
  EXPECT_EQ(Parse<Scope>("any"), std::nullopt);
  EXPECT_EQ(Parse<Verdict>("not_fail"), std::nullopt);  // the suite's label, not a verdict
  EXPECT_EQ(Parse<CanaryState>("inconclusive"), CanaryState::kInconclusive);
  EXPECT_EQ(Parse<Verdict>("inconclusive"), Verdict::kInconclusive);
}

TEST(VocabTest, UsableAtCompileTime) {
  static_assert(Name(Scope::kNode) == "node");
  static_assert(Parse<Verdict>("fail") == Verdict::kFail);
  static_assert(!Parse<Scope>("pending").has_value());
}

TEST(VocabTest, JsonWritesTheWireName) {
  nlohmann::json j = {{"kind", CauseKind::kXidErrors},
                      {"scope", Scope::kFleet},
                      {"verdict", Verdict::kPass},
                      {"state", CanaryState::kAborted}};
  EXPECT_EQ(j.dump(),
            R"({"kind":"xid_errors","scope":"fleet","state":"aborted","verdict":"pass"})");
  nlohmann::ordered_json o;
  o["kind"] = CauseKind::kPowerBrake;
  EXPECT_EQ(o.dump(), R"({"kind":"power_brake"})");
}

TEST(VocabTest, StreamsWriteTheWireName) {
  std::ostringstream out;
  out << CauseKind::kLowOccupancy << ' ' << Scope::kRelease << ' ' << Verdict::kInconclusive << ' '
      << CanaryState::kRunning;
  EXPECT_EQ(out.str(), "low_occupancy release inconclusive running");
}

}  // namespace
}  // namespace gpucanary::vocab
