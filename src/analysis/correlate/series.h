#pragma once
// Internal to analysis/correlate: the fleet's telemetry as bucketed series,
// one per (GPU, metric) and (node, service metric), plus each node's
// model-server restarts. See correlate.h for the method.
//
// Thread-compatible.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/replay/replay.h"
#include "core/status.h"

namespace gpucanary::analysis::correlate {

enum class Level : std::uint8_t { kGpu, kNode };
enum class Reduce : std::uint8_t {
  kMean,             // mean of the values
  kRate,             // counter increase per second
  kBitFraction,      // fraction of seconds with any of `bits` set
  kNonZeroFraction,  // fraction of seconds with a non-zero value
  kRatio,            // increase of `source` / increase of `source2` (a histogram's mean)
  kP99,              // 99th percentile of a histogram's observations
};
enum class Better : std::uint8_t { kHigher, kLower, kNeutral };

// One metric the correlation follows.
struct MetricDef {
  std::string_view name;     // as reported ("DCGM_FI_DEV_SM_CLOCK", "throttle:power_brake")
  std::string_view source;   // replay metric (a histogram's family for kP99)
  std::string_view source2;  // kRatio's denominator
  Level level = Level::kGpu;
  Reduce reduce = Reduce::kMean;
  std::uint64_t bits = 0;  // kBitFraction
  Better better = Better::kNeutral;
  bool relative = true;  // changes as ratios (else differences)
  double floor = 0;      // the smallest change that matters (relative or absolute)
  std::string_view unit;
};

// The metrics, in a fixed order (indices are MetricDef ids).
const std::vector<MetricDef>& Metrics();
int MetricIndex(std::string_view name);  // -1 if none

struct Restart {
  std::int64_t from_s = 0;  // first second the server was down (or reset)
  std::int64_t to_s = 0;    // first second it served again
};

struct EntitySeries {
  int metric = 0;              // into Metrics()
  std::vector<double> values;  // per bucket; NaN: no data
};

struct FleetSeries {
  std::int64_t start_s = 0;  // the first bucket's start (a multiple of resolution_s)
  std::int64_t resolution_s = 10;
  std::size_t buckets = 0;
  std::int64_t first_tick = 0;  // the first and last second with data
  std::int64_t last_tick = 0;
  std::vector<GpuInfo> gpus;  // the replay's, at its end
  std::vector<NodeInfo> nodes;
  // Per GPU (index into gpus), its series; per node likewise.
  std::vector<std::vector<EntitySeries>> gpu_series;
  std::vector<std::vector<EntitySeries>> node_series;
  std::vector<std::vector<Restart>> restarts;  // per node, in time order
  // Per GPU, the most frequent non-zero XID code seen (0: none).
  std::vector<std::uint32_t> xid_codes;

  double BucketStart(std::size_t b) const {
    return static_cast<double>(start_s + static_cast<std::int64_t>(b) * resolution_s);
  }
};

// Reads `replay` to its end (ticks in [from_s, to_s) only) into bucketed
// series of `resolution_s` (0: automatic, see CorrelateOptions), masking
// each node's restarts and the `warmup_s` after them.
Result<FleetSeries> BuildSeries(Replay& replay, std::int64_t resolution_s,
                                std::optional<std::int64_t> from_s,
                                std::optional<std::int64_t> to_s, std::int64_t warmup_s,
                                std::int64_t max_buckets);

}  // namespace gpucanary::analysis::correlate
