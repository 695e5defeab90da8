#include "daemon/remote_write_out_config.h"

#include <array>
#include <cstdint>
#include <set>
#include <string_view>
#include <utility>

#include "config/authorization.h"
#include "config/http_headers.h"
#include "config/tls_config.h"
#include "core/base64.h"
#include "daemon/serve_config.h"
#include "net/url.h"
#include "scrape/config.h"
#include "scrape/relabel_config.h"

namespace gpucanary::daemon {

namespace {

using config::Child;
using config::Fields;
using config::Reporter;

constexpr std::array<std::string_view, 10> kEntryKeys = {
    "url",           "name",       "remote_timeout",        "headers",      "tls_config",
    "authorization", "basic_auth", "write_relabel_configs", "queue_config", "metadata_config"};
constexpr std::array<std::string_view, 8> kQueueKeys = {
    "shards",      "capacity",    "max_samples_per_send", "batch_send_deadline",
    "min_backoff", "max_backoff", "retry_on_http_429",    "max_backlog"};
constexpr std::array<std::string_view, 2> kMetadataKeys = {"send", "send_interval"};
constexpr std::array<std::string_view, 3> kBasicAuthKeys = {"username", "password",
                                                            "password_file"};
// The sender sets these itself (the remote_write 1.0 spec: "MUST NOT allow
// users to configure" the reserved ones), or they come from authorization.
constexpr std::array<std::string_view, 8> kReservedHeaders = {
    "content-encoding", "content-type", "user-agent",     "x-prometheus-remote-write-version",
    "authorization",    "host",         "content-length", "connection"};

// A Prometheus duration ("30s", "1m", "250ms") in ms, within [lo, hi].
Result<std::int64_t> ReadMs(const Reporter& r, const YAML::Node& node, const std::string& field,
                            std::int64_t lo, std::int64_t hi) {
  auto text = config::ReadString(r, node, field);
  if (!text) return Error(text.error());
  std::int64_t ms = 0;
  if (!scrape::ParsePrometheusDuration(*text, &ms)) {
    return r.Fail(node, field, "bad duration '" + *text + "' (e.g. 30s, 5m, 250ms)");
  }
  if (ms < lo || ms > hi) {
    return r.Fail(node, field,
                  "must be from " + std::to_string(lo) + " ms to " + std::to_string(hi) + " ms");
  }
  return ms;
}

Status ReadQueue(const Reporter& r, const YAML::Node& node, const std::string& field,
                 remote::QueueConfig& q) {
  auto f = Fields::Read(r, node, field, kQueueKeys);
  if (!f) return f.error();
  if (const YAML::Node* n = f->Find("shards")) {
    auto v = config::ReadInt(r, *n, Child(field, "shards"), 1, 200);
    if (!v) return v.error();
    q.shards = static_cast<int>(*v);
  }
  if (const YAML::Node* n = f->Find("capacity")) {
    auto v = config::ReadInt(r, *n, Child(field, "capacity"), 1, 10'000'000);
    if (!v) return v.error();
    q.capacity = static_cast<std::size_t>(*v);
  }
  if (const YAML::Node* n = f->Find("max_samples_per_send")) {
    auto v = config::ReadInt(r, *n, Child(field, "max_samples_per_send"), 1, 1'000'000);
    if (!v) return v.error();
    q.max_samples_per_send = static_cast<std::size_t>(*v);
  }
  if (const YAML::Node* n = f->Find("batch_send_deadline")) {
    auto v = ReadMs(r, *n, Child(field, "batch_send_deadline"), 1, 3'600'000);
    if (!v) return v.error();
    q.batch_send_deadline_ms = *v;
  }
  if (const YAML::Node* n = f->Find("min_backoff")) {
    auto v = ReadMs(r, *n, Child(field, "min_backoff"), 1, 3'600'000);
    if (!v) return v.error();
    q.min_backoff_ms = *v;
  }
  if (const YAML::Node* n = f->Find("max_backoff")) {
    auto v = ReadMs(r, *n, Child(field, "max_backoff"), 1, 3'600'000);
    if (!v) return v.error();
    q.max_backoff_ms = *v;
  }
  if (q.min_backoff_ms > q.max_backoff_ms) {
    const YAML::Node* at =
        f->Find("min_backoff") != nullptr ? f->Find("min_backoff") : f->Find("max_backoff");
    return r.Fail(*at, Child(field, at == f->Find("min_backoff") ? "min_backoff" : "max_backoff"),
                  "min_backoff (" + std::to_string(q.min_backoff_ms) +
                      " ms) is above max_backoff (" + std::to_string(q.max_backoff_ms) + " ms)");
  }
  if (const YAML::Node* n = f->Find("retry_on_http_429")) {
    auto v = config::ReadBool(r, *n, Child(field, "retry_on_http_429"));
    if (!v) return v.error();
    q.retry_on_http_429 = *v;
  }
  if (const YAML::Node* n = f->Find("max_backlog")) {
    auto text = config::ReadString(r, *n, Child(field, "max_backlog"));
    if (!text) return text.error();
    std::uint64_t bytes = 0;
    if (!ParseByteSize(*text, &bytes) || bytes < (1U << 20)) {
      return r.Fail(*n, Child(field, "max_backlog"),
                    "bad size '" + *text + "' (e.g. 1GiB, 500MB; at least 1MiB)");
    }
    q.max_backlog_bytes = bytes;
  }
  return Status::Ok();
}

Status ReadMetadata(const Reporter& r, const YAML::Node& node, const std::string& field,
                    remote::MetadataConfig& m) {
  auto f = Fields::Read(r, node, field, kMetadataKeys);
  if (!f) return f.error();
  if (const YAML::Node* n = f->Find("send")) {
    auto v = config::ReadBool(r, *n, Child(field, "send"));
    if (!v) return v.error();
    m.send = *v;
  }
  if (const YAML::Node* n = f->Find("send_interval")) {
    auto v = ReadMs(r, *n, Child(field, "send_interval"), 1000, 24LL * 3'600'000);
    if (!v) return v.error();
    m.send_interval_ms = *v;
  }
  return Status::Ok();
}

// `authorization` (Bearer by default) or `basic_auth`: the header's value.
Result<std::string> ReadAuth(const Reporter& r, const Fields& entry, const std::string& field,
                             const std::string& base) {
  const YAML::Node* authorization = entry.Find("authorization");
  const YAML::Node* basic = entry.Find("basic_auth");
  if (authorization != nullptr && basic != nullptr) {
    return r.Fail(*basic, Child(field, "basic_auth"), "give authorization or basic_auth, not both");
  }
  if (authorization != nullptr) {
    auto a = config::ReadAuthorization(r, *authorization, Child(field, "authorization"), base,
                                       "(use basic_auth for Basic)");
    if (!a) return Error(a.error());
    return a->type + " " + a->credentials;
  }
  if (basic != nullptr) {
    const std::string at = Child(field, "basic_auth");
    auto f = Fields::Read(r, *basic, at, kBasicAuthKeys);
    if (!f) return Error(f.error());
    const YAML::Node* user = f->Find("username");
    if (user == nullptr) return r.Fail(f->mark(), Child(at, "username"), "required");
    auto name = config::ReadString(r, *user, Child(at, "username"));
    if (!name) return Error(name.error());
    if (name->find(':') != std::string::npos) {
      return r.Fail(*user, Child(at, "username"), "must not hold ':' (RFC 7617)");
    }
    auto password = config::ReadSecret(r, *f, base, at, "password", "password_file");
    if (!password) return Error(password.error());
    return "Basic " + Base64Encode(*name + ":" + *password);
  }
  return std::string();
}

}  // namespace

Result<std::vector<remote::SenderConfig>> ReadRemoteWriteOut(const Reporter& r,
                                                             const YAML::Node& node,
                                                             const std::string& base) {
  if (!node.IsSequence()) {
    return r.Fail(node, "remote_write_out", "expected a list of receivers (- url: ...)");
  }
  std::vector<remote::SenderConfig> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string field = config::Index("remote_write_out", i);
    auto f = Fields::Read(r, node[i], field, kEntryKeys);
    if (!f) return Error(f.error());
    remote::SenderConfig c;
    const YAML::Node* url = f->Find("url");
    if (url == nullptr) return r.Fail(f->mark(), Child(field, "url"), "required");
    auto text = config::ReadString(r, *url, Child(field, "url"));
    if (!text) return Error(text.error());
    if (auto parsed = net::ParseHttpUrl(*text); !parsed) {
      return r.Fail(*url, Child(field, "url"), parsed.error().message());
    }
    c.url = *text;
    if (const YAML::Node* n = f->Find("name")) {
      auto name = config::ReadString(r, *n, Child(field, "name"));
      if (!name) return Error(name.error());
      const bool ok = !name->empty() && name->size() <= 64 &&
                      name->find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789_-.") == std::string::npos &&
                      *name != "." && *name != "..";
      if (!ok) {
        return r.Fail(*n, Child(field, "name"),
                      "'" + *name + "': 1 to 64 of A-Z a-z 0-9 _ - . (it names a folder)");
      }
      c.name = *name;
    } else {
      c.name = "rw" + std::to_string(i);
    }
    if (!names.insert(c.name).second) {
      const YAML::Node* at = f->Find("name") != nullptr ? f->Find("name") : url;
      return r.Fail(*at, Child(field, "name"),
                    "'" + c.name + "' names another remote_write_out entry too");
    }
    if (const YAML::Node* n = f->Find("remote_timeout")) {
      auto v = ReadMs(r, *n, Child(field, "remote_timeout"), 1, 600'000);
      if (!v) return Error(v.error());
      c.timeout_ms = static_cast<int>(*v);
    }
    if (const YAML::Node* n = f->Find("headers")) {
      config::HttpHeaderRules rules;
      rules.reserved = kReservedHeaders;
      auto headers = config::ReadHttpHeaders(r, *n, Child(field, "headers"), rules);
      if (!headers) return Error(headers.error());
      c.headers = std::move(*headers);
    }
    if (const YAML::Node* n = f->Find("tls_config")) {
      auto tls = config::ReadTlsClientConfig(r, *n, Child(field, "tls_config"), base);
      if (!tls) return Error(tls.error());
      c.tls = std::move(*tls);
    }
    auto auth = ReadAuth(r, *f, field, base);
    if (!auth) return Error(auth.error());
    c.authorization = std::move(*auth);
    if (const YAML::Node* n = f->Find("write_relabel_configs")) {
      auto rules = scrape::ReadRelabelConfigs(r, *n, Child(field, "write_relabel_configs"));
      if (!rules) return Error(rules.error());
      c.write_relabel = std::move(*rules);
    }
    if (const YAML::Node* n = f->Find("queue_config")) {
      if (Status s = ReadQueue(r, *n, Child(field, "queue_config"), c.queue); !s.ok()) {
        return Error(s);
      }
    }
    if (const YAML::Node* n = f->Find("metadata_config")) {
      if (Status s = ReadMetadata(r, *n, Child(field, "metadata_config"), c.metadata); !s.ok()) {
        return Error(s);
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace gpucanary::daemon
