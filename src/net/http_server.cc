#include "net/http_server.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <exception>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "net/gzip.h"

namespace gpucanary::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

// Header blocks larger than this get 431 (Beast's default is 8 KiB; Prometheus
// and curl send a few hundred bytes).
constexpr std::uint32_t kHeaderLimit = 64 * 1024;
// Bytes asked of the socket when waiting for the first byte of a request.
constexpr std::size_t kFirstReadBytes = 4096;
// After an error response, how long to read and discard what the client is
// still sending before closing, so that closing with unread data (which makes
// the kernel send a reset) does not destroy the response before it is read.
constexpr std::chrono::seconds kLingerTime{2};
// How long a listener waits before accepting again after accept failed
// (EMFILE: out of file descriptors), instead of spinning.
constexpr std::chrono::milliseconds kAcceptRetry{100};

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }
beast::string_view BeastView(std::string_view s) { return {s.data(), s.size()}; }

double ThreadCpuSeconds(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// RFC 9110 §5.6.2: token = 1*tchar.
bool IsToken(std::string_view s) {
  constexpr std::string_view kSpecial = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           kSpecial.find(c) != std::string_view::npos;
  });
}

bool IsFieldValue(std::string_view s) {
  return std::none_of(s.begin(), s.end(),
                      [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

// Header names the server sets itself; a handler's values for them are ignored.
bool IsManagedHeader(std::string_view name) {
  return EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding") ||
         EqualsIgnoreCase(name, "connection");
}

std::string HostPort(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

HttpRequest ToHttpRequest(http::request<http::string_body>&& req) {
  HttpRequest out;
  out.method = std::string(View(req.method_string()));
  out.target = std::string(View(req.target()));
  const std::size_t q = out.target.find('?');
  out.path = out.target.substr(0, q);
  if (q != std::string::npos) out.query = out.target.substr(q + 1);
  out.version = static_cast<int>(req.version());
  out.headers.reserve(static_cast<std::size_t>(std::distance(req.begin(), req.end())));
  for (const auto& field : req) {
    out.headers.emplace_back(AsciiLower(View(field.name_string())),
                             std::string(View(field.value())));
  }
  out.body = std::move(req.body());
  return out;
}

HttpResponse InternalError() {
  HttpResponse r;
  r.status = 500;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "internal server error\n";
  return r;
}

// What a handler's response may not contain: a status that is not a final
// one we can send, or headers that would break the framing (CR/LF injection).
bool IsSendable(const HttpResponse& r) {
  if (r.status < 200 || r.status > 599 || !IsFieldValue(r.content_type)) return false;
  return std::all_of(r.headers.begin(), r.headers.end(),
                     [](const auto& h) { return IsToken(h.first) && IsFieldValue(h.second); });
}

// The wire response for `response`, a reply to `request` (RFC 9110 §6.4.1:
// no body for 204 and 304; §9.3.2: HEAD gets GET's headers without the body).
http::response<http::string_body> BuildResponse(const HttpRequest& request, HttpResponse&& response,
                                                bool keep_alive,
                                                const HttpServer::Options& options) {
  if (!IsSendable(response)) response = InternalError();
  http::response<http::string_body> res;
  res.version(request.version == 10 ? 10 : 11);
  res.result(static_cast<unsigned>(response.status));
  if (!response.content_type.empty()) {
    res.set(http::field::content_type, BeastView(response.content_type));
  }
  bool encoded = false;
  for (const auto& [name, value] : response.headers) {
    if (IsManagedHeader(name)) continue;
    encoded = encoded || EqualsIgnoreCase(name, "content-encoding");
    res.insert(BeastView(name), BeastView(value));
  }
  const bool no_body = response.status == 204 || response.status == 304;
  if (no_body) response.body.clear();
  if (!encoded && !no_body && response.body.size() >= options.gzip_min_bytes) {
    res.set(http::field::vary, "Accept-Encoding");
    if (AcceptsGzip(request.Header("accept-encoding"))) {
      if (auto gz = GzipCompress(response.body, options.gzip_level)) {
        response.body = std::move(*gz);
        res.set(http::field::content_encoding, "gzip");
      }
    }
  }
  if (!no_body) res.content_length(response.body.size());
  if (request.method != "HEAD") res.body() = std::move(response.body);
  res.keep_alive(keep_alive);
  return res;
}

// What sessions share with the server that owns them, which outlives them.
struct ServerCore {
  explicit ServerCore(const HttpServer::Options& o) : options(o) {}
  const HttpServer::Options options;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> open{0};
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> handler_exceptions{0};
};

// One connection: read a request, call the handler, write the response, and
// again while keep-alive holds. Lives as long as an operation is pending on
// it (each holds a shared_ptr); its operations run on its own strand, so it
// needs no lock even with several io threads.
class Session : public std::enable_shared_from_this<Session> {
 public:
  // `handler` belongs to the listener, which is destroyed only after the io
  // threads have stopped, so it is never called after it is gone.
  Session(ServerCore& core, const Handler& handler, tcp::socket&& socket)
      : core_(core), handler_(handler), stream_(std::move(socket)) {
    core_.accepted.fetch_add(1, std::memory_order_relaxed);
    core_.open.fetch_add(1, std::memory_order_relaxed);
  }
  ~Session() { core_.open.fetch_sub(1, std::memory_order_relaxed); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->AwaitRequest(); });
  }

 private:
  using Seconds = std::chrono::seconds;

  void AwaitRequest() {
    parser_.emplace();
    parser_->body_limit(core_.options.max_body_bytes);
    parser_->header_limit(kHeaderLimit);
    if (buffer_.size() > 0) {  // pipelined: the next request has begun
      ReadHeader();
      return;
    }
    // The idle timeout covers the wait for the first byte; the read timeout
    // the rest, so a client trickling a request cannot hold the connection
    // for the (long) idle time.
    stream_.expires_after(Seconds(core_.options.idle_timeout_s));
    stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                            [self = shared_from_this()](ErrorCode ec, std::size_t n) {
                              if (ec) return self->Close();
                              self->buffer_.commit(n);
                              self->ReadHeader();
                            });
  }

  void ReadHeader() {
    stream_.expires_after(Seconds(core_.options.read_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](ErrorCode ec, std::size_t) {
                              if (ec) return self->OnReadError(ec);
                              self->OnHeader();
                            });
  }

  // RFC 9110 §10.1.1: a client that sent "Expect: 100-continue" may wait for
  // the interim response before sending the body (curl does, for 1 s).
  void OnHeader() {
    const auto& req = parser_->get();
    if (!parser_->is_done() && req.version() >= 11 &&
        EqualsIgnoreCase(View(req[http::field::expect]), "100-continue")) {
      asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                        [self = shared_from_this()](ErrorCode ec, std::size_t) {
                          if (ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](ErrorCode ec, std::size_t) {
                       if (ec) return self->OnReadError(ec);
                       self->Respond();
                     });
  }

  void OnReadError(ErrorCode ec) {
    if (ec == http::error::body_limit) return SendError(413, "request body too large\n");
    if (ec == http::error::header_limit) return SendError(431, "request header too large\n");
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec.category() != http::make_error_code(http::error::bad_target).category()) {
      return Close();  // the client went away or timed out: nobody to answer
    }
    SendError(400, "bad request\n");
  }

  void Respond() {
    const bool keep_alive = parser_->get().keep_alive();
    const HttpRequest request = ToHttpRequest(parser_->release());
    parser_.reset();
    HttpResponse response;
    bool threw = false;
    try {
      handler_(request, response);
    } catch (...) {  // any exception: the server must outlive a broken handler
      threw = true;
      response = InternalError();
    }
    core_.requests.fetch_add(1, std::memory_order_relaxed);
    if (threw) core_.handler_exceptions.fetch_add(1, std::memory_order_relaxed);
    res_ =
        BuildResponse(request, std::move(response),
                      keep_alive && !core_.stopping.load(std::memory_order_relaxed), core_.options);
    stream_.expires_after(Seconds(core_.options.write_timeout_s));
    http::async_write(stream_, res_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
      if (ec) return self->Close();
      if (self->res_.need_eof()) return self->ShutdownAndClose();
      self->res_ = {};
      self->AwaitRequest();
    });
  }

  // An error response, then the connection is closed: after a bad request we
  // cannot know where the next one would begin.
  void SendError(int status, std::string text) {
    HttpRequest request;
    if (parser_ && parser_->is_header_done()) {
      request.version = static_cast<int>(parser_->get().version());
      request.method = std::string(View(parser_->get().method_string()));
    }
    HttpResponse response;
    response.status = status;
    response.content_type = "text/plain; charset=utf-8";
    response.body = std::move(text);
    res_ = BuildResponse(request, std::move(response), false, core_.options);
    stream_.expires_after(Seconds(core_.options.write_timeout_s));
    http::async_write(stream_, res_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
      if (ec) return self->Close();
      self->ShutdownAndClose();
    });
  }

  // Sends FIN, then reads and discards until the client closes too or
  // kLingerTime passes (a lingering close, as nginx does).
  void ShutdownAndClose() {
    ErrorCode ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    buffer_.clear();
    Drain();
  }

  void Drain() {
    stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                            [self = shared_from_this()](ErrorCode ec, std::size_t) {
                              if (ec) return self->Close();
                              self->Drain();
                            });
  }

  void Close() { stream_.close(); }

  ServerCore& core_;
  const Handler& handler_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;  // alive until written
};

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(const Options& options)
      : core_(options), ioc_(std::make_unique<asio::io_context>(options.threads)) {}
  ~Impl() { Stop(); }

  Result<std::uint16_t> Listen(const std::string& host, std::uint16_t port, Handler handler);
  Status Start();
  void Stop();
  Stats stats() const;

 private:
  struct Listener {
    Listener(asio::io_context& ioc, Handler h) : acceptor(ioc), retry(ioc), handler(std::move(h)) {}
    tcp::acceptor acceptor;
    asio::steady_timer retry;
    const Handler handler;  // shared by the listener's sessions, which it outlives
  };

  Status Validate() const;
  void Accept(Listener* listener);
  void RunIoThread();

  bool stopping() const { return core_.stopping.load(std::memory_order_relaxed); }

  ServerCore core_;
  std::atomic<double> finished_threads_cpu_{0};

  // Serialises Listen, Start, Stop and stats; guards what follows but ioc_, which the io
  // threads read without it (Stop resets it under mu_ only after joining them).
  mutable Mutex mu_;
  bool started_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  // Destroyed in Stop, after the listeners: destroying it destroys the
  // handlers of pending operations, and with them the sessions and sockets.
  std::unique_ptr<asio::io_context> ioc_;
  std::vector<std::unique_ptr<Listener>> listeners_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  std::vector<pthread_t> thread_handles_ GUARDED_BY(mu_);  // for their CPU clocks
};

