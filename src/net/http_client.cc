#include "net/http_client.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>
#include <utility>

#include "net/gzip.h"

namespace gpucanary::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kUserAgent = "gpucanary/0.1";

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }
beast::string_view BeastView(std::string_view s) { return {s.data(), s.size()}; }

// "[::1]:80" or "127.0.0.1:80": the Host header (RFC 9110 §7.2) and the URL
// prefix in error messages.
std::string Authority(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Runs the operations started on `ioc` until they have all completed.
void RunAll(asio::io_context& ioc) {
  ioc.restart();
  ioc.run();
}

bool IsConnectionLost(const ErrorCode& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == http::error::partial_message;
}

}  // namespace

class HttpConnection::Impl {
 public:
  Impl(std::string host, std::uint16_t port)
      : host_(std::move(host)), port_(port), authority_(Authority(host_, port_)) {}

  // `url` names the request in error messages; `close` asks the server to
  // close the connection after the response (a one-shot Fetch).
  Result<HttpResponse> Request(std::string_view target, const FetchOptions& options,
                               std::string_view url, bool close);
  int connects() const { return connects_; }
  std::string Url(std::string_view target) const {
    return "http://" + authority_ + std::string(target);
  }
  void Close() {
    if (stream_) stream_->close();
    stream_.reset();
    buffer_.clear();
  }

 private:
  // Why one exchange failed, and whether it may be retried on a new connection.
  struct Failure {
    Status status;
    bool retryable = false;
  };

  Status Connect(Clock::time_point deadline, const std::string& what, int timeout_ms);
  Result<HttpResponse> Exchange(const http::request<http::string_body>& req,
                                const FetchOptions& options, Clock::time_point deadline,
                                const std::string& what, Failure& failure);

  std::string host_;
  std::uint16_t port_;
  std::string authority_;
  asio::io_context ioc_{1};
  std::optional<beast::tcp_stream> stream_;  // set while connected
  beast::flat_buffer buffer_;
  int connects_ = 0;
  int requests_on_connection_ = 0;
};

Status HttpConnection::Impl::Connect(Clock::time_point deadline, const std::string& what,
                                     int timeout_ms) {
  ErrorCode ec;
  std::vector<tcp::endpoint> endpoints;
  const asio::ip::address address = asio::ip::make_address(host_, ec);
  if (!ec) {
    endpoints.emplace_back(address, port_);
  } else {
    tcp::resolver resolver(ioc_);
    for (const auto& entry : resolver.resolve(host_, std::to_string(port_), ec)) {
      endpoints.push_back(entry.endpoint());
    }
    if (ec || endpoints.empty()) {
      return Status(StatusCode::kUnavailable, what + ": cannot resolve host: " + ec.message());
    }
  }
  stream_.emplace(ioc_);
  stream_->expires_at(deadline);
  stream_->async_connect(endpoints, [&ec](ErrorCode e, const tcp::endpoint&) { ec = e; });
  RunAll(ioc_);
  if (ec) {
    stream_.reset();
    if (ec == beast::error::timeout) {
      return Status(StatusCode::kUnavailable,
                    what + ": connect: timed out after " + std::to_string(timeout_ms) + " ms");
    }
    return Status(StatusCode::kUnavailable, what + ": connect: " + ec.message());
  }
  ErrorCode ignored;
  stream_->socket().set_option(tcp::no_delay(true), ignored);
  ++connects_;
  requests_on_connection_ = 0;
  buffer_.clear();
  return Status::Ok();
}

