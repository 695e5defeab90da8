#include "daemon/router.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace gpucanary::daemon {
namespace {

// "GET, HEAD" -> {"GET", "HEAD"}.
std::vector<std::string> SplitMethods(std::string_view methods) {
  std::vector<std::string> out;
  while (!methods.empty()) {
    const std::size_t comma = std::min(methods.find(','), methods.size());
    std::string_view m = methods.substr(0, comma);
    while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
    while (!m.empty() && m.back() == ' ') m.remove_suffix(1);
    if (!m.empty()) out.emplace_back(m);
    methods.remove_prefix(std::min(comma + 1, methods.size()));
  }
  return out;
}

}  // namespace

void Router::Add(std::string_view methods, std::string_view pattern, Handler handler) {
  Route route;
  route.methods = SplitMethods(methods);
  route.handler = std::move(handler);
  const std::size_t open = pattern.find('{');
  if (open == std::string_view::npos) {
    route.prefix = std::string(pattern);
  } else {
    const std::size_t close = pattern.find('}', open);
    assert(close != std::string_view::npos && pattern.find('{', close) == std::string_view::npos);
    const std::string_view name = pattern.substr(open + 1, close - open - 1);
    route.placeholder = name.ends_with("...") ? Placeholder::kRest : Placeholder::kSegment;
    route.prefix = std::string(pattern.substr(0, open));
    route.suffix = std::string(pattern.substr(close + 1));
  }
  routes_.push_back(std::move(route));
}

bool Router::Match(const Route& route, std::string_view path, std::string_view& arg) {
  arg = {};
  if (route.placeholder == Placeholder::kNone) return path == route.prefix;
  if (!path.starts_with(route.prefix) || !path.ends_with(route.suffix)) return false;
  const std::size_t outer = route.prefix.size() + route.suffix.size();
  if (path.size() < outer) {
    // The prefix and the suffix overlap: "/api/v1/label/values" against
    // "/api/v1/label/{name...}/values". The hand-written routing before this
    // table answered that path with everything after the prefix as the name
    // ("values"); a {name...} route keeps that answer.
    if (route.placeholder != Placeholder::kRest) return false;
    arg = path.substr(route.prefix.size());
    return true;
  }
  arg = path.substr(route.prefix.size(), path.size() - outer);
  if (route.placeholder == Placeholder::kSegment) {
    return !arg.empty() && arg.find('/') == std::string_view::npos;
  }
  return true;
}

bool Router::Handle(const net::HttpRequest& request, net::HttpResponse& response) const {
  std::vector<std::string_view> allowed;
  bool matched = false;
  for (const Route& route : routes_) {
    std::string_view arg;
    if (!Match(route, request.path, arg)) continue;
    matched = true;
    if (std::find(route.methods.begin(), route.methods.end(), request.method) !=
        route.methods.end()) {
      route.handler(request, arg, response);
      return true;
    }
    for (const std::string& m : route.methods) {
      if (std::find(allowed.begin(), allowed.end(), m) == allowed.end()) allowed.push_back(m);
    }
  }
  if (!matched) return false;
  std::string allow;
  for (std::string_view m : allowed) {
    if (!allow.empty()) allow += ", ";
    allow += m;
  }
  response.status = 405;
  response.headers.emplace_back("Allow", std::move(allow));
  response.content_type = "text/plain";
  response.body = "method not allowed\n";
  return true;
}

}  // namespace gpucanary::daemon
