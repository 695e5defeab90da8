#pragma once
// The words gpucanary's outputs are made of (docs/contracts.md §6): cause
// kinds, scopes, verdicts and canary states, each an enum with one table that
// gives every value its wire name (the exact text in JSON, CLI output, YAML,
// the metadata database and the self-metrics) and a description for people
// (the words the dashboard shows, which the daemon serves at
// GET /api/v1/vocabulary, docs/http-api.md). Code compares enums; text
// becomes an enum through Parse, and an enum becomes text through Name, so a
// word is spelled once, here.
//
//   vocab::Name(vocab::CauseKind::kPowerBrake)       // "power_brake"
//   vocab::Parse<vocab::Scope>("node")               // vocab::Scope::kNode
//   for (const auto& w : vocab::Words<vocab::Verdict>()) ...  // in enum order
//
// Values are in the order of the contract's lists; each table holds every
// value once, in enum order (checked at compile time below and by the test).
// Adding a value means adding its row here; the API and the dashboard follow.
//
// Thread-safe: constant data and pure functions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpucanary::vocab {

// The mechanism behind a finding (docs/contracts.md §6, `causes[].kind`;
// docs/analysis-method.md, "Diagnosis", says how each is found).
enum class CauseKind : std::uint8_t {
  kThermalThrottle,
  kPowerBrake,
  kPowerCap,
  kHwSlowdown,
  kPcieDowntrain,
  kPcieErrors,
  kMemoryThrash,
  kLowOccupancy,
  kXidErrors,
  kEccErrors,
  kSoftwareRegression,
};

// What a cause is blamed on: the release, one node's own fault, or (the
// correlation's) the whole fleet at once (docs/contracts.md §6 and §7).
enum class Scope : std::uint8_t { kRelease, kNode, kFleet };

// The judge's answer (docs/contracts.md §6, `verdict`).
enum class Verdict : std::uint8_t { kPass, kFail, kInconclusive };

// Where a live canary stands (docs/canaries.md, "Durability"): running until
// it ends in one of the other four.
enum class CanaryState : std::uint8_t { kRunning, kPassed, kFailed, kInconclusive, kAborted };

// One row of a table.
template <typename E>
struct Word {
  E value;
  std::string_view name;         // the wire name
  std::string_view description;  // for people: a phrase the dashboard shows as is
};

inline constexpr std::array<Word<CauseKind>, 11> kCauseKinds = {{
    {CauseKind::kThermalThrottle, "thermal_throttle",
     "the GPU ran too hot and cut its clocks (clock-event reasons 0x20 or 0x40)"},
    {CauseKind::kPowerBrake, "power_brake",
     "the hardware power brake held the SM clock down (clock-event reason 0x80)"},
    {CauseKind::kPowerCap, "power_cap",
     "the software power cap held power at the enforced limit, and the SM clock with it "
     "(clock-event reason 0x4)"},
    {CauseKind::kHwSlowdown, "hw_slowdown",
     "a hardware slowdown held the SM clock down (clock-event reason 0x8 alone)"},
    {CauseKind::kPcieDowntrain, "pcie_downtrain",
     "the PCIe link trained below the GPU's maximum width or generation"},
    {CauseKind::kPcieErrors, "pcie_errors", "PCIe replays (link-level retransmissions) went up"},
    {CauseKind::kMemoryThrash, "memory_thrash",
     "DRAM busier for less useful work: DRAM activity rose faster than tensor activity"},
    {CauseKind::kLowOccupancy, "low_occupancy",
     "kernels keep fewer warps resident: SM occupancy fell while the SMs stayed as busy"},
    {CauseKind::kXidErrors, "xid_errors", "the driver reported XID errors on the GPU"},
    {CauseKind::kEccErrors, "ecc_errors",
     "ECC memory errors: new uncorrectable (DBE) ones, or more correctable (SBE) ones"},
    {CauseKind::kSoftwareRegression, "software_regression",
     "the service got slower with no hardware mechanism: clocks, throttling, PCIe, occupancy "
     "and DRAM efficiency unchanged"},
}};

// The descriptions are the phrases the correlation view has always shown
// after a cause ("power_brake — a release explains this").
inline constexpr std::array<Word<Scope>, 3> kScopes = {{
    {Scope::kRelease, "release", "a release explains this"},
    {Scope::kNode, "node", "no release explains this (the node's own fault)"},
    {Scope::kFleet, "fleet", "no release explains this (the whole fleet changed at once)"},
}};

