#include "config/authorization.h"

#include <filesystem>
#include <utility>

#include "net/http_message.h"

namespace gpucanary::config {

namespace {
constexpr std::string_view kAuthorizationKeys[] = {"type", "credentials", "credentials_file"};
}  // namespace

Result<Authorization> ReadAuthorization(const Reporter& r, const YAML::Node& node,
                                        const std::string& field, const std::string& base_dir,
                                        std::string_view basic_hint) {
  Result<Fields> f = Fields::Read(r, node, field, kAuthorizationKeys);
  if (!f) return Error(f.error());
  Authorization out;
  if (const YAML::Node* t = f->Find("type")) {
    Result<std::string> type = ReadString(r, *t, Child(field, "type"));
    if (!type) return Error(type.error());
    if (!net::IsHeaderName(*type) || net::EqualsIgnoreCase(*type, "basic")) {
      return r.Fail(*t, Child(field, "type"),
                    "'" + *type + "' is not an authorization scheme " + std::string(basic_hint));
    }
    out.type = std::move(*type);
  }
  Result<std::string> secret =
      ReadSecret(r, *f, base_dir, field, "credentials", "credentials_file");
  if (!secret) return Error(secret.error());
  if (secret->empty()) {
    return r.Fail(f->mark(), Child(field, "credentials"),
                  "credentials or credentials_file required");
  }
  out.credentials = std::move(*secret);
  if (const YAML::Node* file = f->Find("credentials_file")) {
    std::filesystem::path path(file->Scalar());
    if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
    out.credentials_file = path.lexically_normal().string();
  }
  return out;
}

}  // namespace gpucanary::config