Status HttpServer::Impl::Validate() const {
  const Options& o = core_.options;
  if (o.threads < 1 || o.threads > 256) {
    return Error(StatusCode::kInvalidArgument, "HttpServer: threads must be 1..256");
  }
  if (o.idle_timeout_s < 1 || o.read_timeout_s < 1 || o.write_timeout_s < 1) {
    return Error(StatusCode::kInvalidArgument, "HttpServer: timeouts must be at least 1 s");
  }
  if (o.gzip_level < 1 || o.gzip_level > 9) {
    return Error(StatusCode::kInvalidArgument, "HttpServer: gzip_level must be 1..9");
  }
  return Status::Ok();
}

Result<std::uint16_t> HttpServer::Impl::Listen(const std::string& host, std::uint16_t port,
                                               Handler handler) {
  const std::string where = "listen " + HostPort(host, port);
  MutexLock lock(mu_);
  if (stopped_) return Error(StatusCode::kUnavailable, where + ": server stopped");
  GC_RETURN_IF_ERROR(Validate());
  if (!handler) return Error(StatusCode::kInvalidArgument, where + ": empty handler");

  ErrorCode ec;
  tcp::endpoint endpoint(asio::ip::make_address(host, ec), port);
  if (ec) {  // not an address literal: resolve it
    tcp::resolver resolver(*ioc_);
    const auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      return Error(StatusCode::kIoError, where + ": cannot resolve host: " + ec.message());
    }
    endpoint = results.begin()->endpoint();
  }
  auto listener = std::make_unique<Listener>(*ioc_, std::move(handler));
  tcp::acceptor& acceptor = listener->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error(StatusCode::kIoError, where + ": " + ec.message());
  const std::uint16_t bound = acceptor.local_endpoint(ec).port();
  if (ec) return Error(StatusCode::kIoError, where + ": " + ec.message());
  Accept(listener.get());
  listeners_.push_back(std::move(listener));
  return bound;
}

