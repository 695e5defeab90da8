#pragma once
// Metric and label name rules (Prometheus data model, "Metric names and
// labels"; OpenMetrics 1.0 ABNF metricname / label-name). The one home for the
// checks the recording writer, the store, remote_write, the scrape config and
// the query API apply. Only the classic ASCII grammar is accepted: gpucanary
// never writes UTF-8 names, so no quoting of names is needed anywhere.
//
// The exposition parser does not call these: it scans names with SIMD kernels
// (expfmt/scan.h) that implement the same character classes.

#include <string_view>

namespace gpucanary::model {

// Prometheus metric-name regex [a-zA-Z_:][a-zA-Z0-9_:]*.
bool IsValidMetricName(std::string_view name);

// Prometheus label-name regex [a-zA-Z_][a-zA-Z0-9_]*. Names starting with "__"
// are reserved for Prometheus's internal use but match the regex and are accepted.
bool IsValidLabelName(std::string_view name);

}  // namespace gpucanary::model
