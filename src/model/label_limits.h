#pragma once
// Prometheus's label limits (scrape_config label_limit,
// label_name_length_limit, label_value_length_limit), for scrapes and for
// remote_write series alike, with Prometheus's messages (scrape.go
// verifyLabelLimits). __name__ counts as a label; lengths are in bytes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "model/labels.h"

namespace gpucanary::model {

struct LabelLimits {
  std::size_t label_limit = 0;               // labels per series; 0: no limit
  std::size_t label_name_length_limit = 0;   // bytes per name; 0: no limit
  std::size_t label_value_length_limit = 0;  // bytes per value; 0: no limit

  friend bool operator==(const LabelLimits&, const LabelLimits&) = default;
};

enum class LabelLimit : std::uint8_t { kCount, kNameLength, kValueLength };

struct LabelLimitProblem {
  LabelLimit limit = LabelLimit::kCount;
  // Prometheus's words, e.g. "label_limit exceeded (metric: up, number of
  // labels: 31, limit: 30)"; names and values cut at 50 bytes (%.50s),
  // never inside a UTF-8 sequence.
  std::string message;
};

// The first limit `labels` exceeds; nullopt when within all.
std::optional<LabelLimitProblem> CheckLabelLimits(const Labels& labels, const LabelLimits& limits);

}  // namespace gpucanary::model
