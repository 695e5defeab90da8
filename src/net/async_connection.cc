#include "net/async_connection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <utility>

#include "net/gzip.h"
#include "net/http_message.h"
#include "net/tls_context.h"
#include "net/url.h"

namespace gpucanary::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }
beast::string_view BeastView(std::string_view s) { return {s.data(), s.size()}; }

// The server closed the connection (or it broke) before a whole response.
bool IsConnectionLost(const ErrorCode& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == http::error::partial_message || ec == asio::ssl::error::stream_truncated;
}

enum class Phase : std::uint8_t { kResolve, kConnect, kHandshake, kSend, kReceive };

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kResolve:
      return "resolve";
    case Phase::kConnect:
      return "connect";
    case Phase::kHandshake:
      return "TLS handshake";
    case Phase::kSend:
      return "send";
    case Phase::kReceive:
      break;
  }
  return "receive";
}

class AsioConnection final : public AsyncConnection,
                             public std::enable_shared_from_this<AsioConnection> {
 public:
  AsioConnection(asio::io_context& ioc, std::string host, std::uint16_t port, Options options)
      : host_(std::move(host)),
        port_(port),
        authority_(HostPort(host_, port_)),
        options_(std::move(options)),
        resolver_(ioc),
        socket_(ioc),
        timer_(ioc) {}

  void Fetch(const std::shared_ptr<const ClientRequest>& request, std::chrono::milliseconds timeout,
             Done done) override {
    GC_CHECK(!done_, "AsyncConnection::Fetch while a fetch is in flight");
    done_ = std::move(done);
    ++seq_;
    stream_status_ = 0;
    start_ = SteadyClock::now();
    timeout_ = timeout;
    timed_out_ = false;
    retried_ = false;
    Prepare(request);
    timer_.expires_after(timeout);
    timer_.async_wait([self = shared_from_this(), seq = seq_](ErrorCode ec) {
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
  // Builds the request's message, unless it is the object sent last (a
  // scraper sends the same request scrape after scrape). A request without a
  // body (every scrape) goes out as an empty_body message: Beast serializes
  // that with less work per write than a string_body one.
  void Prepare(const std::shared_ptr<const ClientRequest>& request) {
    if (request == sent_) return;
    if (request->body.empty()) {
      with_body_ = {};  // holds no copy of an earlier body
      bodiless_ = {};
      Build(*request, bodiless_);
      verb_ = bodiless_.method();
    } else {
      with_body_ = {};
      with_body_.body() = request->body;
      Build(*request, with_body_);
      verb_ = with_body_.method();
    }
    sent_ = request;
    what_ = request->method + " " + request->url + ": ";
  }

  template <class Body>
  void Build(const ClientRequest& request, http::request<Body>& req) const {
    req.method_string(BeastView(request.method));
    req.target(BeastView(request.target));
    req.version(11);
    req.set(http::field::host, BeastView(authority_));
    for (const auto& [name, value] : request.headers) req.insert(BeastView(name), BeastView(value));
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
      req.prepare_payload();
    }
    req.keep_alive(request.keep_alive);
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
    phase_ = Phase::kConnect;
    ErrorCode ec;
    const asio::ip::address address = asio::ip::make_address(host_, ec);
    if (!ec) {
      Connect(std::vector<tcp::endpoint>{tcp::endpoint(address, port_)});
      return;
    }
    phase_ = Phase::kResolve;
    if (options_.blocking_lookup) {
      ResolveBlocking();
      return;
    }
    resolver_.async_resolve(
        host_, std::to_string(port_),
        [self = shared_from_this()](ErrorCode e, const tcp::resolver::results_type& r) {
          if (e) return self->Fail(e);
          std::vector<tcp::endpoint> endpoints;
          for (const auto& entry : r) endpoints.push_back(entry.endpoint());
          self->phase_ = Phase::kConnect;
          self->Connect(endpoints);
        });
  }

  // The system resolver on this thread; the deadline's timer cannot fire
  // while it runs.
  void ResolveBlocking() {
    ErrorCode ec;
    std::vector<tcp::endpoint> endpoints;
    for (const auto& entry : resolver_.resolve(host_, std::to_string(port_), ec)) {
      endpoints.push_back(entry.endpoint());
    }
    if (ec || endpoints.empty()) {
      // Posted, as `done` never runs inside Fetch; described now, before
      // the timer can mark the fetch timed out.
      asio::post(socket_.get_executor(),
                 [self = shared_from_this(), error = Describe(ec)] { self->Fail(error, false); });
      return;
    }
    phase_ = Phase::kConnect;
    Connect(endpoints);
  }

  void Connect(const std::vector<tcp::endpoint>& endpoints) {
    asio::async_connect(socket_, endpoints,
                        [self = shared_from_this()](ErrorCode e, const tcp::endpoint&) {
                          if (e) return self->Fail(e);
                          if (self->timed_out_) return self->Fail(asio::error::operation_aborted);
                          ErrorCode ignored;
                          self->socket_.set_option(tcp::no_delay(true), ignored);
                          if (self->options_.tls) return self->Handshake();
                          ++self->connects_;
                          self->Write();
                        });
  }

  // A new TLS session on the new socket: the stream of the last connection
  // is replaced only here, when no operation can be pending on it.
  void Handshake() {
    phase_ = Phase::kHandshake;
    tls_.emplace(socket_, *options_.tls->context);
    PrepareClientSsl(tls_->native_handle(), *options_.tls, host_);
    tls_->async_handshake(asio::ssl::stream_base::client, [self = shared_from_this()](ErrorCode e) {
      if (e) return self->Fail(e);
      if (self->timed_out_) return self->Fail(asio::error::operation_aborted);
      ++self->connects_;
      self->Write();
    });
  }

  // Runs `op` on the connection's stream: the TLS one when there is one.
  template <typename Op>
  void OnStream(Op&& op) {
    if (tls_) {
      op(*tls_);
    } else {
      op(socket_);
    }
  }

  void Write() {
    phase_ = Phase::kSend;
    auto written = [self = shared_from_this()](ErrorCode e, std::size_t) {
      if (e) return self->OnIoError(e, false);
      self->Read();
    };
    OnStream([&](auto& stream) {
      if (sent_->body.empty()) {
        http::async_write(stream, bodiless_, std::move(written));
      } else {
        http::async_write(stream, with_body_, std::move(written));
      }
    });
  }

  void Read() {
    phase_ = Phase::kReceive;
    parser_.emplace();
    parser_->body_limit(sent_->body_limit);
    parser_->skip(verb_ == http::verb::head);  // RFC 9110 §9.3.2: no body follows
    if (sent_->on_body) return ReadStreamHead();
    OnStream([&](auto& stream) {
      http::async_read(stream, buffer_, *parser_,
                       [self = shared_from_this()](ErrorCode e, std::size_t) {
                         if (e) return self->OnIoError(e, self->parser_->got_some());
                         self->OnResponse();
                       });
    });
  }

  // Streaming (ClientRequest::on_body): the head, then the body as it
  // comes. The limit checked a declared Content-Length with the head; a
  // chunked or close-delimited stream has none.
  void ReadStreamHead() {
    OnStream([&](auto& stream) {
      http::async_read_header(
          stream, buffer_, *parser_, [self = shared_from_this()](ErrorCode e, std::size_t) {
            if (e) return self->OnIoError(e, self->parser_->got_some());
            self->parser_->body_limit(boost::none);
            self->stream_status_ = static_cast<int>(self->parser_->get().result_int());
            if (self->DeliverBody(/*head=*/true)) self->ReadStreamBody();
          });
    });
  }

  void ReadStreamBody() {
    if (parser_->is_done()) return OnResponse();
    OnStream([&](auto& stream) {
      http::async_read_some(stream, buffer_, *parser_,
                            [self = shared_from_this()](ErrorCode e, std::size_t) {
                              if (e) return self->OnIoError(e, true);
                              if (self->DeliverBody(/*head=*/false)) self->ReadStreamBody();
                            });
    });
  }

  // Hands the body parsed so far to on_body and forgets it. False when the
  // fetch ended here (the caller stopped it, or Close() ran inside).
  bool DeliverBody(bool head) {
    std::string& body = parser_->get().body();
    if (!head && body.empty()) return true;  // a read that brought framing only
    const bool go_on = sent_->on_body(stream_status_, body);
    body.clear();
    if (!go_on) {
      Fail(Status(StatusCode::kUnavailable, what_ + "stopped by the caller"), false);
      return false;
    }
    if (!socket_.is_open()) {  // Close() ran inside: no read is pending to report it
      Fail(asio::error::operation_aborted);
      return false;
    }
    return true;
  }

  void OnIoError(ErrorCode e, bool got_some) {
    // A kept-alive connection the server closed while it sat idle fails
    // before any response byte: the request was never processed. Only a
    // GET or HEAD is sent again, as anything else may have been acted on.
    const bool idempotent = verb_ == http::verb::get || verb_ == http::verb::head;
    if (!timed_out_ && reused_ && !retried_ && !got_some && idempotent && IsConnectionLost(e)) {
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
    r.gzip = IsGzipCoding(View(res[http::field::content_encoding]));
    if (options_.keep_headers) {
      for (const auto& field : res) {
        r.headers.emplace_back(AsciiLower(View(field.name_string())),
                               std::string(View(field.value())));
      }
    }
    r.body = std::move(res.body());  // empty when streamed
    if (!res.keep_alive()) CancelIo();
    Finish(std::move(r));
  }

  // Why the fetch failed, in the words of options_.wording (see Wording).
  Status Describe(ErrorCode e) {
    const bool client = options_.wording == Wording::kClient;
    if (timed_out_) {
      const std::string after = "timed out after " + std::to_string(timeout_.count()) + " ms";
      if (client && phase_ == Phase::kConnect) {
        return Status(StatusCode::kUnavailable, what_ + "connect: " + after);
      }
      return Status(StatusCode::kUnavailable, what_ + after + " (" + PhaseName(phase_) + ")");
    }
    if (e == http::error::body_limit) {
      return Status(StatusCode::kOutOfRange, what_ +
                                                 (client ? "response body over " : "body over ") +
                                                 std::to_string(sent_->body_limit) + " bytes");
    }
    if (e == asio::error::operation_aborted) {
      return Status(StatusCode::kUnavailable, what_ + "cancelled");
    }
    if (e.category() == http::make_error_code(http::error::bad_target).category() &&
        !IsConnectionLost(e)) {
      return Status(StatusCode::kParseError, what_ + "bad HTTP response: " + e.message());
    }
    if (phase_ == Phase::kResolve && client) {
      return Status(StatusCode::kUnavailable, what_ + "cannot resolve host: " + e.message());
    }
    const bool broke = phase_ == Phase::kSend || phase_ == Phase::kReceive;
    const StatusCode code = client && broke ? StatusCode::kIoError : StatusCode::kUnavailable;
    const bool tls_phase = tls_ && (broke || phase_ == Phase::kHandshake);
    const std::string why = tls_phase ? DescribeTlsError(e, tls_->native_handle()) : e.message();
    return Status(code, what_ + PhaseName(phase_) + ": " + why);
  }

  void Fail(ErrorCode e) { Fail(Describe(e), timed_out_); }

  void Fail(Status error, bool timed_out) {
    CancelIo();
    FetchResult r;
    r.error = std::move(error);
    r.timed_out = timed_out;
    r.status = stream_status_;  // a stream's head may have come
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
  const std::string authority_;
  const Options options_;
  tcp::resolver resolver_;
  tcp::socket socket_;
  // The TLS session over socket_ (Options::tls), one per TCP connection.
  std::optional<asio::ssl::stream<tcp::socket&>> tls_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::shared_ptr<const ClientRequest> sent_;   // what the message below holds
  http::request<http::empty_body> bodiless_;    // sent_ when it has no body
  http::request<http::string_body> with_body_;  // sent_ when it has one
  http::verb verb_ = http::verb::get;           // sent_'s method
  std::string what_;                            // "GET http://127.0.0.1:9400/metrics: ", for errors
  std::optional<http::response_parser<http::string_body>> parser_;
  Done done_;
  std::uint64_t seq_ = 0;  // which fetch the timer belongs to
  SteadyClock::time_point start_;
  std::chrono::milliseconds timeout_{0};
  Phase phase_ = Phase::kConnect;
  int stream_status_ = 0;  // a streamed response's status, once its head came
  bool timed_out_ = false;
  bool reused_ = false;
  bool retried_ = false;
  int connects_ = 0;
};

}  // namespace

std::shared_ptr<AsyncConnection> AsyncConnection::Create(asio::io_context& ioc, std::string host,
                                                         std::uint16_t port, Options options) {
  return std::make_shared<AsioConnection>(ioc, std::move(host), port, std::move(options));
}

}  // namespace gpucanary::net