void HttpServer::Impl::Accept(Listener* listener) {
  // Each connection gets its own strand (Beast's advanced server does the
  // same): its timer and its I/O then never run at once on two threads.
  listener->acceptor.async_accept(
      asio::make_strand(*ioc_), [this, listener](ErrorCode ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || stopping()) return;
        if (ec) {  // EMFILE, ENFILE, ENOBUFS: wait instead of spinning
          listener->retry.expires_after(kAcceptRetry);
          listener->retry.async_wait([this, listener](ErrorCode wait_ec) {
            if (!wait_ec && !stopping()) Accept(listener);
          });
          return;
        }
        ErrorCode ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::make_shared<Session>(core_, listener->handler, std::move(socket))->Run();
        Accept(listener);
      });
}

Status HttpServer::Impl::Start() {
  MutexLock lock(mu_);
  if (stopped_) return Error(StatusCode::kUnavailable, "HttpServer::Start: server stopped");
  if (started_) return Error(StatusCode::kInvalidArgument, "HttpServer::Start called twice");
  GC_RETURN_IF_ERROR(Validate());
  started_ = true;
  for (int i = 0; i < core_.options.threads; ++i) {
    threads_.emplace_back([this] { RunIoThread(); });
    thread_handles_.push_back(threads_.back().native_handle());
  }
  return Status::Ok();
}

