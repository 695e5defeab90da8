#pragma once
// TLS sections of gpucanary's configuration, read and checked in one place
// with Prometheus's spelling:
//
//   tls_config:                  # a client: scrape jobs, publish.grafana,
//     ca_file: ca.pem            # publish.otlp, actions' http,
//     cert_file: client.pem      # canary.history_prometheus, argo
//     key_file: client.key
//     server_name: dcgm.internal
//     insecure_skip_verify: false
//
//   tls_server_config:           # the daemon's listener (Prometheus's
//     cert_file: server.pem      # --web.config.file names)
//     key_file: server.key
//     client_ca_file: clients.pem
//     client_auth_type: RequireAndVerifyClientCert
//
// Paths are relative to the configuration file's folder (`base_dir`) and
// must be readable when the file is read; that OpenSSL can use them is
// checked when the client or listener first loads them. Errors are
// kParseError "FILE:LINE:COL: field.key: what" (config::Reporter).

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "config/yaml_fields.h"
#include "core/status.h"
#include "net/tls_options.h"

namespace gpucanary::config {

// Reads the `tls_config` map `node` named `field` ("publish.grafana.tls_config").
Result<net::TlsClientOptions> ReadTlsClientConfig(const Reporter& r, const YAML::Node& node,
                                                  std::string_view field,
                                                  const std::string& base_dir);

// Reads the `tls_server_config` map `node` named `field`. client_auth_type
// takes NoClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert
// (Go's RequestClientCert and RequireAnyClientCert, which skip the check of
// the client's certificate, are refused); without it, a client_ca_file
// means RequireAndVerifyClientCert.
Result<net::TlsServerOptions> ReadTlsServerConfig(const Reporter& r, const YAML::Node& node,
                                                  std::string_view field,
                                                  const std::string& base_dir);

}  // namespace gpucanary::config
