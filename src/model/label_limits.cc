#include "model/label_limits.h"

#include <string_view>

namespace gpucanary::model {
namespace {

// Prometheus prints at most 50 characters of each name and value in a limit
// error (%.50s); cut at 50 bytes, never inside a UTF-8 sequence.
std::string Clip(std::string_view s) {
  constexpr std::size_t kMax = 50;
  if (s.size() <= kMax) return std::string(s);
  std::size_t n = kMax;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

}  // namespace

std::optional<LabelLimitProblem> CheckLabelLimits(const Labels& labels, const LabelLimits& limits) {
  const std::string metric = Clip(LabelValue(labels, kMetricNameLabel));
  if (limits.label_limit > 0 && labels.size() > limits.label_limit) {
    return LabelLimitProblem{LabelLimit::kCount,
                             "label_limit exceeded (metric: " + metric +
                                 ", number of labels: " + std::to_string(labels.size()) +
                                 ", limit: " + std::to_string(limits.label_limit) + ")"};
  }
  for (const Label& l : labels) {
    if (limits.label_name_length_limit > 0 && l.name.size() > limits.label_name_length_limit) {
      return LabelLimitProblem{
          LabelLimit::kNameLength,
          "label_name_length_limit exceeded (metric: " + metric + ", label name: " + Clip(l.name) +
              ", length: " + std::to_string(l.name.size()) +
              ", limit: " + std::to_string(limits.label_name_length_limit) + ")"};
    }
    if (limits.label_value_length_limit > 0 && l.value.size() > limits.label_value_length_limit) {
      return LabelLimitProblem{
          LabelLimit::kValueLength,
          "label_value_length_limit exceeded (metric: " + metric + ", label name: " + Clip(l.name) +
              ", value: \"" + Clip(l.value) + "\", length: " + std::to_string(l.value.size()) +
              ", limit: " + std::to_string(limits.label_value_length_limit) + ")"};
    }
  }
  return std::nullopt;
}

}  // namespace gpucanary::model
