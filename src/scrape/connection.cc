#include "scrape/connection.h"

#include <cstdio>
#include <memory>
#include <utility>

namespace gpucanary::scrape::internal {

std::shared_ptr<net::AsyncConnection> NewConnection(boost::asio::io_context& ioc,
                                                    const Target& target,
                                                    std::shared_ptr<const net::ClientTls> tls) {
  net::AsyncConnection::Options options;
  options.wording = net::AsyncConnection::Wording::kScrape;
  options.blocking_lookup = false;
  options.keep_headers = false;
  options.tls = std::move(tls);
  return net::AsyncConnection::Create(ioc, target.host, target.port, options);
}

ScrapeRequest::ScrapeRequest(const Target& target, const std::string& user_agent,
                             std::size_t body_limit) {
  request_.method = "GET";
  request_.target = target.path;
  request_.headers = {{"User-Agent", user_agent},
                      {"Accept", kAcceptHeader},
                      {"Accept-Encoding", "gzip"},
                      {"X-Prometheus-Scrape-Timeout-Seconds", ""}};  // set by WithTimeout
  request_.keep_alive = true;
  request_.url = target.url;
  request_.body_limit = body_limit;
}

const std::shared_ptr<const net::ClientRequest>& ScrapeRequest::WithTimeout(
    std::chrono::milliseconds timeout) {
  if (timeout != timeout_) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(timeout.count()) / 1000);
    request_.headers.back().second = seconds;
    timeout_ = timeout;
    sent_ = std::make_shared<const net::ClientRequest>(request_);
  }
  return sent_;
}

}  // namespace gpucanary::scrape::internal
