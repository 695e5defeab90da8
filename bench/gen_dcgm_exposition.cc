// Prints the dcgm-exporter-style exposition the benchmarks use, for N GPUs, so
// whole-command comparisons (gpucanary check vs promtool check metrics) can be
// run by anyone:  gen_dcgm_exposition 1000 > /tmp/dcgm-1000.prom

#include <cstdio>
#include <cstdlib>

#include "dcgm_exposition.h"

int main(int argc, char** argv) {
  const int gpus = argc > 1 ? std::atoi(argv[1]) : 1000;
  if (gpus <= 0) {
    std::fprintf(stderr, "usage: gen_dcgm_exposition GPUS (a positive number)\n");
    return 3;
  }
  const std::string text = gpucanary::bench::MakeDcgmExposition(gpus);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
