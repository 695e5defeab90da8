#include "net/http_server.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "net/gzip.h"
#include "net/tls_context.h"

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

// An error the server answers itself, closing the connection.
struct Refusal {
  int status;
  std::string text;
};

// The elements of a comma-separated header list (RFC 9110 §5.6.1), without
// the optional whitespace around them; empty elements are dropped, as a
// recipient must accept them.
void SplitList(std::string_view value, std::vector<std::string_view>& out) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view element = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    while (!element.empty() && (element.front() == ' ' || element.front() == '\t')) {
      element.remove_prefix(1);
    }
    while (!element.empty() && (element.back() == ' ' || element.back() == '\t')) {
      element.remove_suffix(1);
    }
    if (!element.empty()) out.push_back(element);
  }
}

// The request's framing, as RFC 9112 requires of a server
// (https://www.rfc-editor.org/rfc/rfc9112#section-6):
// §6.1 "A server or client that receives an HTTP/1.0 message containing a
//   Transfer-Encoding header field MUST treat the message as if the framing
//   is faulty, even if a Content-Length is present, and close the
//   connection after processing the message."
// §6.3 (3) "If a message is received with both a Transfer-Encoding and a
//   Content-Length header field, [...] Such a message might indicate an
//   attempt to perform request smuggling [...] and ought to be handled as an
//   error."
// §6.3 (4) "If a Transfer-Encoding header field is present in a request and
//   the chunked transfer coding is not the final encoding, the message body
//   length cannot be determined reliably; the server MUST respond with the
//   400 (Bad Request) status code and then close the connection."
// §6.1 "A sender MUST NOT apply the chunked transfer coding more than once"
//   and "A server that receives a request message with a transfer coding it
//   does not understand SHOULD respond with 501 (Not Implemented)."
// Chunked is the only coding implemented. `parser_chunked`: whether Beast's
// parser reads the body as chunked; a request both do not agree on is
// refused, so that the two can never frame it differently.
std::optional<Refusal> CheckFraming(const http::request<http::string_body>& req,
                                    bool parser_chunked) {
  const auto [begin, end] = req.equal_range(http::field::transfer_encoding);
  if (begin == end) return std::nullopt;
  if (req.version() < 11) return Refusal{400, "bad request: Transfer-Encoding in HTTP/1.0\n"};
  if (req.count(http::field::content_length) > 0) {
    return Refusal{400, "bad request: both Transfer-Encoding and Content-Length\n"};
  }
  std::vector<std::string_view> codings;
  for (auto it = begin; it != end; ++it) SplitList(View(it->value()), codings);
  if (codings.empty() || !EqualsIgnoreCase(codings.back(), "chunked") || !parser_chunked) {
    return Refusal{400, "bad request: Transfer-Encoding must end with chunked\n"};
  }
  codings.pop_back();
  for (std::string_view coding : codings) {
    if (EqualsIgnoreCase(coding, "chunked")) {
      return Refusal{400, "bad request: chunked applied more than once\n"};
    }
  }
  if (!codings.empty()) {
    return Refusal{501, "transfer coding not implemented: " + std::string(codings.front()) + "\n"};
  }
  return std::nullopt;
}

// The whole response to a connection refused over a limit: sent at once,
// before anything is read, so always HTTP/1.1.
std::string RefusalBytes(int status) {
  const bool client = status == 429;
  const std::string body = client ? "too many connections from your address\n"
                                  : "too many connections; try again later\n";
  return std::string("HTTP/1.1 ") + (client ? "429 Too Many Requests" : "503 Service Unavailable") +
         "\r\nRetry-After: 1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

// Writes what fits of RefusalBytes(status) without waiting (the send buffer
// of a new connection holds it) and closes.
void Refuse(tcp::socket& socket, int status) {
  static const std::string k429 = RefusalBytes(429);
  static const std::string k503 = RefusalBytes(503);
  const std::string& bytes = status == 429 ? k429 : k503;
  ErrorCode ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(bytes), ignored);
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  // Closing with unread bytes would send a reset, which can destroy the
  // answer before the client reads it: discard what has come (a request sent
  // with the connection), without waiting for more.
  char discard[4096];
  for (int i = 0; i < 16; ++i) {
    ErrorCode ec;
    if (socket.read_some(asio::buffer(discard), ec) == 0 || ec) break;
  }
  socket.close(ignored);
}

