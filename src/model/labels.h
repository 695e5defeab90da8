#pragma once
// A series' identity: its label set, as Prometheus defines it. Labels are
// sorted by name, names are unique, no name or value is empty, and the metric
// name is the "__name__" label. This is the form the store indexes, the
// scraper produces and remote_write carries ("Label names MUST be sorted",
// remote_write spec 1.0).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace gpucanary::model {

struct Label {
  std::string name;
  std::string value;

  friend bool operator==(const Label&, const Label&) = default;
  // clang-tidy 14 mistakes the defaulted <=> for a 0 literal.
  friend auto operator<=>(const Label&, const Label&) = default;  // NOLINT(modernize-use-nullptr)
};

using Labels = std::vector<Label>;

inline constexpr std::string_view kMetricNameLabel = "__name__";

// Sorts by name (stable for equal names, so a duplicate stays visible to
// ValidateLabels).
void SortLabels(Labels& labels);

// Checks a sorted label set: names match [a-zA-Z_][a-zA-Z0-9_]*, the metric
// name matches [a-zA-Z_:][a-zA-Z0-9_:]*, names are unique and sorted, no value
// is empty, values are valid UTF-8, and "__name__" is present. Errors are
// kInvalidArgument naming the label: "label 3 'gpu': duplicate name".
Status ValidateLabels(const Labels& labels);

// The value of `name`, or an empty view when absent.
std::string_view LabelValue(const Labels& labels, std::string_view name);

// 64-bit hash of a label set (XXH3 over names and values with separators):
// equal sets hash equally. Not stable across gpucanary versions on disk.
std::uint64_t LabelsHash(const Labels& labels);

// Prometheus's text form: name{a="x",b="y"} (values escaped as in the
// exposition format); {a="x"} when there is no __name__.
std::string LabelsToString(const Labels& labels);

}  // namespace gpucanary::model
