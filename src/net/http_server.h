#pragma once
// An HTTP/1.1 server for many small listeners in one process: the fleet
// simulator serves two /metrics ports per simulated node (hundreds of nodes,
// each scraped every second by Prometheus) plus a control API; the daemon
// serves its API. All listeners share one event loop run by a small fixed
// number of threads (Options::threads); connections are asynchronous and
// kept alive, never a thread per connection. Built on Boost.Beast/Asio, kept
// out of this header.
//
// Threads: with handler_threads 0 (the default: the simulator's many cheap
// /metrics handlers) handlers run on the io threads. With handler_threads > 0
// (the daemon, whose queries may take seconds) the io threads only read,
// write and answer a listener's FastHandler (health checks); every other
// request goes to a pool of handler_threads threads, so slow handlers delay
// one another but never the io threads: accepting, timeouts, connection
// limits and health checks go on while every handler thread is busy.
//
// What the server does for every handler:
// - HTTP/1.0 and 1.1, keep-alive (1.1 by default, 1.0 with
//   "Connection: keep-alive"), "Connection: close" honoured, pipelining,
//   "Expect: 100-continue" answered.
// - HEAD: the handler sees method "HEAD" and fills the response as for GET;
//   the server sends the headers (Content-Length included) without the body.
// - gzip: a body of at least gzip_min_bytes is compressed when the request's
//   Accept-Encoding allows gzip (Prometheus sends "Accept-Encoding: gzip"),
//   with "Content-Encoding: gzip"; such responses carry
//   "Vary: Accept-Encoding" either way. Not when the handler set its own
//   Content-Encoding.
// - Errors the handler never sees: a request body over max_body_bytes: 413;
//   headers over 64 KiB: 431; a malformed request: 400; a Transfer-Encoding
//   other than a final "chunked" (RFC 9112 §6.1, §6.3), Transfer-Encoding
//   with Content-Length, or Transfer-Encoding in HTTP/1.0: 400; codings
//   before the final chunked (none is implemented): 501; each closes the
//   connection. A handler that throws: 500 ("internal server error"), and the
//   connection and the server go on. A status outside 200..599 or a header
//   with CR/LF from the handler: 500.
// - Timeouts: a connection waiting for the next request is closed after
//   idle_timeout_s; a request must arrive whole within read_timeout_s of its
//   first byte, and a response must be written within write_timeout_s. A slow
//   or dead client holds only its own connection.
// - Connection limits (0: none): a connection beyond max_connections_per_client
//   from one remote IP address is answered 429, one beyond max_connections
//   (all listeners together) 503, both with "Retry-After: 1" and closed at
//   once, before a byte of it is read; the connections already open go on.
// - HTTPS (ListenTls): TLS 1.2 or later through OpenSSL; the handshake must
//   finish within read_timeout_s; everything above holds on top of it (the
//   429/503 refusals are sent in plain text before any handshake). A
//   client that is not speaking TLS (plain HTTP) fails the handshake and
//   is closed. The certificate files are looked at at most once a second,
//   as connections are accepted, and a changed set is loaded for the
//   connections accepted from then on; one that fails to load keeps the
//   previous certificate and is reported through Options::log.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "net/http_message.h"
#include "net/tls_options.h"

