#include "scrape/connection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "net/gzip.h"
#include "net/http_message.h"

namespace gpucanary::scrape::internal {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }
beast::string_view BeastView(std::string_view s) { return {s.data(), s.size()}; }

bool IsConnectionLost(const ErrorCode& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == http::error::partial_message;
}

std::string Authority(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

class AsioConnection final : public Connection {
 public:
  AsioConnection(asio::io_context& ioc, std::string host, std::uint16_t port,
                 const std::string& path, std::string url, const std::string& user_agent,
                 std::size_t body_limit)
      : host_(std::move(host)),
        port_(port),
        url_(std::move(url)),
        body_limit_(body_limit),
        resolver_(ioc),
        socket_(ioc),
        timer_(ioc) {
    req_.method(http::verb::get);
    req_.target(BeastView(path));
    req_.version(11);
    req_.set(http::field::host, BeastView(Authority(host_, port_)));
    req_.set(http::field::user_agent, BeastView(user_agent));
    req_.set(http::field::accept, kAcceptHeader);
    req_.set(http::field::accept_encoding, "gzip");
    req_.keep_alive(true);
  }

  void Fetch(std::chrono::milliseconds timeout, Done done) override {
    GC_CHECK(!done_, "Connection::Fetch while a fetch is in flight");
    done_ = std::move(done);
    ++seq_;
    start_ = SteadyClock::now();
    timeout_ = timeout;
    timed_out_ = false;
    retried_ = false;
    if (timeout != last_timeout_) {
      // Prometheus tells the target how long it may take.
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(timeout.count()) / 1000);
      req_.set("X-Prometheus-Scrape-Timeout-Seconds", seconds);
      last_timeout_ = timeout;
    }
    timer_.expires_after(timeout);
    timer_.async_wait([self = Self(), seq = seq_](ErrorCode ec) {
      if (ec || seq != self->seq_ || !self->done_) return;
      self->timed_out_ = true;
      self->CancelIo();  // the pending operation completes with an error
    });
    if (socket_.is_open()) {
      reused_ = true;
      Write();
    } else {
      Resolve();
    }
  }

  void Close() override { CancelIo(); }

  int connects() const override { return connects_; }

 private:
  std::shared_ptr<AsioConnection> Self() {
    return std::static_pointer_cast<AsioConnection>(shared_from_this());
  }

  void CancelIo() {
    resolver_.cancel();
    ErrorCode ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    buffer_.clear();
  }

  void Resolve() {
    reused_ = false;
    phase_ = "connect";
    ErrorCode ec;
    const asio::ip::address address = asio::ip::make_address(host_, ec);
    if (!ec) {
      Connect(std::vector<tcp::endpoint>{tcp::endpoint(address, port_)});
      return;
    }
    phase_ = "resolve";
    resolver_.async_resolve(host_, std::to_string(port_),
                            [self = Self()](ErrorCode e, const tcp::resolver::results_type& r) {
                              if (e) return self->Fail(e);
                              std::vector<tcp::endpoint> endpoints;
                              for (const auto& entry : r) endpoints.push_back(entry.endpoint());
                              self->phase_ = "connect";
                              self->Connect(endpoints);
                            });
  }

  void Connect(const std::vector<tcp::endpoint>& endpoints) {
    asio::async_connect(socket_, endpoints, [self = Self()](ErrorCode e, const tcp::endpoint&) {
      if (e) return self->Fail(e);
      if (self->timed_out_) return self->Fail(asio::error::operation_aborted);
      ErrorCode ignored;
      self->socket_.set_option(tcp::no_delay(true), ignored);
      ++self->connects_;
      self->Write();
    });
  }

  void Write() {
    phase_ = "send";
    http::async_write(socket_, req_, [self = Self()](ErrorCode e, std::size_t) {
      if (e) return self->OnIoError(e, false);
      self->Read();
    });
  }

  void Read() {
    phase_ = "receive";
    parser_.emplace();
    parser_->body_limit(body_limit_);
    http::async_read(socket_, buffer_, *parser_, [self = Self()](ErrorCode e, std::size_t) {
      if (e) return self->OnIoError(e, self->parser_->got_some());
      self->OnResponse();
    });
  }

  void OnIoError(ErrorCode e, bool got_some) {
    // A kept-alive connection the server closed while it sat idle fails
    // before any response byte: the request was never processed.
    if (!timed_out_ && reused_ && !retried_ && !got_some && IsConnectionLost(e)) {
      retried_ = true;
      CancelIo();
      Resolve();
      return;
    }
    Fail(e);
  }

  void OnResponse() {
    auto res = parser_->release();
    parser_.reset();
    FetchResult r;
    r.status = static_cast<int>(res.result_int());
    r.content_type = std::string(View(res[http::field::content_type]));
    r.gzip = net::IsGzipCoding(View(res[http::field::content_encoding]));
    r.body = std::move(res.body());
    if (!res.keep_alive()) CancelIo();
    Finish(std::move(r));
  }

  void Fail(ErrorCode e) {
    CancelIo();
    FetchResult r;
    const std::string what = "GET " + url_ + ": ";
    if (timed_out_) {
      r.timed_out = true;
      r.error = Status(
          StatusCode::kUnavailable,
          what + "timed out after " + std::to_string(timeout_.count()) + " ms (" + phase_ + ")");
    } else if (e == http::error::body_limit) {
      r.error = Status(StatusCode::kOutOfRange,
                       what + "body over " + std::to_string(body_limit_) + " bytes");
    } else if (e == asio::error::operation_aborted) {
      r.error = Status(StatusCode::kUnavailable, what + "cancelled");
    } else if (e.category() == http::make_error_code(http::error::bad_target).category() &&
               !IsConnectionLost(e)) {
      r.error = Status(StatusCode::kParseError, what + "bad HTTP response: " + e.message());
    } else {
      r.error = Status(StatusCode::kUnavailable, what + phase_ + ": " + e.message());
    }
    Finish(std::move(r));
  }

  void Finish(FetchResult r) {
    timer_.cancel();
    r.duration_s = std::chrono::duration<double>(SteadyClock::now() - start_).count();
    Done done = std::move(done_);
    done_ = nullptr;
    done(std::move(r));
  }

  const std::string host_;
  const std::uint16_t port_;
  const std::string url_;
  const std::size_t body_limit_;
  tcp::resolver resolver_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  http::request<http::empty_body> req_;
  std::optional<http::response_parser<http::string_body>> parser_;
  Done done_;
  std::uint64_t seq_ = 0;  // which fetch the timer belongs to
  SteadyClock::time_point start_;
  std::chrono::milliseconds timeout_{0};
  std::chrono::milliseconds last_timeout_{0};
  const char* phase_ = "connect";
  bool timed_out_ = false;
  bool reused_ = false;
  bool retried_ = false;
  int connects_ = 0;
};

}  // namespace

std::shared_ptr<Connection> Connection::Create(asio::io_context& ioc, std::string host,
                                               std::uint16_t port, const std::string& path,
                                               std::string url, const std::string& user_agent,
                                               std::size_t body_limit) {
  return std::make_shared<AsioConnection>(ioc, std::move(host), port, path, std::move(url),
                                          user_agent, body_limit);
}

}  // namespace gpucanary::scrape::internal
