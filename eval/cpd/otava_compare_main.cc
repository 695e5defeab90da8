// otava_compare: the default cpd::Segment (PELT) against Apache Otava's
// expected change points on the TigerBeetle series, for the ten settings of
// Otava's tests/tigerbeetle_test.py (shared/data/otava-tigerbeetle), and the
// C++ Otava port's reproduction of each list. Prints a Markdown table for
// docs/analysis-method.md.
//
//   build/release/eval/cpd/otava_compare [--data=DIR]
//
// A match is TCPDBench's: each of Otava's points takes at most one of ours
// within +-5 indices (tcpd::TruePositives). Segment takes no parameters from
// the setting, so its list is the same on every row.
// Exit status: 0, 2 for a bad flag, 3 when the data cannot be loaded.

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "analysis/cpd/cpd.h"
#include "analysis/cpd/otava.h"
#include "analysis/cpd/tigerbeetle_data.h"
#include "eval/cpd/tcpd_metrics.h"

namespace {

namespace cpd = gpucanary::analysis::cpd;
namespace tb = gpucanary::analysis::cpd::tigerbeetle;
namespace tcpd = gpucanary::eval::cpd::tcpd;

void PrintTable(const tb::Data& data) {
  const std::vector<std::size_t> ours = cpd::Segment(data.series);
  std::printf(
      "| setting | window | max p | min magnitude | Otava | port = Otava | PELT | matched "
      "(+-5) |\n| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n");
  for (const tb::Case& c : data.cases) {
    const bool reproduced = cpd::OtavaChangePoints(data.series, c.options) == c.expected;
    const std::size_t matched = tcpd::TruePositives(c.expected, ours, tcpd::kMargin);
    std::printf("| %s | %zu | %g | %g | %zu | %s | %zu | %zu of %zu |\n", c.test.c_str(),
                c.options.window_len, c.options.max_pvalue, c.options.min_magnitude,
                c.expected.size(), reproduced ? "yes" : "NO", ours.size(), matched,
                c.expected.size());
  }
  std::printf("\nPELT (default Segment): [%s]\n", tb::Join(ours).c_str());
}

int Run(int argc, char** argv) {
  std::string dir = std::string(GPUCANARY_SHARED_DIR) + "/data/otava-tigerbeetle";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--data=")) {
      dir = std::string(arg.substr(7));
    } else {
      std::fprintf(stderr, "usage: otava_compare [--data=DIR]\n");
      return 2;
    }
  }
  const tb::Data data = tb::Load(dir);
  if (!data.error.empty()) {
    std::fprintf(stderr, "otava_compare: %s\n", data.error.c_str());
    return 3;
  }
  PrintTable(data);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The loader reads JSON and numbers with throwing parsers; a malformed
  // file is bad input, not a crash.
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "otava_compare: %s\n", e.what());
    return 3;
  }
}
