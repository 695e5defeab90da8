// Fuzz target for the exposition parser, validator and reader: any bytes, read
// as both formats, must give a report (never a crash, hang or sanitizer error),
// and the same bytes split into two chunks at a line break must give the same
// verdict as one buffer.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "expfmt/reader.h"

using gpucanary::expfmt::ExpositionReader;
using gpucanary::expfmt::Format;
using gpucanary::expfmt::ReadBuffer;
using gpucanary::expfmt::ReadOptions;
using gpucanary::expfmt::SampleView;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ReadOptions options;
  options.skip_bad_lines = true;
  for (Format format : {Format::kPrometheusText, Format::kOpenMetrics}) {
    std::uint64_t samples = 0;
    const auto whole = ReadBuffer(text, format, "fuzz", options,
                                  [&](const SampleView&, std::string_view, auto) { ++samples; });
    if (whole.stats.samples != samples) std::abort();

    // Same input fed in two chunks cut after the first line break.
    const std::size_t nl = text.find('\n');
    if (nl != std::string_view::npos) {
      ExpositionReader reader(format, "fuzz", options, {});
      reader.Feed(text.substr(0, nl + 1), false);
      reader.Feed(text.substr(nl + 1), true);
      const auto split = reader.Finish();
      if (split.bad_lines != whole.bad_lines || split.stats.samples != whole.stats.samples ||
          split.stats.series != whole.stats.series) {
        std::abort();
      }
    }
  }
  return 0;
}
