// Fuzz target for the scraper's parsers: the scrape config (YAML), file_sd
// target files (JSON and YAML) and Prometheus's /api/v1/targets answer. The
// first byte picks the parser. Any bytes give a result or an error, never a
// crash, hang or escaping exception; a config or target-file error names the
// file (and a position).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "scrape/config.h"
#include "scrape/file_sd.h"
#include "scrape/prometheus_sd.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto c = gpucanary::scrape::ParseScrapeConfig(text, "fuzz.yaml");
      if (!c && c.error().message().rfind("fuzz.yaml:", 0) != 0) std::abort();
      break;
    }
    case 1:
    case 2: {
      const char* name = data[0] % 4 == 1 ? "fuzz.json" : "fuzz.yml";
      auto g = gpucanary::scrape::ParseTargetFile(text, name);
      if (!g && g.error().message().rfind(std::string(name) + ":", 0) != 0) std::abort();
      break;
    }
    default: {
      auto g = gpucanary::scrape::ParsePrometheusTargets(text, "dcgm", "http://p", nullptr);
      static_cast<void>(g);
      break;
    }
  }
  return 0;
}
