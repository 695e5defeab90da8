#pragma once
// OpenSSL contexts for the HTTP client and server (Debian's OpenSSL through
// Boost.Asio's ssl wrappers). Internal to src/net and src/scrape: Asio and
// OpenSSL appear here, so no header other components include may include
// this one.
//
// Both sides speak TLS 1.2 or later. A client verifies the server's chain
// against ca_file or the system store and checks its name (SNI sent with
// it); a listener's certificate files are watched and reloaded without a
// restart (ServerTlsContext).

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/mutex.h"
#include "core/status.h"
#include "net/tls_options.h"

namespace gpucanary::net {

// What a client connection needs for TLS: the context (shared by every
// connection made with the same options) and how to check the server.
struct ClientTls {
  std::shared_ptr<boost::asio::ssl::context> context;
  std::string server_name;  // "" : the connection's host
  bool verify = true;       // false: insecure_skip_verify
};

// Loads `options`' files into a new client context. Errors: kInvalidArgument
// naming the field and file ("tls_config.ca_file /etc/ca.pem: No such file
// or directory", "...: not a PEM certificate").
Result<std::shared_ptr<const ClientTls>> NewClientTls(const TlsClientOptions& options);

// Readies a client SSL object before its handshake: SNI (for a name, not an
// address: RFC 6066 §3) and, with verification on, the name or IP address
// the certificate must hold.
void PrepareClientSsl(SSL* ssl, const ClientTls& tls, const std::string& host);

// Why a handshake or TLS read/write failed: the certificate check's own
// words when that is what failed ("certificate verify failed (self-signed
// certificate)", "... (hostname mismatch)"), else OpenSSL's or the
// system's message.
std::string DescribeTlsError(const boost::system::error_code& ec, SSL* ssl);

// A new server context for `options`. Errors: kInvalidArgument naming the
// field and file.
Result<std::shared_ptr<boost::asio::ssl::context>> NewServerContext(
    const TlsServerOptions& options);

// A listener's TLS context, reloaded when its files change: Current() looks
// at the files' size, modification time and inode at most once a second
// and, when one changed, loads a new context for the connections accepted
// from then on (open ones keep theirs). A new set that fails to load (a
// half-written file, a key that does not match) keeps the old context and
// is reported once through `log`; it is tried again when the files change
// again. Thread-safe.
class ServerTlsContext {
 public:
  using Log = std::function<void(const std::string&)>;
  // Errors: NewServerContext's, prefixed with `where` ("listen 0.0.0.0:9464").
  static Result<std::unique_ptr<ServerTlsContext>> Create(TlsServerOptions options,
                                                          std::string where, Log log);

  std::shared_ptr<boost::asio::ssl::context> Current();
  std::uint64_t reloads() const;          // new contexts loaded after the first
  std::uint64_t reload_failures() const;  // changed files that failed to load

  // How often Current() looks at the files; tests shorten it.
  void set_check_interval(std::chrono::milliseconds interval);
  // What the log's lines start with ("listen 0.0.0.0:9464"): `where` until set.
  void set_name(std::string name);

 private:
  ServerTlsContext(TlsServerOptions options, Log log)
      : options_(std::move(options)), log_(std::move(log)) {}

  const TlsServerOptions options_;
  const Log log_;
  mutable Mutex mu_;
  std::string name_ GUARDED_BY(mu_);
  std::shared_ptr<boost::asio::ssl::context> current_ GUARDED_BY(mu_);
  std::string stamp_ GUARDED_BY(mu_);  // of the files last loaded or tried
  std::chrono::steady_clock::time_point next_check_ GUARDED_BY(mu_);
  std::chrono::milliseconds interval_ GUARDED_BY(mu_){1000};
  std::uint64_t reloads_ GUARDED_BY(mu_) = 0;
  std::uint64_t failures_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpucanary::net
