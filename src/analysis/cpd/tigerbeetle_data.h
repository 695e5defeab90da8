#pragma once
// The TigerBeetle series and Apache Otava's expected change points for ten
// settings (../shared/data/otava-tigerbeetle/, README there), for the Otava
// port's test and the `otava_compare` tool (eval/cpd). Header-only; needs
// nlohmann-json.
// Returns an error string instead of data when a file is missing or malformed.

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/cpd/otava.h"

namespace gpucanary::analysis::cpd::tigerbeetle {

struct Case {
  std::string test;  // the test function in Otava's tests/tigerbeetle_test.py
  OtavaOptions options;
  std::vector<std::size_t> expected;
};

struct Data {
  std::vector<double> series;
  std::vector<Case> cases;
  std::string error;  // non-empty: nothing else is valid
};

inline Data Load(const std::string& dir) {
  Data data;
  std::ifstream csv(dir + "/tigerbeetle_series.csv");
  std::string line;
  if (!std::getline(csv, line) || line != "index,value") {
    data.error = "cannot read " + dir + "/tigerbeetle_series.csv";
    return data;
  }
  while (std::getline(csv, line)) {
    const auto comma = line.find(',');
    if (comma == std::string::npos) continue;
    data.series.push_back(std::stod(line.substr(comma + 1)));
  }
  std::ifstream json_in(dir + "/expected_change_points.json");
  const nlohmann::json json = nlohmann::json::parse(json_in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.contains("cases")) {
    data.error = "cannot read " + dir + "/expected_change_points.json";
    return data;
  }
  for (const auto& c : json["cases"]) {
    Case one;
    one.test = c["test"].get<std::string>();
    one.options.window_len = c["params"]["window_len"].get<std::size_t>();
    one.options.max_pvalue = c["params"]["max_pvalue"].get<double>();
    one.options.min_magnitude = c["params"]["min_magnitude"].get<double>();
    one.expected = c["expected_change_point_indices"].get<std::vector<std::size_t>>();
    data.cases.push_back(std::move(one));
  }
  return data;
}

inline std::string Join(const std::vector<std::size_t>& v) {
  std::ostringstream out;
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  return out.str();
}

}  // namespace gpucanary::analysis::cpd::tigerbeetle
