#include "config/tls_config.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace gpucanary::config {
namespace {

constexpr std::array<std::string_view, 5> kClientKeys = {"ca_file", "cert_file", "key_file",
                                                         "server_name", "insecure_skip_verify"};
constexpr std::array<std::string_view, 4> kServerKeys = {"cert_file", "key_file", "client_ca_file",
                                                         "client_auth_type"};

// The path `key` names, relative to base_dir, when the entry is there; ""
// when not. A file that cannot be opened is an error at its value, so a
// typo fails the configuration, not the first request.
Result<std::string> ReadFile(const Reporter& r, const Fields& fields, std::string_view key,
                             std::string_view parent, const std::string& base_dir) {
  const YAML::Node* n = fields.Find(key);
  if (n == nullptr) return std::string();
  const std::string field = Child(parent, key);
  auto text = ReadString(r, *n, field);
  if (!text) return Error(text.error());
  std::filesystem::path path(*text);
  if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const std::string why = std::error_code(errno, std::generic_category()).message();
    return r.Fail(*n, field, "cannot read '" + path.string() + "': " + why);
  }
  std::fclose(f);
  return path.string();
}

}  // namespace

Result<net::TlsClientOptions> ReadTlsClientConfig(const Reporter& r, const YAML::Node& node,
                                                  std::string_view field,
                                                  const std::string& base_dir) {
  auto fields = Fields::Read(r, node, field, kClientKeys);
  if (!fields) return Error(fields.error());
  net::TlsClientOptions out;
  for (auto [key, path] :
       {std::pair{"ca_file", &out.ca_file}, std::pair{"cert_file", &out.cert_file},
        std::pair{"key_file", &out.key_file}}) {
    auto file = ReadFile(r, *fields, key, field, base_dir);
    if (!file) return Error(file.error());
    *path = std::move(*file);
  }
  if (out.cert_file.empty() != out.key_file.empty()) {
    const char* missing = out.cert_file.empty() ? "cert_file" : "key_file";
    return r.Fail(fields->mark(), Child(field, missing),
                  "required with " + std::string(out.cert_file.empty() ? "key_file" : "cert_file"));
  }
  if (const YAML::Node* n = fields->Find("server_name")) {
    auto name = ReadString(r, *n, Child(field, "server_name"));
    if (!name) return Error(name.error());
    out.server_name = std::move(*name);
  }
  if (const YAML::Node* n = fields->Find("insecure_skip_verify")) {
    auto skip = ReadBool(r, *n, Child(field, "insecure_skip_verify"));
    if (!skip) return Error(skip.error());
    out.insecure_skip_verify = *skip;
  }
  return out;
}

Result<net::TlsServerOptions> ReadTlsServerConfig(const Reporter& r, const YAML::Node& node,
                                                  std::string_view field,
                                                  const std::string& base_dir) {
  auto fields = Fields::Read(r, node, field, kServerKeys);
  if (!fields) return Error(fields.error());
  net::TlsServerOptions out;
  for (auto [key, path] :
       {std::pair{"cert_file", &out.cert_file}, std::pair{"key_file", &out.key_file},
        std::pair{"client_ca_file", &out.client_ca_file}}) {
    auto file = ReadFile(r, *fields, key, field, base_dir);
    if (!file) return Error(file.error());
    *path = std::move(*file);
  }
  for (const char* key : {"cert_file", "key_file"}) {
    if (fields->Find(key) == nullptr) return r.Fail(fields->mark(), Child(field, key), "required");
  }
  const std::string auth_field = Child(field, "client_auth_type");
  const YAML::Node* auth = fields->Find("client_auth_type");
  // A mark, not the node: a type that does not fit is reported at it, and at
  // the map when the type is the default.
  const YAML::Mark at = auth != nullptr ? auth->Mark() : fields->mark();
  std::string auth_type;
  if (auth != nullptr) {
    auto text = ReadString(r, *auth, auth_field);
    if (!text) return Error(text.error());
    auth_type = std::move(*text);
  }
  if (auth_type.empty()) {
    out.client_auth = out.client_ca_file.empty() ? net::ClientAuth::kNoClientCert
                                                 : net::ClientAuth::kRequireAndVerifyClientCert;
  } else if (auth_type == "NoClientCert") {
    out.client_auth = net::ClientAuth::kNoClientCert;
  } else if (auth_type == "VerifyClientCertIfGiven") {
    out.client_auth = net::ClientAuth::kVerifyClientCertIfGiven;
  } else if (auth_type == "RequireAndVerifyClientCert") {
    out.client_auth = net::ClientAuth::kRequireAndVerifyClientCert;
  } else {
    return r.Fail(at, auth_field,
                  "'" + auth_type +
                      "' is not one of NoClientCert, VerifyClientCertIfGiven, "
                      "RequireAndVerifyClientCert");
  }
  if (out.client_auth != net::ClientAuth::kNoClientCert && out.client_ca_file.empty()) {
    return r.Fail(at, Child(field, "client_ca_file"), "required with " + auth_type);
  }
  if (out.client_auth == net::ClientAuth::kNoClientCert && !out.client_ca_file.empty()) {
    return r.Fail(at, auth_field, "NoClientCert with a client_ca_file: the CAs would go unused");
  }
  return out;
}

}  // namespace gpucanary::config