// The client a connection counts against: its IP address, an IPv4 one
// mapped into IPv6 ("::ffff:10.0.0.1") as IPv4.
asio::ip::address ClientOf(const tcp::socket& socket) {
  ErrorCode ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) return {};
  asio::ip::address a = remote.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  }
  return a;
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

  enum class Admission { kAdmitted, kClientFull, kServerFull };
  // Counts a new connection from `client` against the limits, unless one is
  // reached. Every kAdmitted is matched by one Release.
  Admission Admit(const asio::ip::address& client) {
    MutexLock lock(limits_mu);
    const std::size_t per_client = options.max_connections_per_client;
    if (per_client > 0) {
      auto it = per_client_open.find(client);
      if (it != per_client_open.end() && it->second >= per_client) return Admission::kClientFull;
    }
    if (options.max_connections > 0 && limited_open >= options.max_connections) {
      return Admission::kServerFull;
    }
    if (per_client > 0) ++per_client_open[client];
    ++limited_open;
    return Admission::kAdmitted;
  }
  void Release(const asio::ip::address& client) {
    MutexLock lock(limits_mu);
    --limited_open;
    if (options.max_connections_per_client == 0) return;
    auto it = per_client_open.find(client);
    if (it != per_client_open.end() && --it->second == 0) per_client_open.erase(it);
  }

  const HttpServer::Options options;
  // Where handlers run when Options::handler_threads > 0; else null (on the
  // io threads). Set before the first connection, never changed.
  asio::io_context* handler_ioc = nullptr;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::uint64_t> open{0};
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> handler_exceptions{0};
  std::atomic<std::uint64_t> tls_handshake_failures{0};

  Mutex limits_mu;
  std::size_t limited_open GUARDED_BY(limits_mu) = 0;
  // Only the clients with a connection open: a client's entry goes with its
  // last connection, so the map holds at most limited_open entries.
  std::unordered_map<asio::ip::address, std::size_t> per_client_open GUARDED_BY(limits_mu);
};

