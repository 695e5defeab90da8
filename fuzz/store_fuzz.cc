// Fuzz target for the store's decoders: the first byte picks one.
//   0: DecodeChunk on the rest. Any bytes decode or give an error, never a
//      crash; what decodes re-encodes and decodes to the same bits.
//   1: ParseSelector on the rest: matchers or an error with a position.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "model/matcher.h"
#include "store/chunk.h"

namespace st = gpucanary::store;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    std::vector<st::Sample> samples;
    if (!st::DecodeChunk(rest, samples).ok()) return 0;
    for (std::size_t i = 1; i < samples.size(); ++i) {
      if (samples[i].t <= samples[i - 1].t) return 0;  // EncodeChunk requires increasing t
    }
    std::string again;
    st::EncodeChunk(samples, again);
    std::vector<st::Sample> back;
    if (!st::DecodeChunk(again, back).ok() || back.size() != samples.size()) std::abort();
    for (std::size_t i = 0; i < back.size(); ++i) {
      if (back[i].t != samples[i].t ||
          std::bit_cast<std::uint64_t>(back[i].v) != std::bit_cast<std::uint64_t>(samples[i].v)) {
        std::abort();
      }
    }
    return 0;
  }
  auto matchers = gpucanary::model::ParseSelector(rest);
  if (!matchers && matchers.error().message().empty()) std::abort();
  return 0;
}
