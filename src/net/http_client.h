#pragma once
// A small synchronous HTTP/1.1 client (http:// and https://), for tests, the
// CLI, integration tests, the benchmark and every outbound client of the
// daemon (Grafana, OTLP, webhooks, history Prometheus, Kubernetes API). Each call blocks the
// calling thread until the response is complete or the deadline passes; no
// background threads. Built on the asynchronous client
// (net/async_connection.h), run on a private event loop by the caller's
// thread, so connect, deadline, keep-alive, retry and body limit have one
// implementation.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "net/http_message.h"
#include "net/tls_options.h"
#include "net/url.h"

namespace gpucanary::net {

struct FetchOptions {
  std::string method = "GET";
  std::string body;
  std::string content_type;                                  // sent as Content-Type when not empty
  std::vector<std::pair<std::string, std::string>> headers;  // extra request headers
  int timeout_ms = 5000;    // the whole exchange: connect, send, receive (not name lookup)
  bool accept_gzip = true;  // send "Accept-Encoding: gzip" and decode gzip bodies
  std::size_t max_body_bytes = 64 << 20;  // larger response bodies (decoded) are an error
  // For https:// URLs (ignored for http://): the server's certificate is
  // checked against ca_file or the system's CAs, and its name against
  // server_name or the URL's host, unless insecure_skip_verify.
  TlsClientOptions tls{};
};

// One request on a fresh connection, closed afterwards. Gzip bodies are
// decoded (see HttpResponse). Any status is a successful fetch; errors are
// for not getting a response, each naming the method, the URL and what
// failed: kInvalidArgument (bad URL or options, TLS files that cannot be
// loaded: "GET https://h/: tls_config.ca_file ca.pem: No such file or
// directory"), kUnavailable ("GET http://127.0.0.1:9/metrics: connect:
// Connection refused", "...: timed out after 5000 ms", "GET
// https://127.0.0.1:9443/metrics: TLS handshake: certificate verify failed
// (self-signed certificate)"), kIoError (the connection broke), kParseError (not HTTP,
// bad gzip), kOutOfRange (body over max_body_bytes). A host name (not an IP
// address) is looked up with the system resolver, outside the timeout.
// Thread-safe.
Result<HttpResponse> Fetch(const std::string& url, const FetchOptions& options = {});

// One kept-alive connection to host:port for repeated requests, as a
// Prometheus scraper holds one per target. Connects on the first request and
// again when the server has closed the connection; a GET or HEAD that fails
// on a reused connection before any response byte is retried once on a new
// one (the server may have closed it while idle). Errors as for Fetch.
// Each holds four descriptors: its socket and its own small event loop
// (epoll, eventfd, timerfd), so calls need no thread but the caller's.
// Thread-compatible: one thread at a time. A moved-from HttpConnection may
// only be destroyed or assigned to.
class HttpConnection {
 public:
  // Plain HTTP.
  HttpConnection(std::string host, std::uint16_t port);
  // HTTPS with `tls`: its files are loaded on the first request (errors as
  // Fetch's) and the context kept for the connection's life; the
  // FetchOptions::tls of each request is not read.
  HttpConnection(std::string host, std::uint16_t port, TlsClientOptions tls);
  ~HttpConnection();
  HttpConnection(HttpConnection&&) noexcept;
  HttpConnection& operator=(HttpConnection&&) noexcept;

  // `target` is the path and query: "/metrics".
  Result<HttpResponse> Request(std::string_view target, const FetchOptions& options = {});

  // TCP connections opened so far: 1 while keep-alive holds.
  int connects() const;

  // Closes the connection now (the next Request opens a new one).
  void Close();

 private:
  friend Result<HttpResponse> Fetch(const std::string& url, const FetchOptions& options);
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucanary::net
