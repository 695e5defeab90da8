// Fuzz target for the simulator's scenario parser: any bytes give a Scenario
// or an error with a position, never a crash, hang or escaping exception.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto scenario = gpucanary::sim::ParseScenario(text, "fuzz.yaml");
  if (!scenario && scenario.error().message().rfind("fuzz.yaml", 0) != 0) {
    std::abort();  // every error must name the file (and a position)
  }
  return 0;
}
