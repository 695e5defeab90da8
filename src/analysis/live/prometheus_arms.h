#pragma once
// A canary's two arms read whole from a Prometheus-compatible server
// (Prometheus, Thanos, Mimir, VictoriaMetrics): what `gpucanary judge
// --prometheus` replays instead of two recordings (docs/cli.md).
//
//   PrometheusArm canary{Role::kCanary, {"node-4"}, {}};
//   PrometheusArm base{Role::kBaseline, {"node-1", "node-2"}, {}};
//   auto replay = FetchPrometheusArms({url, client}, {canary, base},
//                                     JudgeInputNames(policy), from_s, to_s);
//   while (*(*replay)->Next(tick)) judge.Add(tick, Catalog::Of(**replay));
//
// An arm's series are those whose host label (dcgm-exporter's `Hostname`, or
// `hostname` from 4.8.2 on) is one of its hosts, or, for a series with no
// host label (vLLM's), whose scrape `instance` is one of its hosts with or
// without a port, and whose name the judge reads (a DCGM field under either
// of its names), plus every series each of its selectors matches (a PromQL instant-vector selector:
// service series selected by pod or job). The raw samples of [from_s, to_s) are fetched with
// promql::QueryRaw, as stored (no lookback fill, no step); the replay files them by second exactly
// as it files a recording's.
//
// Errors name the arm and the query: the server's refusal of a selector,
// a series selected by both arms, a range over 24 h or not positive.
// Thread-compatible.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/live/prometheus_history.h"
#include "analysis/replay/replay.h"

namespace gpucanary::analysis {

struct PrometheusArm {
  Role role = Role::kBaseline;
  std::vector<std::string> hosts;      // values of Hostname / hostname
  std::vector<std::string> selectors;  // e.g. {namespace="llm",pod=~"vllm-canary-.*"}
};

// At most this much time is fetched: a canary with its history is minutes
// to hours; a day of 1 s samples is already millions per GPU.
inline constexpr std::int64_t kMaxPrometheusRangeS = std::int64_t{24} * 3600;

// REQUIRES: every arm has a host or a selector.
Result<std::unique_ptr<Replay>> FetchPrometheusArms(const PrometheusHistory::Server& server,
                                                    const std::vector<PrometheusArm>& arms,
                                                    const std::vector<std::string>& names,
                                                    std::int64_t from_s, std::int64_t to_s,
                                                    const ReplayOptions& options = {});

}  // namespace gpucanary::analysis
