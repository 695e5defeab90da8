#pragma once
// Test helpers: load a golden-vector file from testdata/ (made by
// scripts/golden/analysis_stats.py) and compare doubles to a relative tolerance.

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace gpucanary::analysis::stats::testing {

inline nlohmann::json LoadGolden(const std::string& name) {
  const std::string path =
      std::string(GPUCANARY_SOURCE_DIR) + "/src/analysis/stats/testdata/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return nlohmann::json::parse(in);
}

// |actual - expected| <= rel * max(|expected|, tiny): 1e-9 relative by default.
inline ::testing::AssertionResult NearRel(double actual, double expected, double rel = 1e-9) {
  if (std::isinf(expected) && actual == expected) return ::testing::AssertionSuccess();
  const double scale = std::max(std::fabs(expected), 1e-300);
  if (std::fabs(actual - expected) <= rel * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "actual " << actual << " expected " << expected << " (relative error "
         << std::fabs(actual - expected) / scale << " > " << rel << ")";
}

}  // namespace gpucanary::analysis::stats::testing
