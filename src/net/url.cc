#include "net/url.h"

namespace gpucanary::net {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> Decode(std::string_view s, std::size_t base) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%') {
      const int hi = i + 2 < s.size() ? HexValue(s[i + 1]) : -1;
      const int lo = i + 2 < s.size() ? HexValue(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return Error(StatusCode::kInvalidArgument,
                     "bad percent escape at offset " + std::to_string(base + i));
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() * 3);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool unreserved = (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') ||
                            (u >= '0' && u <= '9') || u == '-' || u == '.' || u == '_' || u == '~';
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseForm(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t pos = 0;
  while (pos <= query.size()) {
    std::size_t end = query.find('&', pos);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view pair = query.substr(pos, end - pos);
    if (!pair.empty()) {
      const std::size_t eq = pair.find('=');
      auto name = Decode(pair.substr(0, eq), pos);
      if (!name) return Error(name.error());
      std::string value;
      if (eq != std::string_view::npos) {
        auto v = Decode(pair.substr(eq + 1), pos + eq + 1);
        if (!v) return Error(v.error());
        value = std::move(*v);
      }
      out.emplace_back(std::move(*name), std::move(value));
    }
    pos = end + 1;
  }
  return out;
}

}  // namespace gpucanary::net