// Runs `fn` (a handler), which fills `response`; an exception becomes a 500
// in `response`. Returns whether it threw.
template <typename Fn>
bool CallGuarded(HttpResponse& response, Fn&& fn) {
  try {
    fn();
    return false;
  } catch (...) {  // any exception: the server must outlive a broken handler
    response = InternalError();
    return true;
  }
}

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection: read a request, call the handler, write the response, and
// again while keep-alive holds. Lives as long as an operation is pending on
// it (each holds a shared_ptr); its operations run on its own strand, so it
// needs no lock even with several io threads. `Stream` is PlainStream or
// TlsStream (HTTPS: a handshake first, then the same exchange over TLS).
template <typename Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  // `handler` and `fast` belong to the listener, which is destroyed only
  // after the io and handler threads have stopped, so they are never called
  // after they are gone. `tls`: the listener's context when the session
  // began (HTTPS only; held, as a reload may replace the listener's).
  // REQUIRES: `client` admitted by core.Admit.
  Session(ServerCore& core, const Handler& handler, const FastHandler& fast, tcp::socket&& socket,
          const asio::ip::address& client, std::shared_ptr<asio::ssl::context> tls = nullptr)
      : core_(core),
        handler_(handler),
        fast_(fast),
        tls_(std::move(tls)),
        stream_(MakeStream(std::move(socket), tls_.get())),
        client_(client) {
    core_.accepted.fetch_add(1, std::memory_order_relaxed);
    core_.open.fetch_add(1, std::memory_order_relaxed);
  }
  ~Session() {
    core_.open.fetch_sub(1, std::memory_order_relaxed);
    core_.Release(client_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->Handshake();
      } else {
        self->AwaitRequest();
      }
    });
  }

 private:
  using Seconds = std::chrono::seconds;
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;

  static Stream MakeStream(tcp::socket&& socket, asio::ssl::context* tls) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *tls);
    } else {
      return Stream(std::move(socket));
    }
  }

  beast::tcp_stream& Tcp() { return beast::get_lowest_layer(stream_); }

  // Within the read timeout, as a request must arrive: a client that
  // connects and stays silent holds the connection no longer. A client
  // speaking plain HTTP, or refusing our certificate, fails here and is
  // closed (there is no way to answer it in HTTP).
  void Handshake() {
    Tcp().expires_after(Seconds(core_.options.read_timeout_s));
    stream_.async_handshake(
        asio::ssl::stream_base::server, [self = shared_from_this()](ErrorCode ec) {
          if (ec) {
            self->core_.tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
            return self->Close();
          }
          self->AwaitRequest();
        });
  }

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
    Tcp().expires_after(Seconds(core_.options.idle_timeout_s));
    stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                            [self = shared_from_this()](ErrorCode ec, std::size_t n) {
                              if (ec) return self->Close();
                              self->buffer_.commit(n);
                              self->ReadHeader();
                            });
  }

  void ReadHeader() {
    Tcp().expires_after(Seconds(core_.options.read_timeout_s));
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
    if (auto refusal = CheckFraming(req, parser_->chunked())) {
      return SendError(refusal->status, std::move(refusal->text));
    }
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

  // The fast handler first, on this (io) thread; then the handler, here or
  // on a handler thread. The reading of this connection waits meanwhile
  // (requests on one connection are answered in order).
  void Respond() {
    const bool keep_alive = parser_->get().keep_alive();
    HttpRequest request = ToHttpRequest(parser_->release());
    parser_.reset();
    if (fast_) {
      HttpResponse response;
      bool answered = false;
      const bool threw = CallGuarded(response, [&] { answered = fast_(request, response); });
      if (answered || threw) {
        return Write(Answer(request, std::move(response), keep_alive, threw));
      }
    }
    if (core_.handler_ioc == nullptr) return Write(Handle(request, keep_alive));
    asio::post(
        *core_.handler_ioc, [self = shared_from_this(), request = std::move(request), keep_alive] {
          // Built here, gzip included, so that a large answer costs the handler
          // thread, not the io thread.
          auto res = self->Handle(request, keep_alive);
          asio::post(self->stream_.get_executor(),
                     [self, res = std::move(res)]() mutable { self->Write(std::move(res)); });
        });
  }

  // Calls the handler; thread-safe (touches nothing of the session's state).
  http::response<http::string_body> Handle(const HttpRequest& request, bool keep_alive) const {
    HttpResponse response;
    const bool threw = CallGuarded(response, [&] { handler_(request, response); });
    return Answer(request, std::move(response), keep_alive, threw);
  }

  // The wire response for what a handler answered, counted; thread-safe.
  http::response<http::string_body> Answer(const HttpRequest& request, HttpResponse&& response,
                                           bool keep_alive, bool threw) const {
    core_.requests.fetch_add(1, std::memory_order_relaxed);
    if (threw) core_.handler_exceptions.fetch_add(1, std::memory_order_relaxed);
    return BuildResponse(request, std::move(response),
                         keep_alive && !core_.stopping.load(std::memory_order_relaxed),
                         core_.options);
  }

  void Write(http::response<http::string_body>&& res) {
    res_ = std::move(res);
    Tcp().expires_after(Seconds(core_.options.write_timeout_s));
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
    Tcp().expires_after(Seconds(core_.options.write_timeout_s));
    http::async_write(stream_, res_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
      if (ec) return self->Close();
      self->ShutdownAndClose();
    });
  }

  // Sends FIN, then reads and discards until the client closes too or
  // kLingerTime passes (a lingering close, as nginx does).
  void ShutdownAndClose() {
    if constexpr (kTls) {
      // TLS's own close (close_notify), waiting for the client's as long as
      // a lingering close would.
      Tcp().expires_after(kLingerTime);
      stream_.async_shutdown([self = shared_from_this()](ErrorCode) { self->Close(); });
      return;
    }
    ErrorCode ignored;
    Tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
    Tcp().expires_after(kLingerTime);
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

  void Close() { Tcp().close(); }

  ServerCore& core_;
  const Handler& handler_;
  const FastHandler& fast_;
  const std::shared_ptr<asio::ssl::context> tls_;  // alive while stream_ uses it
  Stream stream_;
  const asio::ip::address client_;  // what it counts against in core_'s limits
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;  // alive until written
};

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(const Options& options)
      : core_(options), ioc_(std::make_unique<asio::io_context>(options.threads)) {
    if (options.handler_threads > 0) {
      handler_ioc_ = std::make_unique<asio::io_context>(options.handler_threads);
      core_.handler_ioc = handler_ioc_.get();
    }
  }
  ~Impl() { Stop(); }

  Result<std::uint16_t> Listen(const std::string& host, std::uint16_t port, Handler handler,
                               FastHandler fast, const TlsServerOptions* tls);
  Status Start();
  void Stop();
  Stats stats() const;

 private:
  struct Listener {
    Listener(asio::io_context& ioc, Handler h, FastHandler f)
        : acceptor(ioc), retry(ioc), handler(std::move(h)), fast(std::move(f)) {}
    tcp::acceptor acceptor;
    asio::steady_timer retry;
    // Shared by the listener's sessions, which it outlives.
    const Handler handler;
    const FastHandler fast;
    std::unique_ptr<ServerTlsContext> tls;  // HTTPS; null: plain HTTP
  };

  Status Validate() const;
  void Accept(Listener* listener);
  void RunIoThread(asio::io_context& ioc);

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
  // The handler threads' queue (Options::handler_threads > 0), destroyed in
  // Stop before ioc_: what is still queued holds sessions, whose sockets
  // belong to ioc_.
  std::unique_ptr<asio::io_context> handler_ioc_;
  std::vector<std::unique_ptr<Listener>> listeners_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  std::vector<pthread_t> thread_handles_ GUARDED_BY(mu_);  // for their CPU clocks
};

