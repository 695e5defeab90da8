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
