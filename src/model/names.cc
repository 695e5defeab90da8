#include "model/names.h"

namespace gpucanary::model {
namespace {

bool IsAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  const char first = name.front();
  if (!IsAsciiAlpha(first) && first != '_' && first != ':') return false;
  for (char c : name.substr(1)) {
    if (!IsAsciiAlpha(c) && !IsAsciiDigit(c) && c != '_' && c != ':') return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty()) return false;
  const char first = name.front();
  if (!IsAsciiAlpha(first) && first != '_') return false;
  for (char c : name.substr(1)) {
    if (!IsAsciiAlpha(c) && !IsAsciiDigit(c) && c != '_') return false;
  }
  return true;
}

}  // namespace gpucanary::model
