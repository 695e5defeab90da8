#pragma once
// std::unordered_map keyed by std::string that can be looked up with a
// std::string_view without building a std::string: per-sample and per-row
// lookups must not allocate.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gpucanary {

// Transparent hash: hashes std::string, std::string_view and const char* alike.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};

template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace gpucanary