Result<HttpResponse> HttpConnection::Impl::Exchange(const http::request<http::string_body>& req,
                                                    const FetchOptions& options,
                                                    Clock::time_point deadline,
                                                    const std::string& what, Failure& failure) {
  http::response_parser<http::string_body> parser;
  parser.body_limit(options.max_body_bytes);
  parser.skip(req.method() == http::verb::head);  // RFC 9110 §9.3.2: no body follows
  ErrorCode ec;
  const char* phase = "send";
  stream_->expires_at(deadline);
  http::async_write(*stream_, req, [&](ErrorCode write_ec, std::size_t) {
    if (write_ec) {
      ec = write_ec;
      return;
    }
    phase = "receive";
    http::async_read(*stream_, buffer_, parser,
                     [&ec](ErrorCode read_ec, std::size_t) { ec = read_ec; });
  });
  RunAll(ioc_);
  ++requests_on_connection_;
  if (ec) {
    failure.retryable = IsConnectionLost(ec) && !parser.got_some();
    if (ec == beast::error::timeout) {
      failure.status = Status(
          StatusCode::kUnavailable,
          what + ": timed out after " + std::to_string(options.timeout_ms) + " ms (" + phase + ")");
    } else if (ec == http::error::body_limit) {
      failure.status =
          Status(StatusCode::kOutOfRange, what + ": response body over " +
                                              std::to_string(options.max_body_bytes) + " bytes");
    } else if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
               !IsConnectionLost(ec)) {
      failure.status =
          Status(StatusCode::kParseError, what + ": bad HTTP response: " + ec.message());
    } else {
      failure.status = Status(StatusCode::kIoError, what + ": " + phase + ": " + ec.message());
    }
    return Error(failure.status);
  }
  auto res = parser.release();
  HttpResponse out;
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    out.headers.emplace_back(AsciiLower(View(field.name_string())),
                             std::string(View(field.value())));
  }
  out.content_type = std::string(View(res[http::field::content_type]));
  out.body = std::move(res.body());
  if (!res.keep_alive()) Close();
  const std::string_view encoding = out.Header("content-encoding");
  // A HEAD, 204 or 304 response has no body to decode, whatever it is encoded with.
  if (!out.body.empty() && IsGzipCoding(encoding)) {
    auto decoded = GzipDecompress(out.body, options.max_body_bytes);
    if (!decoded) return Error(decoded.error().WithPrefix(what));
    out.body = std::move(*decoded);
  }
  return out;
}

Result<HttpResponse> HttpConnection::Impl::Request(std::string_view target,
                                                   const FetchOptions& options,
                                                   std::string_view url, bool close) {
  const std::string what = options.method + " " + std::string(url);
  if (options.timeout_ms < 1) return Error(StatusCode::kInvalidArgument, what + ": timeout_ms < 1");
  if (options.method.empty() || target.empty() || target[0] != '/') {
    return Error(StatusCode::kInvalidArgument, what + ": bad method or target");
  }
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(options.timeout_ms);

  http::request<http::string_body> req;
  req.method_string(BeastView(options.method));
  req.target(BeastView(target));
  req.version(11);
  req.set(http::field::host, BeastView(authority_));
  req.set(http::field::user_agent, BeastView(kUserAgent));
  if (options.accept_gzip) req.set(http::field::accept_encoding, "gzip");
  if (!options.content_type.empty()) {
    req.set(http::field::content_type, BeastView(options.content_type));
  }
  for (const auto& [name, value] : options.headers) req.insert(BeastView(name), BeastView(value));
  req.body() = options.body;
  if (!options.body.empty() || options.method == "POST" || options.method == "PUT") {
    req.prepare_payload();
  }
  req.keep_alive(!close);

  const bool idempotent = options.method == "GET" || options.method == "HEAD";
  for (int attempt = 0;; ++attempt) {
    const bool reused = stream_.has_value() && requests_on_connection_ > 0;
    if (!stream_) GC_RETURN_IF_ERROR(Connect(deadline, what, options.timeout_ms));
    Failure failure;
    auto response = Exchange(req, options, deadline, what, failure);
    if (response) return response;
    Close();
    // A kept-alive connection the server closed while it sat idle fails
    // before any response byte: that request was never processed.
    if (!(reused && failure.retryable && idempotent && attempt == 0)) return response;
  }
}

HttpConnection::HttpConnection(std::string host, std::uint16_t port)
    : impl_(std::make_unique<Impl>(std::move(host), port)) {}
HttpConnection::~HttpConnection() = default;
HttpConnection::HttpConnection(HttpConnection&&) noexcept = default;
HttpConnection& HttpConnection::operator=(HttpConnection&&) noexcept = default;

Result<HttpResponse> HttpConnection::Request(std::string_view target, const FetchOptions& options) {
  return impl_->Request(target, options, impl_->Url(target), false);
}

int HttpConnection::connects() const { return impl_->connects(); }
void HttpConnection::Close() { impl_->Close(); }

Result<HttpResponse> Fetch(const std::string& url, const FetchOptions& options) {
  auto parsed = ParseHttpUrl(url);
  if (!parsed) return Error(parsed.error());
  HttpConnection::Impl connection(parsed->host, parsed->port);
  return connection.Request(parsed->target, options, url, true);
}

}  // namespace gpucanary::net
