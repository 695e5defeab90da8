#include "net/http_client.h"

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "net/async_connection.h"
#include "net/gzip.h"
#include "net/tls_context.h"
#include "net/url.h"

namespace gpucanary::net {
namespace {

constexpr std::string_view kUserAgent = "gpucanary/0.1";

// The request FetchOptions describe, as net::AsyncConnection sends it.
ClientRequest ToClientRequest(std::string_view target, const FetchOptions& options,
                              std::string_view url, bool close) {
  ClientRequest req;
  req.method = options.method;
  req.target = std::string(target);
  req.headers.emplace_back("User-Agent", kUserAgent);
  if (options.accept_gzip) req.headers.emplace_back("Accept-Encoding", "gzip");
  if (!options.content_type.empty()) req.headers.emplace_back("Content-Type", options.content_type);
  req.headers.insert(req.headers.end(), options.headers.begin(), options.headers.end());
  req.body = options.body;
  req.keep_alive = !close;
  req.url = std::string(url);
  req.body_limit = options.max_body_bytes;
  return req;
}

}  // namespace

// One net::AsyncConnection on a private io_context that the calling thread
// runs until the fetch is done.
class HttpConnection::Impl {
 public:
  Impl(std::string host, std::uint16_t port, std::optional<TlsClientOptions> tls)
      : host_(std::move(host)),
        port_(port),
        authority_(HostPort(host_, port_)),
        tls_options_(std::move(tls)) {}

  // `url` names the request in error messages; `close` asks the server to
  // close the connection after the response (a one-shot Fetch).
  Result<HttpResponse> Request(std::string_view target, const FetchOptions& options,
                               std::string_view url, bool close);
  int connects() const { return connection_ ? connection_->connects() : 0; }
  std::string Url(std::string_view target) const {
    return (tls_options_ ? "https://" : "http://") + authority_ + std::string(target);
  }
  void Close() {
    if (connection_) connection_->Close();
  }

 private:
  std::string host_;
  std::uint16_t port_;
  std::string authority_;
  std::optional<TlsClientOptions> tls_options_;  // set: https
  boost::asio::io_context ioc_{1};
  // Made on the first request, so that an unused HttpConnection holds no
  // descriptors; declared after ioc_, which must outlive it.
  std::shared_ptr<AsyncConnection> connection_;
};

Result<HttpResponse> HttpConnection::Impl::Request(std::string_view target,
                                                   const FetchOptions& options,
                                                   std::string_view url, bool close) {
  const std::string what = options.method + " " + std::string(url);
  if (options.timeout_ms < 1) return Error(StatusCode::kInvalidArgument, what + ": timeout_ms < 1");
  if (options.method.empty() || target.empty() || target[0] != '/') {
    return Error(StatusCode::kInvalidArgument, what + ": bad method or target");
  }
  if (!connection_) {
    AsyncConnection::Options async;
    async.wording = AsyncConnection::Wording::kClient;
    async.blocking_lookup = true;
    async.keep_headers = true;
    if (tls_options_) {
      auto tls = NewClientTls(*tls_options_);
      if (!tls) return Error(tls.error().WithPrefix(what));
      async.tls = std::move(*tls);
    }
    connection_ = AsyncConnection::Create(ioc_, host_, port_, async);
  }
  std::optional<FetchResult> result;
  connection_->Fetch(
      std::make_shared<const ClientRequest>(ToClientRequest(target, options, url, close)),
      std::chrono::milliseconds(options.timeout_ms),
      [&result](FetchResult r) { result = std::move(r); });
  ioc_.restart();
  ioc_.run();
  GC_CHECK(result.has_value(), "HttpConnection: the fetch did not complete");
  if (!result->error.ok()) return Error(std::move(result->error));
  HttpResponse out;
  out.status = result->status;
  out.headers = std::move(result->headers);
  out.content_type = std::move(result->content_type);
  out.body = std::move(result->body);
  // A HEAD, 204 or 304 response has no body to decode, whatever it is encoded with.
  if (!out.body.empty() && IsGzipCoding(out.Header("content-encoding"))) {
    auto decoded = GzipDecompress(out.body, options.max_body_bytes);
    if (!decoded) {
      connection_->Close();  // as after any failed request
      return Error(decoded.error().WithPrefix(what));
    }
    out.body = std::move(*decoded);
  }
  return out;
}

HttpConnection::HttpConnection(std::string host, std::uint16_t port)
    : impl_(std::make_unique<Impl>(std::move(host), port, std::nullopt)) {}
HttpConnection::HttpConnection(std::string host, std::uint16_t port, TlsClientOptions tls)
    : impl_(std::make_unique<Impl>(std::move(host), port, std::move(tls))) {}
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
  std::optional<TlsClientOptions> tls;
  if (parsed->https) tls = options.tls;
  HttpConnection::Impl connection(parsed->host, parsed->port, std::move(tls));
  return connection.Request(parsed->target, options, url, true);
}

}  // namespace gpucanary::net
