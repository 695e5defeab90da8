#include "net/url.h"

#include <algorithm>

#include "net/http_message.h"

namespace gpucanary::net {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> Decode(std::string_view s, std::size_t base, bool plus_is_space = true) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '+' && plus_is_space) {
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

Status BadUrl(std::string_view url, std::string_view why) {
  return Status(StatusCode::kInvalidArgument,
                "bad URL '" + std::string(url) + "': " + std::string(why));
}

}  // namespace

std::string HostPort(std::string_view host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  const auto has_scheme = [url](std::string_view scheme) {
    return url.size() >= scheme.size() && EqualsIgnoreCase(url.substr(0, scheme.size()), scheme);
  };
  HttpUrl out;
  std::size_t scheme_size = 0;
  if (has_scheme("http://")) {
    scheme_size = 7;
  } else if (has_scheme("https://")) {
    scheme_size = 8;
    out.https = true;
    out.port = 443;
  } else {
    return Error(BadUrl(url, "only http:// and https:// are supported"));
  }
  if (std::any_of(url.begin(), url.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == '\x7f'; })) {
    return Error(BadUrl(url, "spaces or control characters"));
  }
  std::string_view rest = url.substr(scheme_size);
  rest = rest.substr(0, rest.find('#'));
  const std::size_t authority_end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, authority_end);
  if (authority_end != std::string_view::npos) {
    out.target = std::string(rest.substr(authority_end));
    if (out.target.front() == '?') out.target.insert(0, "/");
  }
  if (authority.find('@') != std::string_view::npos) {
    return Error(BadUrl(url, "user info is not supported"));
  }
  std::string_view port;
  if (authority.starts_with("[")) {  // RFC 3986 §3.2.2: IP-literal
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return Error(BadUrl(url, "unclosed '['"));
    out.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority[0] != ':') return Error(BadUrl(url, "junk after ']'"));
    if (!authority.empty()) port = authority.substr(1);
  } else {
    const std::size_t colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return Error(BadUrl(url, "no host"));
  if (!port.empty() || authority.ends_with(":")) {
    unsigned value = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || value > 65535) return Error(BadUrl(url, "bad port"));
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (port.empty() || value == 0 || value > 65535) return Error(BadUrl(url, "bad port"));
    out.port = static_cast<std::uint16_t>(value);
  }
  return out;
}

Result<std::string> PathDecode(std::string_view segment) {
  return Decode(segment, 0, /*plus_is_space=*/false);
}

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
