// tcpd_score: scores cpd::Segment on the univariate TCPD series
// (shared/data/tcpd) with TCPDBench's F1 and Cover, next to the zero
// detector, and prints the table as Markdown (docs/analysis-method.md,
// "Change points").
//
//   build/release/eval/cpd/tcpd_score                  # the default configuration
//   build/release/eval/cpd/tcpd_score --penalty_scale=4 --min_segment=3
//   build/release/eval/cpd/tcpd_score --data=DIR       # another copy of TCPD
//
// Exit status: 0, or 2 for a bad flag, 3 when the data cannot be loaded.

#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "analysis/cpd/cpd.h"
#include "eval/cpd/tcpd_metrics.h"

namespace {

namespace cpd = gpucanary::analysis::cpd;
namespace tcpd = gpucanary::eval::cpd::tcpd;

// "--name=value" -> value when arg starts with "--name=".
bool FlagValue(std::string_view arg, std::string_view name, std::string* value) {
  if (arg.size() < name.size() + 3 || arg.substr(0, 2) != "--" ||
      arg.substr(2, name.size()) != name || arg[2 + name.size()] != '=') {
    return false;
  }
  *value = std::string(arg.substr(3 + name.size()));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = std::string(GPUCANARY_SHARED_DIR) + "/data/tcpd";
  cpd::SegmentOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    std::string value;
    if (FlagValue(arg, "data", &value)) {
      data_dir = value;
    } else if (FlagValue(arg, "penalty_scale", &value)) {
      options.penalty_scale = std::strtod(value.c_str(), nullptr);
    } else if (FlagValue(arg, "min_segment", &value)) {
      options.min_segment = std::strtoul(value.c_str(), nullptr, 10);
    } else {
      std::fprintf(stderr,
                   "usage: tcpd_score [--data=DIR] [--penalty_scale=X] [--min_segment=N]\n");
      return 2;
    }
  }
  auto data = tcpd::LoadDataset(data_dir);
  if (!data) {
    std::fprintf(stderr, "%s\n", data.error().ToString().c_str());
    return 3;
  }
  const tcpd::ScoreTable table = tcpd::ScoreUnivariate(
      *data, [&options](std::span<const double> y) { return cpd::Segment(y, options); });
  std::fputs(tcpd::FormatMarkdown(table).c_str(), stdout);
  return 0;
}
