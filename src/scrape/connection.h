#pragma once
// Internal to src/scrape (its .cc files only): one kept-alive HTTP/1.1
// connection to one scrape target, driven asynchronously on the scraper's
// io_context. Boost.Asio appears here, so no public header includes this.
//
// Each Fetch is one GET with Prometheus's request headers (Accept,
// Accept-Encoding: gzip, X-Prometheus-Scrape-Timeout-Seconds) and one
// deadline covering name lookup, connect, send and receive; when it passes,
// the socket is closed and the fetch fails as timed out. The connection is
// reused while the server keeps it alive; a request that fails on a reused
// connection before any response byte is retried once on a new one (the
// server may have closed it while idle), within the same deadline.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"

namespace gpucanary::scrape::internal {

// Prometheus 2.42's Accept header (scrape/scrape.go acceptHeader).
inline constexpr const char* kAcceptHeader =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

struct FetchResult {
  Status error;  // ok when a whole response arrived (any HTTP status)
  bool timed_out = false;
  int status = 0;
  std::string content_type;
  bool gzip = false;  // body is gzip-encoded (Content-Encoding: gzip)
  std::string body;   // as received
  double duration_s = 0;
};

// Lives as long as the scraper holds it or an operation is pending (each
// holds a shared_ptr). All calls and callbacks on the io_context's thread.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Done = std::function<void(FetchResult)>;

  // `path` is the path and query; `url` names the target in errors.
  static std::shared_ptr<Connection> Create(boost::asio::io_context& ioc, std::string host,
                                            std::uint16_t port, const std::string& path,
                                            std::string url, const std::string& user_agent,
                                            std::size_t body_limit);
  virtual ~Connection() = default;

  // Starts one GET; `done` runs once, on the io thread, with the response or
  // why there is none (also when Close() cut it short). REQUIRES: no fetch in
  // flight; timeout > 0.
  virtual void Fetch(std::chrono::milliseconds timeout, Done done) = 0;

  // Cancels the fetch in flight (its `done` then runs with an error) and
  // closes the socket.
  virtual void Close() = 0;

  // TCP connections opened so far (1 while keep-alive holds).
  virtual int connects() const = 0;
};

}  // namespace gpucanary::scrape::internal
