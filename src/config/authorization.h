#pragma once
// Prometheus's `authorization` section of an HTTP client (remote_write_out
// entries, kubernetes_sd_configs), read and checked in one place:
//
//   authorization:
//     type: Bearer                 # default; any scheme but Basic (basic_auth is its own key)
//     credentials: s3cret          # or
//     credentials_file: token      # relative to the configuration file's folder
//
// Errors are kParseError "FILE:LINE:COL: field.key: what" (config::Reporter).

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "config/yaml_fields.h"
#include "core/status.h"

namespace gpucanary::config {

struct Authorization {
  std::string type = "Bearer";
  // The credentials as read now (inline, or the file's content).
  std::string credentials;
  // The file's path (made absolute against the base folder) when the
  // credentials come from one, so that a client may read it again per
  // request; empty for inline credentials.
  std::string credentials_file;
};

// Reads `node`, the section named `field`. The credentials are required and
// read now (a missing or empty file is an error here, not at first use);
// `type` must be a token and not Basic, which is refused with `basic_hint`
// ("(use basic_auth for Basic)" where the caller has basic_auth).
Result<Authorization> ReadAuthorization(const Reporter& r, const YAML::Node& node,
                                        const std::string& field, const std::string& base_dir,
                                        std::string_view basic_hint);

}  // namespace gpucanary::config