Status HttpServer::Impl::Validate() const {
  const Options& o = core_.options;
  if (o.threads < 1 || o.threads > 256) {
    return Error(StatusCode::kInvalidArgument, "HttpServer: threads must be 1..256");
  }
  if (o.handler_threads < 0 || o.handler_threads > 256) {
    return Error(StatusCode::kInvalidArgument, "HttpServer: handler_threads must be 0..256");
  }
  if (o.idle_timeout_s < 1 || o.read_timeout_s < 1 || o.write_timeout_s < 1) {
    return Error(StatusCode::kInvalidArgument, "HttpServer: timeouts must be at least 1 s");
  }
  if (o.gzip_level < 1 || o.gzip_level > 9) {
    return Error(StatusCode::kInvalidArgument, "HttpServer: gzip_level must be 1..9");
  }
  if (o.tls_check_interval_ms < 0) {
    return Error(StatusCode::kInvalidArgument, "HttpServer: tls_check_interval_ms must be >= 0");
  }
  return Status::Ok();
}

Result<std::uint16_t> HttpServer::Impl::Listen(const std::string& host, std::uint16_t port,
                                               Handler handler, FastHandler fast,
                                               const TlsServerOptions* tls) {
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
  auto listener = std::make_unique<Listener>(*ioc_, std::move(handler), std::move(fast));
  if (tls != nullptr) {
    ServerTlsContext::Log log = core_.options.log;
    if (!log) {
      log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    }
    auto context = ServerTlsContext::Create(*tls, where, std::move(log));
    if (!context) return Error(context.error());
    (*context)->set_check_interval(std::chrono::milliseconds(core_.options.tls_check_interval_ms));
    listener->tls = std::move(*context);
  }
  tcp::acceptor& acceptor = listener->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error(StatusCode::kIoError, where + ": " + ec.message());
  const std::uint16_t bound = acceptor.local_endpoint(ec).port();
  if (ec) return Error(StatusCode::kIoError, where + ": " + ec.message());
  if (listener->tls) listener->tls->set_name("listen " + HostPort(host, bound));
  Accept(listener.get());
  listeners_.push_back(std::move(listener));
  return bound;
}

