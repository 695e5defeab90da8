#pragma once
// What a TLS client or listener is configured with, as plain values: the
// configuration readers (config/tls_config.h) fill these without seeing
// OpenSSL or Asio; src/net turns them into OpenSSL contexts
// (net/tls_context.h). The names are Prometheus's: a scrape config's
// `tls_config` and the web config's `tls_server_config`.

#include <cstdint>
#include <string>

namespace gpucanary::net {

// A client's `tls_config`. Every file is PEM; an empty path is unset.
struct TlsClientOptions {
  // The CAs that may sign the server's certificate; empty: the system's
  // store (OpenSSL's default verify paths, /etc/ssl/certs on Debian).
  std::string ca_file;
  // A client certificate (chain) and its key, for servers that ask for one;
  // both or neither.
  std::string cert_file;
  std::string key_file;
  // The name sent as SNI and checked against the server's certificate;
  // empty: the URL's host.
  std::string server_name;
  // Accept any server certificate (no chain or name check). For tests and
  // self-signed exporters only.
  bool insecure_skip_verify = false;

  friend bool operator==(const TlsClientOptions&, const TlsClientOptions&) = default;
};

// Prometheus's web-config client_auth_type values that OpenSSL can enforce.
enum class ClientAuth : std::uint8_t {
  kNoClientCert,                // none asked for
  kVerifyClientCertIfGiven,     // asked for; one given must verify against client_ca_file
  kRequireAndVerifyClientCert,  // required, verified against client_ca_file
};

// A listener's `tls_server_config`.
struct TlsServerOptions {
  std::string cert_file;  // the server's certificate chain
  std::string key_file;
  std::string client_ca_file;  // CAs for client certificates; needed when client_auth asks
  ClientAuth client_auth = ClientAuth::kNoClientCert;

  friend bool operator==(const TlsServerOptions&, const TlsServerOptions&) = default;
};

}  // namespace gpucanary::net
