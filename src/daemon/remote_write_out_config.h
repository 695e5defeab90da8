#pragma once
// `remote_write_out:` of serve.yaml (docs/remote-write-out.md,
// "Configuration"): a list of receivers, each with the keys of Prometheus's
// `remote_write` entries that gpucanary supports. Errors name file, line,
// column and field ("serve.yaml:30:7: remote_write_out[0].queue_config.shards:
// ...").

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/yaml_fields.h"
#include "core/status.h"
#include "remote/sender.h"

namespace gpucanary::daemon {

// `node` is the list; `base` the configuration file's folder (relative
// tls and credential files).
Result<std::vector<remote::SenderConfig>> ReadRemoteWriteOut(const config::Reporter& r,
                                                             const YAML::Node& node,
                                                             const std::string& base);

}  // namespace gpucanary::daemon
