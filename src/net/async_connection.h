#pragma once
// The one asynchronous HTTP/1.1 client (plain TCP, or TLS with
// Options::tls): one kept-alive connection to host:port, driven on a caller-supplied
// boost::asio::io_context. Two users: the scraper, one connection per target
// on its shared io thread (scrape/connection.h), and the synchronous client
// (net/http_client.h), which runs one on a private io_context on the
// caller's thread.
//
// Internal to src/net and src/scrape: Boost.Asio appears in this interface,
// so no header that other components include may include this one.
//
// Each Fetch sends one request and reads one response, under one deadline
// (now + timeout) covering name lookup (see Options::blocking_lookup),
// connect, send and receive; when it passes, the socket is closed and the
// fetch fails as timed out. The connection is reused while the server keeps
// it alive; a GET or HEAD that fails on a reused connection before any
// response byte is retried once on a new one (the server may have closed it
// while idle), within the same deadline. Other methods are never retried
// (the server may have acted on them).

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace gpucanary::net {

struct ClientTls;  // net/tls_context.h

// One request to send and how much of its response to take. A value type;
// Fetch takes it shared and immutable, so that a caller that sends the same
// request again and again (the scraper) has its message built once.
struct ClientRequest {
  std::string method = "GET";  // sent as given (methods are case-sensitive)
  std::string target = "/";    // path and query
  // Sent after the Host header (which the connection writes, from its host
  // and port), in this order, names as given.
  std::vector<std::pair<std::string, std::string>> headers;
  // Sent with Content-Length when not empty, and for every POST or PUT.
  std::string body;
  bool keep_alive = true;  // false sends "Connection: close"
  // Names the request in error messages: "<method> <url>: ...".
  std::string url;
  // The longest response body taken, as received (before any gzip is
  // undone); a longer one fails the fetch with kOutOfRange. With on_body,
  // only a declared Content-Length is held to it.
  std::size_t body_limit = std::size_t{64} << 20;
  // Streaming (a Kubernetes watch, which never ends on its own): when set,
  // the body is not collected into FetchResult::body but handed here piece
  // by piece as it arrives, the transfer coding (chunked) undone and any
  // content coding (gzip) not. It is called first with an empty piece as
  // soon as the head has arrived, then once per piece that brought body
  // bytes, in order, on the io thread; `status` is the response's status
  // code. Returning false stops the fetch: the socket is closed and `done`
  // runs with kUnavailable "<method> <url>: stopped by the caller". A
  // stream that ends (the last chunk, Content-Length reached, or the close
  // that ends a body without either) ends the fetch as a whole response
  // does; the deadline still covers the whole exchange. It must not call
  // the connection's Fetch; it may call Close (the fetch then fails as
  // cancelled).
  std::function<bool(int status, std::string_view piece)> on_body;
};

// What one Fetch got: a whole response (any HTTP status), or why there is
// none. A value type.
struct FetchResult {
  Status error;  // ok when a whole response arrived
  bool timed_out = false;
  int status = 0;  // also when a streamed fetch (on_body) failed after its head
  std::string content_type;
  bool gzip = false;  // Content-Encoding names gzip (the body is still encoded)
  // Every header received, names lower-cased, in wire order; filled only with
  // Options::keep_headers.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // as received; empty with ClientRequest::on_body
  double duration_s = 0;
};

// Lives as long as its owner holds it or an operation is pending (each holds
// a shared_ptr). While a fetch is in flight the connection holds its `done`
// and what that captures: a `done` that holds the connection's owner makes a
// cycle until it has run. When the io_context stops with the completion
// unrun (io_context::stop), `done` never runs, and the owner must drop its
// own reference to the connection (once the io thread has stopped) for both
// to go (as ScrapeManager::Stop does). All calls and callbacks on the
// io_context's thread; the io_context must outlive the connection.
class AsyncConnection {
 public:
  // How errors read where the scraper's and the synchronous client's words
  // have always differed, kScrape's / kClient's:
  //   - name lookup failed: "resolve: <why>" / "cannot resolve host: <why>";
  //   - the deadline passed while connecting: "timed out after N ms
  //     (connect)" / "connect: timed out after N ms";
  //   - the body is over the limit: "body over N bytes" / "response body over
  //     N bytes";
  //   - the connection broke while sending or receiving ("<phase>: <why>"):
  //     kUnavailable / kIoError.
  // Each message starts "<method> <url>: ". The rest read the same in both:
  // "timed out after 250 ms (receive)", "connect: Connection refused",
  // "bad HTTP response: <why>" (kParseError), "cancelled" (after Close()).
  // Lookup, connect and deadline failures are kUnavailable, the body limit
  // kOutOfRange, in both.
  enum class Wording : std::uint8_t { kScrape, kClient };

  struct Options {
    Wording wording = Wording::kScrape;
    // How a host name (not an IP address) is looked up: false, asynchronously
    // inside the deadline (the scraper); true, with a blocking system
    // resolver call on the io thread that the deadline does not cut short,
    // though the time it takes counts against it (the synchronous client,
    // whose io_context runs on the caller's thread anyway; no resolver
    // thread is started).
    bool blocking_lookup = false;
    // Fill FetchResult::headers (the scraper reads only Content-Type and
    // Content-Encoding, and skips the copies).
    bool keep_headers = false;
    // Speak TLS (https://) with this context: a handshake after each
    // connect, its failures "<method> <url>: TLS handshake: <why>"
    // (kUnavailable). Null: plain TCP.
    std::shared_ptr<const ClientTls> tls;
  };

  using Done = std::function<void(FetchResult)>;

  static std::shared_ptr<AsyncConnection> Create(boost::asio::io_context& ioc, std::string host,
                                                 std::uint16_t port, Options options);
  virtual ~AsyncConnection() = default;

  // Sends `request`; `done` runs once, on the io thread and never inside
  // Fetch, with the response or why there is none (also when Close() cut it
  // short). The connection keeps `request` until the next Fetch; passing the
  // same object again reuses the message built from it. REQUIRES: request
  // not null; no fetch in flight; timeout > 0.
  virtual void Fetch(const std::shared_ptr<const ClientRequest>& request,
                     std::chrono::milliseconds timeout, Done done) = 0;

  // Cancels the fetch in flight (its `done` then runs with an error) and
  // closes the socket; the next Fetch opens a new one.
  virtual void Close() = 0;

  // TCP connections opened so far (1 while keep-alive holds); with TLS,
  // counted once the handshake is done.
  virtual int connects() const = 0;
};

}  // namespace gpucanary::net
