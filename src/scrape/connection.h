#pragma once
// Internal to src/scrape (its .cc files and tests only): what makes the
// asynchronous HTTP client (net/async_connection.h) a Prometheus scraper's
// connection to one target. Boost.Asio appears here, so no public header
// includes this.
//
// Each scrape is one GET with Prometheus's request headers (Accept,
// Accept-Encoding: gzip, X-Prometheus-Scrape-Timeout-Seconds, User-Agent);
// the connection reports a gzip body as received (the ingest undoes it) and
// words its errors as the scraper always has ("GET <url>: timed out after
// 250 ms (receive)"; see net::AsyncConnection::Wording).

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "net/async_connection.h"
#include "scrape/target.h"

namespace gpucanary::scrape::internal {

// Prometheus 2.42's Accept header (scrape/scrape.go acceptHeader).
inline constexpr const char* kAcceptHeader =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

// A kept-alive connection to `target` on the scraper's io_context, its name
// looked up inside each scrape's deadline; over TLS with `tls` (the job's
// tls_config, for an https target), else plain. Lifetime and threads:
// net::AsyncConnection's.
std::shared_ptr<net::AsyncConnection> NewConnection(
    boost::asio::io_context& ioc, const Target& target,
    std::shared_ptr<const net::ClientTls> tls = nullptr);

// The GET every scrape of one target sends. Thread-compatible.
class ScrapeRequest {
 public:
  ScrapeRequest() = default;  // empty until assigned one for a target
  // `body_limit`: the longest response body taken, as received.
  ScrapeRequest(const Target& target, const std::string& user_agent, std::size_t body_limit);

  // The request of a scrape whose deadline is `timeout`: Prometheus tells the
  // target how long it may take (X-Prometheus-Scrape-Timeout-Seconds). The
  // same object while the timeout stays the same, so that the connection
  // reuses its message. REQUIRES: built for a target; timeout > 0.
  const std::shared_ptr<const net::ClientRequest>& WithTimeout(std::chrono::milliseconds timeout);

 private:
  net::ClientRequest request_;
  std::chrono::milliseconds timeout_{0};            // what request_'s last header says
  std::shared_ptr<const net::ClientRequest> sent_;  // request_ as of timeout_
};

}  // namespace gpucanary::scrape::internal
