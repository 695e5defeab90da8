#pragma once
// The `canary:` section of `gpucanary serve`'s configuration
// (docs/configuration.md):
//
//   canary:
//     policy: policies/llm.yaml   # judge policy; the built-in default if absent
//     history: 5m                 # canary GPUs' own history before the release
//     duration: 10m               # the verdict at started_at + duration is final
//     baseline_nodes: 4           # at most this many baseline hosts
//     lag: 2500ms                 # second t is judged at t + 1 s + lag
//     history_prometheus:         # history the store lacks, from a Prometheus
//       url: http://prometheus:9090
//       token_file: prom-token    # or token: "..." (not both)
//       headers: {X-Scope-OrgID: fleet-a}
//       timeout: 10s
//
// Errors are kParseError "FILE:LINE:COL: canary.duration: ..." (a policy
// file's own errors name that file).

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "canary/manager.h"
#include "config/yaml_fields.h"
#include "core/status.h"

namespace gpucanary::canary {

// Reads `node` (the section's value) into `options`; relative policy paths
// are taken from `base_dir` (the configuration file's directory).
Status ReadCanaryConfig(const config::Reporter& r, const YAML::Node& node,
                        const std::string& base_dir, CanaryOptions& options);

}  // namespace gpucanary::canary
