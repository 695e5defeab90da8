#pragma once
// Prometheus relabeling (relabel_configs on targets, metric_relabel_configs on
// scraped samples) with the semantics of Prometheus's model/relabel package
// (github.com/prometheus/prometheus, model/relabel/relabel.go): the same
// actions, defaults, validation and $-expansion, so a site can paste its rules.
//
//   - The regex is fully anchored as Prometheus anchors it, "^(?s:REGEX)$"
//     (so '.' matches a newline too), RE2 syntax (Go's regexp is RE2's
//     grammar); Go's "(?<name>...)" groups are accepted.
//   - source_labels' values (absent: "") are joined with `separator`.
//   - replace: when the regex matches, `target_label` and `replacement` are
//     expanded as Go's Regexp.Expand does ($1, ${1}, $name, ${name}, $$; an
//     unknown or unmatched group expands to ""; "$1x" names group "1x"); a
//     target that is not a valid label name leaves the set unchanged; an empty
//     result deletes the target label.
//   - keep / drop: by regex match of the joined value; keepequal / dropequal:
//     by equality of the joined value with the target label's value.
//   - hashmod: MD5 of the joined value, the last 8 bytes big-endian, modulo
//     `modulus`.
//   - labelmap / labeldrop / labelkeep: over label names, against a snapshot
//     of the set taken before the rule.
//   - lowercase / uppercase: Unicode case mapping of the joined value (Go's
//     strings.ToLower/ToUpper; invalid UTF-8 bytes become U+FFFD).
//
// One difference: "$name" references end at the first character that is not
// an ASCII letter, digit or '_' (Go also continues over non-ASCII letters; a
// group name is always ASCII, so only references to no group differ).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/labels.h"

namespace re2 {
class RE2;
}

namespace gpucanary::model {

enum class RelabelAction : std::uint8_t {
  kUnset,  // only from code (a YAML reader never yields it); Validate rejects it
  kReplace,
  kKeep,
  kDrop,
  kKeepEqual,
  kDropEqual,
  kHashMod,
  kLabelMap,
  kLabelDrop,
  kLabelKeep,
  kLowercase,
  kUppercase,
};

// "replace", "keepequal", ... (Prometheus's spelling); "" for kUnset.
std::string_view RelabelActionName(RelabelAction action);
// Case-insensitive, as Prometheus reads it. Errors: kInvalidArgument
// `unknown relabel action "X"`.
Result<RelabelAction> ParseRelabelAction(std::string_view text);

// Which label names are valid (Prometheus's model.ValidationScheme): legacy
// [a-zA-Z_][a-zA-Z0-9_]*, or any non-empty valid UTF-8 (Prometheus 3's
// default). gpucanary's store holds legacy names only, so its readers use
// kLegacy.
enum class NameValidation : std::uint8_t { kLegacy, kUtf8 };
bool IsValidLabelNameFor(NameValidation scheme, std::string_view name);

// Prometheus's relabelTargetLegacy: a legacy name in which "$var" and "${var}"
// may stand for characters ("label${1}", "$1", "foo${bar}foo").
bool IsValidLegacyTargetTemplate(std::string_view text);

// One rule as configured; defaults are Prometheus's DefaultRelabelConfig.
struct RelabelConfig {
  std::vector<std::string> source_labels;
  bool source_labels_set = false;  // given explicitly (labeldrop/labelkeep forbid it)
  std::string separator = ";";
  // The regex as written, unanchored. nullopt: the default "(.*)" (Prometheus
  // tells the default from an explicit "(.*)": keepequal/dropequal reject any
  // explicit regex).
  std::optional<std::string> regex;
  std::uint64_t modulus = 0;
  std::string target_label;
  std::string replacement = "$1";
  RelabelAction action = RelabelAction::kReplace;
  NameValidation validation = NameValidation::kLegacy;

  friend bool operator==(const RelabelConfig&, const RelabelConfig&) = default;
};

// Prometheus's Config.Validate, with its messages ("relabel configuration for
// hashmod requires non-zero modulus", "\"-x\" is invalid 'target_label' for
// replace action", ...). Errors: kInvalidArgument.
Status ValidateRelabelConfig(const RelabelConfig& config);

// A validated, compiled rule. Immutable and thread-safe; cheap to copy.
class RelabelRule {
 public:
  // Validates and compiles. Errors: kInvalidArgument, from validation or for
  // a regex RE2 rejects ("bad regex 'x(': missing ): x(").
  static Result<RelabelRule> Compile(RelabelConfig config);

  const RelabelConfig& config() const { return *config_; }

  // Applies the rule to `labels` (sorted, unique names, no empty values, as
  // model::Labels are); keeps them so. False: the rule drops the set.
  bool Apply(Labels& labels) const;

  friend bool operator==(const RelabelRule& a, const RelabelRule& b) {
    return *a.config_ == *b.config_;
  }

 private:
  std::shared_ptr<const RelabelConfig> config_;
  std::shared_ptr<const re2::RE2> re_;  // "^(?s:REGEX)$"
  bool target_has_var_ = false;
  bool replacement_has_var_ = false;
  std::size_t group_count_ = 1;  // capturing groups + the whole match
};

// Applies `rules` in order (Prometheus's ProcessBuilder). False when one drops
// the set; `labels` is then unspecified.
bool Relabel(std::span<const RelabelRule> rules, Labels& labels);

// Sets `name` to `value` in sorted `labels` (an empty value deletes it).
void SetLabel(Labels& labels, std::string_view name, std::string_view value);

// MD5 of `data` (RFC 1321), the 16-byte digest; hashmod's hash.
std::array<std::uint8_t, 16> Md5(std::string_view data);

}  // namespace gpucanary::model