inline constexpr std::array<Word<Verdict>, 3> kVerdicts = {{
    {Verdict::kPass, "pass", "enough evidence that the release does no harm"},
    {Verdict::kFail, "fail", "halt the release"},
    {Verdict::kInconclusive, "inconclusive",
     "not enough evidence either way, or only node faults were found and too few healthy "
     "canary GPUs are left"},
}};

inline constexpr std::array<Word<CanaryState>, 5> kCanaryStates = {{
    {CanaryState::kRunning, "running", "the judge is still reading the canary's telemetry"},
    {CanaryState::kPassed, "passed",
     "ended with the verdict pass (or stopped after the judge had passed it)"},
    {CanaryState::kFailed, "failed", "ended with the verdict fail; the actions ran"},
    {CanaryState::kInconclusive, "inconclusive",
     "ran its whole duration without enough evidence to pass or fail"},
    {CanaryState::kAborted, "aborted",
     "stopped before a verdict (a rollout decided elsewhere), or its telemetry could not be "
     "read"},
}};

// Every value of E with its name and description, in enum order.
template <typename E>
constexpr std::span<const Word<E>> Words();
template <>
constexpr std::span<const Word<CauseKind>> Words<CauseKind>() {
  return kCauseKinds;
}
template <>
constexpr std::span<const Word<Scope>> Words<Scope>() {
  return kScopes;
}
template <>
constexpr std::span<const Word<Verdict>> Words<Verdict>() {
  return kVerdicts;
}
template <>
constexpr std::span<const Word<CanaryState>> Words<CanaryState>() {
  return kCanaryStates;
}

// The wire name of `value` ("power_brake").
template <typename E>
constexpr std::string_view Name(E value) {
  return Words<E>()[static_cast<std::size_t>(value)].name;
}

// The description of `value` for people.
template <typename E>
constexpr std::string_view Description(E value) {
  return Words<E>()[static_cast<std::size_t>(value)].description;
}

// The value whose wire name is `name` (exact, case-sensitive); nullopt for
// any other text. Callers keep their own message for an unknown word.
template <typename E>
constexpr std::optional<E> Parse(std::string_view name) {
  for (const Word<E>& w : Words<E>()) {
    if (w.name == name) return w.value;
  }
  return std::nullopt;
}

// nlohmann::json writes a value as its wire name: found by argument-dependent
// lookup and more specialized than the library's own enum conversion, so a
// value put into a JSON object is never written as a number (what
// NLOHMANN_JSON_SERIALIZE_ENUM declares); templates, so this header does not
// need the JSON library.
// NOLINTBEGIN(readability-identifier-naming): the name nlohmann looks up
template <typename Json>
void to_json(Json& j, CauseKind value) {
  j = std::string(Name(value));
}
template <typename Json>
void to_json(Json& j, Scope value) {
  j = std::string(Name(value));
}
template <typename Json>
void to_json(Json& j, Verdict value) {
  j = std::string(Name(value));
}
template <typename Json>
void to_json(Json& j, CanaryState value) {
  j = std::string(Name(value));
}
// NOLINTEND(readability-identifier-naming)

// Writes the wire name (test failure messages read "power_brake", not 1).
std::ostream& operator<<(std::ostream& out, CauseKind value);
std::ostream& operator<<(std::ostream& out, Scope value);
std::ostream& operator<<(std::ostream& out, Verdict value);
std::ostream& operator<<(std::ostream& out, CanaryState value);

namespace internal {

// Row i of the table holds value i, so Name and Description can index.
template <typename E>
constexpr bool InEnumOrder() {
  const std::span<const Word<E>> words = Words<E>();
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (static_cast<std::size_t>(words[i].value) != i) return false;
  }
  return true;
}

}  // namespace internal

static_assert(internal::InEnumOrder<CauseKind>());
static_assert(internal::InEnumOrder<Scope>());
static_assert(internal::InEnumOrder<Verdict>());
static_assert(internal::InEnumOrder<CanaryState>());
static_assert(kCauseKinds.size() == static_cast<std::size_t>(CauseKind::kSoftwareRegression) + 1);
static_assert(kScopes.size() == static_cast<std::size_t>(Scope::kFleet) + 1);
static_assert(kVerdicts.size() == static_cast<std::size_t>(Verdict::kInconclusive) + 1);
static_assert(kCanaryStates.size() == static_cast<std::size_t>(CanaryState::kAborted) + 1);

}  // namespace gpucanary::vocab
