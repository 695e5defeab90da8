// Fuzz target for release annotations (releases/release.h): any bytes parse
// or give an error, never a crash or an exception. What parses keeps its
// text: the stored annotation parses again to the same release, and an error
// in a JSONL file names a line and column inside the input.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "releases/release.h"

namespace rel = gpucanary::releases;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto r = rel::ParseRelease(text)) {
    auto again = rel::ParseRelease(r->annotation);
    if (!again || again->id != r->id || again->annotation != r->annotation ||
        again->targets != r->targets) {
      std::abort();
    }
  }
  auto lines = rel::ParseReleasesJsonl(text, "f");
  if (!lines && !lines.error().message().starts_with("f:")) std::abort();
  return 0;
}
