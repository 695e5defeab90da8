#pragma once
// Reading YAML configuration (scenario files, judge policies) with errors an
// operator can act on: every failure is a kParseError whose message reads
// "FILE:LINE:COLUMN: field.path: what was wrong" (1-based line and column).
// Maps are checked for unknown and duplicate keys. Also the small text
// grammars configuration values use: numbers, durations ("250ms", "90s",
// "10m", "1h") and rates ("1/5m").

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace gpucanary::config {

// The whole text of a configuration file. Errors: kNotFound (no such file),
// kIoError ("PATH: Permission denied").
Result<std::string> ReadConfigFile(const std::string& path);

// Each returns false for malformed text; *out is then unspecified.
bool ParseDouble(std::string_view s, double* out);  // finite numbers only
bool ParseInt(std::string_view s, std::int64_t* out);
// "600s", "10m", "1h", "250ms" or a plain number of seconds.
bool ParseDurationText(std::string_view s, double* seconds);
// "1/5m", "30/m", "2/s" or a plain number per second.
bool ParseRateText(std::string_view s, double* per_s);

// "a, b, c".
template <typename Range>
std::string JoinNames(const Range& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}
bool Contains(std::span<const std::string_view> names, std::string_view name);
// "parent.key", or "key" when parent is empty; "parent[i]".
std::string Child(std::string_view parent, std::string_view key);
std::string Index(std::string_view parent, std::size_t i);

// Formats positions and errors for one file. Thread-compatible.
class Reporter {
 public:
  explicit Reporter(std::string file) : file_(std::move(file)) {}
  // "FILE:LINE:COL" (1-based; a null mark reads 1:1).
  std::string Where(const YAML::Mark& mark) const;
  tl::unexpected<Status> Fail(const YAML::Mark& mark, std::string_view field,
                              std::string_view what) const;
  tl::unexpected<Status> Fail(const YAML::Node& node, std::string_view field,
                              std::string_view what) const {
    return Fail(node.Mark(), field, what);
  }

 private:
  std::string file_;
};

// The entries of one YAML map, checked for unknown keys (when `known` is not
// empty) and duplicate keys, in file order.
class Fields {
 public:
  static Result<Fields> Read(const Reporter& r, const YAML::Node& map, std::string_view field,
                             std::span<const std::string_view> known);

  const YAML::Node* Find(std::string_view key) const;
  struct Entry {
    std::string name;
    YAML::Node key;
    YAML::Node value;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  const YAML::Mark& mark() const { return mark_; }

 private:
  std::vector<Entry> entries_;
  YAML::Mark mark_;
};

// Typed scalars; numbers, durations and rates must not be negative.
Result<std::string> ReadString(const Reporter& r, const YAML::Node& node, std::string_view field);
// A list of ReadString scalars; `what` is the message when `node` is not a
// list ("expected a list of tags"). Elements are named field[i].
Result<std::vector<std::string>> ReadStrings(const Reporter& r, const YAML::Node& node,
                                             std::string_view field,
                                             std::string_view what = "expected a list");
Result<double> ReadNumber(const Reporter& r, const YAML::Node& node, std::string_view field);
Result<double> ReadDuration(const Reporter& r, const YAML::Node& node, std::string_view field);
Result<double> ReadRate(const Reporter& r, const YAML::Node& node, std::string_view field);
Result<std::int64_t> ReadInt(const Reporter& r, const YAML::Node& node, std::string_view field,
                             std::int64_t lo, std::int64_t hi);
Result<bool> ReadBool(const Reporter& r, const YAML::Node& node, std::string_view field);

// A bearer token given inline (`token`) or in a file (`token_file`, relative
// to `base_dir`, the configuration's folder; surrounding whitespace
// dropped), not both; "" when neither. Printable ASCII without spaces.
// Messages name `parent`.token / .token_file and never echo the token.
Result<std::string> ReadToken(const Reporter& r, const Fields& fields, const std::string& base_dir,
                              std::string_view parent);
// The same for any secret given inline (`inline_key`) or in a file
// (`file_key`), e.g. basic_auth's password / password_file: any text
// without control characters.
Result<std::string> ReadSecret(const Reporter& r, const Fields& fields, const std::string& base_dir,
                               std::string_view parent, std::string_view inline_key,
                               std::string_view file_key);

}  // namespace gpucanary::config