namespace gpucanary::net {

// Fills `response` for `request`. Unknown paths are the handler's business
// (it sets 404). May throw; the client then gets a 500. Called on the
// server's io threads, or its handler threads when Options::handler_threads
// > 0: with more than one such thread, the same handler may run concurrently
// for different connections, so it must be thread-safe. A handler that blocks
// holds its thread: an io thread (every connection waits), or a handler
// thread (the other requests share the rest; they queue, at most one per
// connection, so at most max_connections).
using Handler = std::function<void(const HttpRequest& request, HttpResponse& response)>;

// Answers the requests that must be answered at once, whatever the handlers
// are doing (health checks), and returns true; returns false, `response`
// untouched, to leave the request to the listener's Handler. Called on an io
// thread for every request of its listener, before the Handler: it must be
// quick and never block (no lock a handler may hold for long, no I/O). May
// throw, as a Handler may (500).
using FastHandler = std::function<bool(const HttpRequest& request, HttpResponse& response)>;

// Thread-safe: Listen, Start, Stop and stats may be called from any thread,
// but not from inside a handler (Stop would wait for itself).
class HttpServer {
 public:
  struct Options {
    int threads = 1;                       // io threads running every listener; 1..256
    std::size_t max_body_bytes = 1 << 20;  // larger request bodies get 413
    // Keep-alive wait for the next request. 30 s: longer than the 15 s a
    // Prometheus usually scrapes at (it keeps its connection), short enough
    // that an idle connection someone opened and forgot holds its descriptor
    // for half a minute, not two (nginx 75 s, Node.js 5 s).
    int idle_timeout_s = 30;
    int read_timeout_s = 10;                     // from the first byte of a request to its end
    int write_timeout_s = 10;                    // to write one response
    std::size_t gzip_min_bytes = 1024;           // smaller bodies are never compressed
    int gzip_level = 1;                          // zlib level 1..9 (see docs/performance.md)
    int handler_threads = 0;                     // 0: handlers run on the io threads; else 1..256
    std::size_t max_connections = 0;             // open at once, all listeners; 0: no limit
    std::size_t max_connections_per_client = 0;  // from one remote IP address; 0: no limit
    // Where the server reports what nobody asked about (TLS certificate
    // reloads); null: standard error. Called on an io thread.
    std::function<void(const std::string&)> log = nullptr;
    // How often, at most, an HTTPS listener looks at its certificate files.
    int tls_check_interval_ms = 1000;
  };

  struct Stats {
    std::uint64_t connections_accepted = 0;
    std::uint64_t connections_refused = 0;  // over a connection limit (429, 503)
    std::uint64_t open_connections = 0;
    std::uint64_t requests = 0;                // responses the handlers produced
    std::uint64_t handler_exceptions = 0;      // of those, the 500s for a throwing handler
    double io_cpu_seconds = 0;                 // CPU time of the io and handler threads so far
    std::uint64_t tls_handshake_failures = 0;  // connections closed for a failed handshake
    std::uint64_t tls_reloads = 0;             // certificates reloaded, all listeners
    std::uint64_t tls_reload_failures = 0;     // changed files that failed to load
  };

  explicit HttpServer(const Options& options);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port and starts accepting on it with `handler` (and `fast`,
  // when given, asked first); port 0 lets the OS pick. Returns the bound
  // port. May be called before or after Start(); connections are served once
  // Start() has run. `host` is an IP address or a name that resolves (the
  // first address is used).
  // Errors: kInvalidArgument for bad options or an empty handler; kIoError
  // "listen 127.0.0.1:9400: Address already in use" style when the OS
  // refuses; kUnavailable after Stop().
  Result<std::uint16_t> Listen(const std::string& host, std::uint16_t port, Handler handler,
                               FastHandler fast = nullptr);

  // As Listen, serving HTTPS with `tls`'s certificate (and client
  // certificates as tls.client_auth asks). Errors: Listen's, and
  // kInvalidArgument for files that cannot be loaded ("listen
  // 0.0.0.0:9464: tls_server_config.cert_file server.pem: No such file or
  // directory").
  Result<std::uint16_t> ListenTls(const std::string& host, std::uint16_t port,
                                  const TlsServerOptions& tls, Handler handler,
                                  FastHandler fast = nullptr);

  // Starts the io threads. Errors: kInvalidArgument for bad options or a
  // second Start; kUnavailable after Stop().
  Status Start();

  // Closes every listener and connection (responses being written are cut)
  // and joins the io and handler threads, once handlers running now have
  // returned; requests still waiting for a handler thread are dropped.
  // Idempotent; the server cannot be started again.
  void Stop();

  Stats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucanary::net
