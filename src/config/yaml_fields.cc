#include "config/yaml_fields.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

namespace gpucanary::config {

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end && std::isfinite(*out);
}

bool ParseInt(std::string_view s, std::int64_t* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

// "600s", "10m", "1h", "250ms" or a plain number of seconds. False if malformed.
Result<std::string> ReadConfigFile(const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                 path + ": " + ErrnoMessage(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error(StatusCode::kIoError, path + ": read failed");
  return text.str();
}

bool ParseDurationText(std::string_view s, double* seconds) {
  std::size_t unit_at = s.size();
  while (unit_at > 0 && std::isalpha(static_cast<unsigned char>(s[unit_at - 1])) != 0) --unit_at;
  const std::string_view unit = s.substr(unit_at);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else {
    return false;
  }
  double value = 0;
  if (!ParseDouble(s.substr(0, unit_at), &value)) return false;
  *seconds = value * scale;
  return true;
}

// "1/5m", "30/m", "2/s" or a plain number per second. False if malformed.
bool ParseRateText(std::string_view s, double* per_s) {
  const std::size_t slash = s.find('/');
  if (slash == std::string_view::npos) return ParseDouble(s, per_s);
  double count = 0;
  if (!ParseDouble(s.substr(0, slash), &count)) return false;
  const std::string_view per = s.substr(slash + 1);
  // "/m" means "/1m".
  std::string window = !per.empty() && std::isalpha(static_cast<unsigned char>(per.front())) != 0
                           ? std::string("1")
                           : std::string();
  window.append(per);
  double window_s = 0;
  if (!ParseDurationText(window, &window_s) || window_s <= 0) return false;
  *per_s = count / window_s;
  return true;
}

bool Contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string Child(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

std::string Index(std::string_view parent, std::size_t i) {
  return std::string(parent) + "[" + std::to_string(i) + "]";
}

// Positions come from yaml-cpp marks (0-based); messages print them 1-based.
std::string Reporter::Where(const YAML::Mark& mark) const {
  const int line = mark.is_null() || mark.line < 0 ? 1 : mark.line + 1;
  const int column = mark.is_null() || mark.column < 0 ? 1 : mark.column + 1;
  return file_ + ":" + std::to_string(line) + ":" + std::to_string(column);
}

tl::unexpected<Status> Reporter::Fail(const YAML::Mark& mark, std::string_view field,
                                      std::string_view what) const {
  return Error(StatusCode::kParseError,
               Where(mark) + ": " + std::string(field) + ": " + std::string(what));
}

Result<Fields> Fields::Read(const Reporter& r, const YAML::Node& map, std::string_view field,
                            std::span<const std::string_view> known) {
  if (!map.IsMap()) return r.Fail(map, field, "expected a map");
  Fields out;
  out.mark_ = map.Mark();
  for (const auto& entry : map) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) return r.Fail(key, field, "map keys must be plain names");
    const std::string& name = key.Scalar();
    if (!known.empty() && !Contains(known, name)) {
      return r.Fail(key, Child(field, name),
                    "unknown field (expected one of " + JoinNames(known) + ")");
    }
    if (out.Find(name) != nullptr) return r.Fail(key, Child(field, name), "duplicate key");
    out.entries_.push_back({name, key, entry.second});
  }
  return out;
}

const YAML::Node* Fields::Find(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.name == key) return &e.value;
  }
  return nullptr;
}

Result<std::string> ReadString(const Reporter& r, const YAML::Node& node, std::string_view field) {
  if (!node.IsScalar() || node.Scalar().empty()) return r.Fail(node, field, "expected a name");
  return node.Scalar();
}

Result<std::vector<std::string>> ReadStrings(const Reporter& r, const YAML::Node& node,
                                             std::string_view field, std::string_view what) {
  if (!node.IsSequence()) return r.Fail(node, field, what);
  std::vector<std::string> out;
  out.reserve(node.size());
  for (std::size_t i = 0; i < node.size(); ++i) {
    Result<std::string> s = ReadString(r, node[i], Index(field, i));
    if (!s) return Error(s.error());
    out.push_back(std::move(*s));
  }
  return out;
}

