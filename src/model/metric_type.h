#pragma once
// The metric types of the Prometheus data model, as the exposition formats'
// "# TYPE" lines name them (Prometheus text 0.0.4 and OpenMetrics 1.0,
// "MetricFamily Type"). The parser reads them, the recording writer and the
// self-metric writers write them.

#include <cstdint>
#include <string_view>

namespace gpucanary::model {

// "untyped" (0.0.4) and "unknown" (OpenMetrics) are the same thing: kUnknown.
enum class MetricType : std::uint8_t {
  kUnknown,
  kCounter,
  kGauge,
  kHistogram,
  kGaugeHistogram,
  kSummary,
  kInfo,
  kStateSet,
};

// The OpenMetrics spelling on a "# TYPE" line: "unknown", "counter", "gauge",
// "histogram", "gaugehistogram", "summary", "info", "stateset".
constexpr std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kUnknown:
      return "unknown";
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kGaugeHistogram:
      return "gaugehistogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kInfo:
      return "info";
    case MetricType::kStateSet:
      return "stateset";
  }
  return "unknown";
}

}  // namespace gpucanary::model
