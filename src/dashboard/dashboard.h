#pragma once
// The dashboard `gpucanary serve` shows at `/` (docs/dashboard.md): the HTML,
// JavaScript and CSS of web/ and uPlot, built into the binary at build time
// (embed_assets.cmake), served from memory with validators so browsers
// revalidate cheaply. Uses net_codec's HTTP types only.

#include <span>
#include <string_view>

#include "net/http_message.h"

namespace gpucanary::dashboard {

// One built-in file. Every view points into static storage.
struct Asset {
  std::string_view path;          // the URL path: "/" (index.html) or "/assets/<name>"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view etag;          // strong, quotes included: "\"19c8d4c6ad88929a79f4\""
  std::string_view body;          // the file's bytes
};

// Every built-in file, from web/ as it was at build time (generated code).
std::span<const Asset> Assets();

// The asset served at `path` (exact match, no decoding), or nullptr.
const Asset* FindAsset(std::string_view path);

// True when an If-None-Match header value matches `etag` (RFC 9110 §13.1.2:
// "*", or a list of entity tags compared with the weak comparison, so
// W/"x" matches "x").
bool IfNoneMatchMatches(std::string_view header, std::string_view etag);

// Serves the dashboard. For a request whose path is an asset's, fills in
// `response` and returns true: GET and HEAD get the asset (200) with
// Content-Type, ETag and Cache-Control, or 304 when If-None-Match matches;
// other methods get 405 with Allow. For any other path returns false and
// leaves `response` alone, for the caller to route. Thread-safe.
bool Handle(const net::HttpRequest& request, net::HttpResponse& response);

}  // namespace gpucanary::dashboard
