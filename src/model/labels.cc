#include "model/labels.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "model/escaping.h"
#include "model/names.h"
#include "model/utf8.h"

namespace gpucanary::model {
namespace {

Status LabelError(std::size_t i, const Label& l, std::string_view what) {
  return Status(StatusCode::kInvalidArgument,
                "label " + std::to_string(i) + " '" + l.name + "': " + std::string(what));
}

}  // namespace

void SortLabels(Labels& labels) {
  std::stable_sort(labels.begin(), labels.end(),
                   [](const Label& a, const Label& b) { return a.name < b.name; });
}

Status ValidateLabels(const Labels& labels) {
  bool has_name = false;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const Label& l = labels[i];
    if (l.name.empty()) return LabelError(i, l, "empty name");
    if (!model::IsValidLabelName(l.name)) return LabelError(i, l, "invalid name");
    if (i > 0 && labels[i - 1].name == l.name) return LabelError(i, l, "duplicate name");
    if (i > 0 && labels[i - 1].name > l.name) return LabelError(i, l, "names not sorted");
    if (l.value.empty()) return LabelError(i, l, "empty value");
    if (!model::IsValidUtf8(l.value)) return LabelError(i, l, "value is not valid UTF-8");
    if (l.name == kMetricNameLabel) {
      if (!model::IsValidMetricName(l.value))
        return LabelError(i, l, "invalid metric name '" + l.value + "'");
      has_name = true;
    }
  }
  if (!has_name) return Status(StatusCode::kInvalidArgument, "no __name__ label");
  return Status::Ok();
}

std::string_view LabelValue(const Labels& labels, std::string_view name) {
  for (const Label& l : labels) {
    if (l.name == name) return l.value;
  }
  return {};
}

std::uint64_t LabelsHash(const Labels& labels) {
  // Names and values cannot contain '\xff' (valid UTF-8 never does), so it
  // separates them unambiguously.
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  static constexpr char kSep = '\xff';
  for (const Label& l : labels) {
    XXH3_64bits_update(&state, l.name.data(), l.name.size());
    XXH3_64bits_update(&state, &kSep, 1);
    XXH3_64bits_update(&state, l.value.data(), l.value.size());
    XXH3_64bits_update(&state, &kSep, 1);
  }
  return XXH3_64bits_digest(&state);
}

std::string LabelsToString(const Labels& labels) {
  std::string out(LabelValue(labels, kMetricNameLabel));
  out += '{';
  bool first = true;
  for (const Label& l : labels) {
    if (l.name == kMetricNameLabel) continue;
    if (!first) out += ',';
    first = false;
    out += l.name;
    out += "=\"";
    model::AppendEscaped(out, l.value);
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace gpucanary::model
