#pragma once
// The daemon's HTTP routing as a table: method and path pattern to the one
// function that answers, so each endpoint is a function of its own and the
// steps every endpoint shares (matching the path, 405 with Allow) are done
// once. The query, release and correlation APIs each hold one.
//
// A pattern is a literal path ("/api/v1/query") or a path with one
// placeholder:
//   {name}     one path segment: non-empty, no '/'     "/api/v1/releases/{id}"
//   {name...}  any text, '/' included, possibly empty  "/api/v1/label/{name...}/values"
// A path that starts with the text before a {name...} and ends with the text
// after it, the two overlapping ("/api/v1/label/values" above), matches too,
// with everything after the text before as the placeholder's ("values"): the
// query API's routing answered that path so before it was a table.
// The handler gets the placeholder's text as the path has it (not
// percent-decoded: the handler decodes what it needs). The name documents the
// route only.
//
// Thread-safe once built: Add everything before the first Handle, which is
// const.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "net/http_message.h"

namespace gpucanary::daemon {

class Router {
 public:
  // `arg` is the placeholder's text ("" for a literal pattern); it points
  // into request.path.
  using Handler = std::function<void(const net::HttpRequest& request, std::string_view arg,
                                     net::HttpResponse& response)>;

  // Adds a route: `methods` as an Allow header lists them ("GET, HEAD"),
  // `pattern` as above. REQUIRES: at most one placeholder, closed by '}'.
  void Add(std::string_view methods, std::string_view pattern, Handler handler);

  // Answers `request` with the first route, in the order added, whose pattern
  // matches its path and whose methods include its method. When patterns
  // match but no method does: 405, text/plain "method not allowed\n", with
  // Allow listing the methods of every matching route in the order added.
  // Returns false, `response` untouched, when no pattern matches.
  bool Handle(const net::HttpRequest& request, net::HttpResponse& response) const;

 private:
  enum class Placeholder { kNone, kSegment, kRest };
  struct Route {
    std::vector<std::string> methods;
    std::string prefix;  // the path before the placeholder (all of it for a literal)
    std::string suffix;  // after it
    Placeholder placeholder = Placeholder::kNone;
    Handler handler;
  };
  // Whether `route` matches `path`; then `arg` is the placeholder's text.
  static bool Match(const Route& route, std::string_view path, std::string_view& arg);

  std::vector<Route> routes_;
};

}  // namespace gpucanary::daemon
