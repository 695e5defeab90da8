#pragma once
// Reads Prometheus relabel_configs / metric_relabel_configs lists from YAML,
// as Prometheus's config loader reads them (model/relabel Config.UnmarshalYAML
// and Validate): keys source_labels, separator, regex, modulus, target_label,
// replacement, action; defaults ";", "(.*)", "$1", replace; a key given as
// null (`regex:`) is its zero value, as yaml.v2 decodes it ("" for the
// strings, so `regex:` matches only the empty string). Names are checked with
// legacy validation ([a-zA-Z_][a-zA-Z0-9_]*): gpucanary's store holds legacy
// names only. Every error is a kParseError "FILE:LINE:COL: field.path: what",
// the column that of the offending rule or value.

#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/relabel.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace gpucanary::config {
class Reporter;
}  // namespace gpucanary::config

namespace gpucanary::scrape {

// `node` is the list; `field` names it in errors ("scrape_configs[0].relabel_configs").
Result<std::vector<model::RelabelRule>> ReadRelabelConfigs(const config::Reporter& r,
                                                           const YAML::Node& node,
                                                           std::string_view field);

// Parses a YAML document that is one relabel list (tests, benchmarks, tools).
// `file_name` names it in errors.
Result<std::vector<model::RelabelRule>> ParseRelabelConfigs(std::string_view yaml_text,
                                                            std::string_view file_name);

}  // namespace gpucanary::scrape