void HttpServer::Impl::Accept(Listener* listener) {
  // Each connection gets its own strand (Beast's advanced server does the
  // same): its timer and its I/O then never run at once on two threads.
  listener->acceptor.async_accept(asio::make_strand(*ioc_), [this, listener](ErrorCode ec,
                                                                             tcp::socket socket) {
    if (ec == asio::error::operation_aborted || stopping()) return;
    if (ec) {  // EMFILE, ENFILE, ENOBUFS: wait instead of spinning
      listener->retry.expires_after(kAcceptRetry);
      listener->retry.async_wait([this, listener](ErrorCode wait_ec) {
        if (!wait_ec && !stopping()) Accept(listener);
      });
      return;
    }
    const asio::ip::address client = ClientOf(socket);
    switch (core_.Admit(client)) {
      case ServerCore::Admission::kAdmitted: {
        ErrorCode ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        if (listener->tls) {
          std::make_shared<Session<TlsStream>>(core_, listener->handler, listener->fast,
                                               std::move(socket), client, listener->tls->Current())
              ->Run();
        } else {
          std::make_shared<Session<PlainStream>>(core_, listener->handler, listener->fast,
                                                 std::move(socket), client)
              ->Run();
        }
        break;
      }
      case ServerCore::Admission::kClientFull:
        core_.refused.fetch_add(1, std::memory_order_relaxed);
        Refuse(socket, 429);
        break;
      case ServerCore::Admission::kServerFull:
        core_.refused.fetch_add(1, std::memory_order_relaxed);
        Refuse(socket, 503);
        break;
    }
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
    threads_.emplace_back([this] { RunIoThread(*ioc_); });
    thread_handles_.push_back(threads_.back().native_handle());
  }
  for (int i = 0; i < core_.options.handler_threads; ++i) {
    threads_.emplace_back([this] { RunIoThread(*handler_ioc_); });
    thread_handles_.push_back(threads_.back().native_handle());
  }
  return Status::Ok();
}

void HttpServer::Impl::RunIoThread(asio::io_context& ioc) {
  // Keeps run() from returning while there is nothing to do (no listener yet).
  auto work = asio::make_work_guard(ioc);
  while (true) {
    try {
      ioc.run();
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
  if (handler_ioc_) handler_ioc_->stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  thread_handles_.clear();
  // Handlers that finished posted their responses to ioc_, which is stopped:
  // destroying it drops them, with their sessions.
  handler_ioc_.reset();
  core_.handler_ioc = nullptr;
  listeners_.clear();
  ioc_.reset();
}

HttpServer::Stats HttpServer::Impl::stats() const {
  Stats s;
  s.connections_accepted = core_.accepted.load(std::memory_order_relaxed);
  s.connections_refused = core_.refused.load(std::memory_order_relaxed);
  s.open_connections = core_.open.load(std::memory_order_relaxed);
  s.requests = core_.requests.load(std::memory_order_relaxed);
  s.handler_exceptions = core_.handler_exceptions.load(std::memory_order_relaxed);
  s.tls_handshake_failures = core_.tls_handshake_failures.load(std::memory_order_relaxed);
  MutexLock lock(mu_);
  for (const auto& listener : listeners_) {
    if (!listener->tls) continue;
    s.tls_reloads += listener->tls->reloads();
    s.tls_reload_failures += listener->tls->reload_failures();
  }
  s.io_cpu_seconds = finished_threads_cpu_.load();
  for (const pthread_t handle : thread_handles_) {
    clockid_t clock{};
    if (pthread_getcpuclockid(handle, &clock) == 0) {
      s.io_cpu_seconds += ThreadCpuSeconds(clock);
    }
  }
  return s;
}

HttpServer::HttpServer(const Options& options) : impl_(std::make_unique<Impl>(options)) {}
HttpServer::~HttpServer() = default;

Result<std::uint16_t> HttpServer::Listen(const std::string& host, std::uint16_t port,
                                         Handler handler, FastHandler fast) {
  return impl_->Listen(host, port, std::move(handler), std::move(fast), nullptr);
}
Result<std::uint16_t> HttpServer::ListenTls(const std::string& host, std::uint16_t port,
                                            const TlsServerOptions& tls, Handler handler,
                                            FastHandler fast) {
  return impl_->Listen(host, port, std::move(handler), std::move(fast), &tls);
}
Status HttpServer::Start() { return impl_->Start(); }
void HttpServer::Stop() { impl_->Stop(); }
HttpServer::Stats HttpServer::stats() const { return impl_->stats(); }

}  // namespace gpucanary::net