Result<double> ReadNumber(const Reporter& r, const YAML::Node& node, std::string_view field) {
  double value = 0;
  if (!node.IsScalar() || !ParseDouble(node.Scalar(), &value)) {
    return r.Fail(node, field, "expected a number");
  }
  if (value < 0) return r.Fail(node, field, "must not be negative");
  return value;
}

Result<double> ReadDuration(const Reporter& r, const YAML::Node& node, std::string_view field) {
  double seconds = 0;
  if (!node.IsScalar() || !ParseDurationText(node.Scalar(), &seconds)) {
    return r.Fail(node, field,
                  "bad duration '" + (node.IsScalar() ? node.Scalar() : std::string()) +
                      "' (expected a number with unit ms, s, m or h, e.g. 600s)");
  }
  if (seconds < 0) return r.Fail(node, field, "duration must not be negative");
  return seconds;
}

Result<double> ReadRate(const Reporter& r, const YAML::Node& node, std::string_view field) {
  double per_s = 0;
  if (!node.IsScalar() || !ParseRateText(node.Scalar(), &per_s)) {
    return r.Fail(node, field, "bad rate (expected a number per second or N/DURATION, e.g. 1/5m)");
  }
  if (per_s < 0) return r.Fail(node, field, "negative rate");
  return per_s;
}

Result<std::int64_t> ReadInt(const Reporter& r, const YAML::Node& node, std::string_view field,
                             std::int64_t lo, std::int64_t hi) {
  std::int64_t value = 0;
  if (!node.IsScalar() || !ParseInt(node.Scalar(), &value)) {
    return r.Fail(node, field, "expected an integer");
  }
  if (value < lo || value > hi) {
    return r.Fail(node, field, "must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return value;
}

Result<bool> ReadBool(const Reporter& r, const YAML::Node& node, std::string_view field) {
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
  }
  return r.Fail(node, field, "expected true or false");
}

Result<std::string> ReadSecret(const Reporter& r, const Fields& fields, const std::string& base_dir,
                               std::string_view parent, std::string_view inline_key,
                               std::string_view file_key) {
  const YAML::Node* inline_value = fields.Find(inline_key);
  const YAML::Node* file = fields.Find(file_key);
  if (inline_value != nullptr && file != nullptr) {
    return r.Fail(
        *file, Child(parent, file_key),
        "give " + std::string(inline_key) + " or " + std::string(file_key) + ", not both");
  }
  if (inline_value == nullptr && file == nullptr) return std::string();
  const YAML::Node& node = inline_value != nullptr ? *inline_value : *file;
  const std::string field = Child(parent, inline_value != nullptr ? inline_key : file_key);
  auto text = ReadString(r, node, field);
  if (!text) return Error(text.error());
  std::string secret = *text;
  if (file != nullptr) {
    std::filesystem::path path(*text);
    if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
    auto content = ReadConfigFile(path.string());
    if (!content) return r.Fail(node, field, content.error().message());
    const std::size_t begin = content->find_first_not_of(" \t\r\n");
    const std::size_t end = content->find_last_not_of(" \t\r\n");
    secret = begin == std::string::npos ? "" : content->substr(begin, end - begin + 1);
    if (secret.empty()) return r.Fail(node, field, "the file '" + *text + "' is empty");
  }
  for (char c : secret) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return r.Fail(node, field, "must not hold control characters");
    }
  }
  return secret;
}

Result<std::string> ReadToken(const Reporter& r, const Fields& fields, const std::string& base_dir,
                              std::string_view parent) {
  auto token = ReadSecret(r, fields, base_dir, parent, "token", "token_file");
  if (!token) return token;
  for (char c : *token) {
    if (c < 0x21 || c > 0x7e) {
      const bool in_file = fields.Find("token_file") != nullptr;
      return r.Fail(in_file ? *fields.Find("token_file") : *fields.Find("token"),
                    Child(parent, in_file ? "token_file" : "token"),
                    "a token must be printable ASCII without spaces");
    }
  }
  return token;
}

}  // namespace gpucanary::config