void HttpServer::Impl::RunIoThread() {
  // Keeps run() from returning while there is nothing to do (no listener yet).
  auto work = asio::make_work_guard(*ioc_);
  while (true) {
    try {
      ioc_->run();
      break;
    } catch (const std::exception&) {
      // Only allocation failures can get here (handlers' exceptions are
      // caught); the session that threw is gone, the others go on.
    }
  }
  finished_threads_cpu_.fetch_add(ThreadCpuSeconds(CLOCK_THREAD_CPUTIME_ID));
}

void HttpServer::Impl::Stop() {
  MutexLock lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  core_.stopping.store(true);
  for (const std::thread& t : threads_) {
    GC_CHECK(t.get_id() != std::this_thread::get_id(), "HttpServer::Stop called from a handler");
  }
  ioc_->stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  thread_handles_.clear();
  listeners_.clear();
  ioc_.reset();
}

HttpServer::Stats HttpServer::Impl::stats() const {
  Stats s;
  s.connections_accepted = core_.accepted.load(std::memory_order_relaxed);
  s.open_connections = core_.open.load(std::memory_order_relaxed);
  s.requests = core_.requests.load(std::memory_order_relaxed);
  s.handler_exceptions = core_.handler_exceptions.load(std::memory_order_relaxed);
  MutexLock lock(mu_);
  s.io_cpu_seconds = finished_threads_cpu_.load();
  for (const pthread_t handle : thread_handles_) {
    clockid_t clock{};
    if (pthread_getcpuclockid(handle, &clock) == 0) {
      s.io_cpu_seconds += ThreadCpuSeconds(clock);
    }
  }
  return s;
}

HttpServer::HttpServer(Options options) : impl_(std::make_unique<Impl>(options)) {}
HttpServer::~HttpServer() = default;

Result<std::uint16_t> HttpServer::Listen(const std::string& host, std::uint16_t port,
                                         Handler handler) {
  return impl_->Listen(host, port, std::move(handler));
}
Status HttpServer::Start() { return impl_->Start(); }
void HttpServer::Stop() { impl_->Stop(); }
HttpServer::Stats HttpServer::stats() const { return impl_->stats(); }

}  // namespace gpucanary::net
