#pragma once
// Test helpers for live replays: a tick written as sorted text lines that
// name GPUs, nodes and metrics, so that ticks from two replays (a file and a
// store, a store and a Prometheus) compare although their indices differ.
// Header-only; for tests.

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "analysis/replay/replay.h"

namespace gpucanary::analysis::testing {

// "%.17g", or "-" for no value.
inline std::string Num(std::optional<double> v) {
  if (!v) return "-";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", *v);
  return buf;
}

// A tick as sorted lines, its time first.
inline std::vector<std::string> Describe(const Tick& tick, const Replay& replay) {
  std::vector<std::string> out;
  const auto& metrics = replay.metrics();
  for (const Point& p : tick.gpu_points) {
    out.push_back(replay.gpus()[static_cast<std::size_t>(p.entity)].key + " " +
                  metrics[static_cast<std::size_t>(p.metric)].name + " " + Num(p.value) + " " +
                  Num(p.increase));
  }
  for (const Point& p : tick.node_points) {
    out.push_back(replay.nodes()[static_cast<std::size_t>(p.entity)].host + " " +
                  metrics[static_cast<std::size_t>(p.metric)].name + " " + Num(p.value) + " " +
                  Num(p.increase));
  }
  for (const HistogramPoint& h : tick.histograms) {
    std::string line = replay.nodes()[static_cast<std::size_t>(h.node)].host + " " +
                       metrics[static_cast<std::size_t>(h.metric)].name;
    for (const Bucket& b : tick.BucketsOf(h)) {
      line += " " + Num(b.le) + ":" + Num(b.value) + ":" + Num(b.increase);
    }
    out.push_back(line);
  }
  std::sort(out.begin(), out.end());
  out.insert(out.begin(), "t=" + std::to_string(tick.time_s));
  return out;
}

}  // namespace gpucanary::analysis::testing
