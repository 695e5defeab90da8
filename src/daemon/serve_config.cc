#include "daemon/serve_config.h"

#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "config/yaml_fields.h"

namespace gpucanary::daemon {
namespace {

using config::Fields;
using config::Reporter;

constexpr std::array<std::string_view, 5> kTopKeys = {"listen", "storage", "remote_write", "global",
                                                      "scrape_configs"};
constexpr std::array<std::string_view, 3> kStorageKeys = {"path", "retention", "retention_size"};
constexpr std::array<std::string_view, 2> kRemoteWriteKeys = {"enabled", "max_body"};

Status ReadListen(const Reporter& r, const YAML::Node& node, ServeConfig& out) {
  auto text = config::ReadString(r, node, "listen");
  if (!text) return text.error();
  const std::size_t colon = text->rfind(':');
  std::uint32_t port = 0;
  const char* begin = text->data() + colon + 1;
  const char* end = text->data() + text->size();
  auto [p, ec] = colon == std::string::npos
                     ? std::from_chars_result{begin, std::errc::invalid_argument}
                     : std::from_chars(begin, end, port);
  if (colon == std::string::npos || colon == 0 || ec != std::errc() || p != end || port > 65535) {
    return r.Fail(node, "listen", "expected host:port, got '" + *text + "'");
  }
  out.listen_host = text->substr(0, colon);
  if (out.listen_host.size() > 2 && out.listen_host.front() == '[') {
    out.listen_host = out.listen_host.substr(1, out.listen_host.size() - 2);
  }
  out.listen_port = static_cast<std::uint16_t>(port);
  return Status::Ok();
}

Status ReadStorage(const Reporter& r, const YAML::Node& node, const std::string& base,
                   ServeConfig& out) {
  auto fields = Fields::Read(r, node, "storage", kStorageKeys);
  if (!fields) return fields.error();
  if (const YAML::Node* n = fields->Find("path")) {
    auto path = config::ReadString(r, *n, "storage.path");
    if (!path) return path.error();
    std::filesystem::path p(*path);
    out.data_dir =
        p.is_absolute() || base.empty() ? p.string() : (std::filesystem::path(base) / p).string();
  }
  if (const YAML::Node* n = fields->Find("retention")) {
    auto text = config::ReadString(r, *n, "storage.retention");
    if (!text) return text.error();
    std::int64_t ms = 0;
    if (!scrape::ParsePrometheusDuration(*text, &ms)) {
      return r.Fail(*n, "storage.retention", "bad duration '" + *text + "' (e.g. 15d, 12h)");
    }
    out.retention_ms = ms;
  }
  if (const YAML::Node* n = fields->Find("retention_size")) {
    auto text = config::ReadString(r, *n, "storage.retention_size");
    if (!text) return text.error();
    if (!ParseByteSize(*text, &out.retention_bytes)) {
      return r.Fail(*n, "storage.retention_size", "bad size '" + *text + "' (e.g. 50GB, 512MiB)");
    }
  }
  return Status::Ok();
}

Status ReadRemoteWrite(const Reporter& r, const YAML::Node& node, ServeConfig& out) {
  auto fields = Fields::Read(r, node, "remote_write", kRemoteWriteKeys);
  if (!fields) return fields.error();
  if (const YAML::Node* n = fields->Find("enabled")) {
    auto b = config::ReadBool(r, *n, "remote_write.enabled");
    if (!b) return b.error();
    out.remote_write = *b;
  }
  if (const YAML::Node* n = fields->Find("max_body")) {
    auto text = config::ReadString(r, *n, "remote_write.max_body");
    if (!text) return text.error();
    std::uint64_t bytes = 0;
    if (!ParseByteSize(*text, &bytes) || bytes == 0 || bytes > (std::uint64_t{1} << 30)) {
      return r.Fail(*n, "remote_write.max_body", "bad size '" + *text + "' (1B to 1GiB)");
    }
    out.max_body_bytes = static_cast<std::size_t>(bytes);
  }
  return Status::Ok();
}

}  // namespace

bool ParseByteSize(std::string_view text, std::uint64_t* bytes) {
  std::size_t unit_at = 0;
  while (unit_at < text.size() && text[unit_at] >= '0' && text[unit_at] <= '9') ++unit_at;
  if (unit_at == 0) return false;
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + unit_at, n);
  if (ec != std::errc()) return false;
  struct Unit {
    std::string_view name;
    std::uint64_t scale;
  };
  static constexpr Unit kUnits[] = {{"", 1},
                                    {"B", 1},
                                    {"KB", 1000},
                                    {"MB", 1000ULL * 1000},
                                    {"GB", 1000ULL * 1000 * 1000},
                                    {"TB", 1000ULL * 1000 * 1000 * 1000},
                                    {"KiB", 1ULL << 10},
                                    {"MiB", 1ULL << 20},
                                    {"GiB", 1ULL << 30},
                                    {"TiB", 1ULL << 40}};
  const std::string_view unit = text.substr(unit_at);
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    if (n > std::numeric_limits<std::uint64_t>::max() / u.scale) return false;
    *bytes = n * u.scale;
    return true;
  }
  return false;
}

Result<ServeConfig> ParseServeConfig(std::string_view yaml_text, std::string_view file_name) {
  const Reporter r{std::string(file_name)};
  const std::string base = std::filesystem::path(file_name).parent_path().string();
  ServeConfig out;
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    if (root.IsNull()) {
      if (!base.empty()) out.data_dir = (std::filesystem::path(base) / out.data_dir).string();
      return out;
    }
    auto top = Fields::Read(r, root, "config", kTopKeys);
    if (!top) return Error(top.error());
    if (const YAML::Node* n = top->Find("listen")) {
      if (Status s = ReadListen(r, *n, out); !s.ok()) return Error(s);
    }
    if (!base.empty() && top->Find("storage") == nullptr) {
      out.data_dir = (std::filesystem::path(base) / out.data_dir).string();
    }
    if (const YAML::Node* n = top->Find("storage")) {
      if (Status s = ReadStorage(r, *n, base, out); !s.ok()) return Error(s);
    }
    if (const YAML::Node* n = top->Find("remote_write")) {
      if (Status s = ReadRemoteWrite(r, *n, out); !s.ok()) return Error(s);
    }
    auto scrape =
        scrape::ReadScrapeSections(r, top->Find("global"), top->Find("scrape_configs"), base);
    if (!scrape) return Error(scrape.error());
    out.scrape = std::move(*scrape);
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "syntax", e.msg);
  }
  return out;
}

Result<ServeConfig> LoadServeConfig(const std::string& path) {
  auto text = config::ReadConfigFile(path);
  if (!text) return Error(text.error());
  return ParseServeConfig(*text, path);
}

}  // namespace gpucanary::daemon
