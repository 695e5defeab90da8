#include "net/tls_context.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>

namespace gpucanary::net {
namespace {

namespace ssl = boost::asio::ssl;
using ErrorCode = boost::system::error_code;

// OpenSSL's own message for a file it cannot use ("no such file (system
// library)") is vague; this says it first, in the system's words.
Status CheckReadable(const std::string& field, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status(
        StatusCode::kInvalidArgument,
        field + " " + path + ": " + std::error_code(errno, std::generic_category()).message());
  }
  std::fclose(f);
  return Status::Ok();
}

Status FileError(const std::string& field, const std::string& path, const ErrorCode& ec) {
  return Status(StatusCode::kInvalidArgument, field + " " + path + ": " + ec.message());
}

// TLS 1.2 is the oldest version still considered safe (RFC 8996 deprecated
// 1.0 and 1.1); compression is off against CRIME.
void Harden(ssl::context& ctx) {
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression);
}

// Loads a certificate chain and its key, checking that they belong together.
Status LoadKeyPair(ssl::context& ctx, const std::string& prefix, const std::string& cert_file,
                   const std::string& key_file) {
  const std::string cert_field = prefix + "cert_file";
  const std::string key_field = prefix + "key_file";
  if (Status s = CheckReadable(cert_field, cert_file); !s.ok()) return s;
  if (Status s = CheckReadable(key_field, key_file); !s.ok()) return s;
  ErrorCode ec;
  ctx.use_certificate_chain_file(cert_file, ec);
  if (ec) return FileError(cert_field, cert_file, ec);
  ctx.use_private_key_file(key_file, ssl::context::pem, ec);
  const bool mismatch =
      ec && ec.category() == boost::asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) ==  // NOLINT(google-runtime-int)
          X509_R_KEY_VALUES_MISMATCH;
  if (ec && !mismatch) return FileError(key_field, key_file, ec);
  if (mismatch || SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    ERR_clear_error();
    return Status(StatusCode::kInvalidArgument,
                  key_field + " " + key_file + ": does not match " + cert_field + " " + cert_file);
  }
  return Status::Ok();
}

// What identifies a file's current content cheaply: size, modification time
// (nanoseconds) and inode, "-" for a file that cannot be looked at.
std::string FileStamp(const std::string& path) {
  if (path.empty()) return "";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "-";
  return std::to_string(st.st_size) + "/" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + "/" + std::to_string(st.st_ino) + "/" +
         std::to_string(st.st_dev);
}

std::string Stamp(const TlsServerOptions& o) {
  return FileStamp(o.cert_file) + " " + FileStamp(o.key_file) + " " + FileStamp(o.client_ca_file);
}

}  // namespace

Result<std::shared_ptr<const ClientTls>> NewClientTls(const TlsClientOptions& options) {
  constexpr std::string_view kPrefix = "tls_config.";
  auto out = std::make_shared<ClientTls>();
  out->context = std::make_shared<ssl::context>(ssl::context::tls_client);
  out->server_name = options.server_name;
  out->verify = !options.insecure_skip_verify;
  ssl::context& ctx = *out->context;
  Harden(ctx);
  ErrorCode ec;
  ctx.set_verify_mode(out->verify ? ssl::verify_peer : ssl::verify_none, ec);
  if (out->verify) {
    if (!options.ca_file.empty()) {
      const std::string field = std::string(kPrefix) + "ca_file";
      if (Status s = CheckReadable(field, options.ca_file); !s.ok()) return Error(std::move(s));
      ctx.load_verify_file(options.ca_file, ec);
      if (ec) return Error(FileError(field, options.ca_file, ec));
    } else {
      ctx.set_default_verify_paths(ec);
      if (ec) return Error(StatusCode::kInvalidArgument, "system CA store: " + ec.message());
    }
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return Error(StatusCode::kInvalidArgument,
                 std::string(kPrefix) + "cert_file and key_file: give both or neither");
  }
  if (!options.cert_file.empty()) {
    if (Status s = LoadKeyPair(ctx, std::string(kPrefix), options.cert_file, options.key_file);
        !s.ok()) {
      return Error(std::move(s));
    }
  }
  return std::shared_ptr<const ClientTls>(std::move(out));
}

void PrepareClientSsl(SSL* ssl, const ClientTls& tls, const std::string& host) {
  const std::string& name = tls.server_name.empty() ? host : tls.server_name;
  ErrorCode not_address;
  boost::asio::ip::make_address(name, not_address);
  // RFC 6066 §3: "Literal IPv4 and IPv6 addresses are not permitted in
  // HostName."
  if (not_address) {
    // SSL_set_tlsext_host_name, without its macro's C cast.
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(name.c_str()));
  }
  if (!tls.verify) return;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (!not_address) {
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  }
}

std::string DescribeTlsError(const ErrorCode& ec, SSL* ssl) {
  if (ec.category() == boost::asio::error::get_ssl_category()) {
    const auto code = static_cast<unsigned long>(ec.value());  // NOLINT(google-runtime-int)
    const long verify = ssl != nullptr ? SSL_get_verify_result(ssl) : X509_V_OK;  // NOLINT
    if (ERR_GET_REASON(code) == SSL_R_CERTIFICATE_VERIFY_FAILED && verify != X509_V_OK) {
      return std::string("certificate verify failed (") + X509_verify_cert_error_string(verify) +
             ")";
    }
  }
  if (ec == ssl::error::stream_truncated) return "the peer closed the connection";
  return ec.message();
}

Result<std::shared_ptr<ssl::context>> NewServerContext(const TlsServerOptions& options) {
  constexpr std::string_view kPrefix = "tls_server_config.";
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  Harden(*ctx);
  if (options.cert_file.empty() || options.key_file.empty()) {
    return Error(StatusCode::kInvalidArgument,
                 std::string(kPrefix) + "cert_file and key_file are required");
  }
  if (Status s = LoadKeyPair(*ctx, std::string(kPrefix), options.cert_file, options.key_file);
      !s.ok()) {
    return Error(std::move(s));
  }
  // Resumed sessions with client certificates need an id context, else
  // OpenSSL fails the resumption ("session id context uninitialized").
  static constexpr unsigned char kSessionContext[] = "gpucanary";
  SSL_CTX_set_session_id_context(ctx->native_handle(), kSessionContext, sizeof kSessionContext - 1);
  if (options.client_auth == ClientAuth::kNoClientCert) return ctx;
  const std::string field = std::string(kPrefix) + "client_ca_file";
  if (options.client_ca_file.empty()) {
    return Error(StatusCode::kInvalidArgument,
                 field + " is required to verify client certificates");
  }
  if (Status s = CheckReadable(field, options.client_ca_file); !s.ok()) return Error(std::move(s));
  ErrorCode ec;
  ctx->load_verify_file(options.client_ca_file, ec);
  if (ec) return Error(FileError(field, options.client_ca_file, ec));
  // The CA names sent in the CertificateRequest, so a client with several
  // certificates can pick the right one.
  if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.client_ca_file.c_str())) {
    SSL_CTX_set_client_CA_list(ctx->native_handle(), names);
  }
  ERR_clear_error();
  ssl::verify_mode mode = ssl::verify_peer;
  if (options.client_auth == ClientAuth::kRequireAndVerifyClientCert) {
    mode |= ssl::verify_fail_if_no_peer_cert;
  }
  ctx->set_verify_mode(mode, ec);
  return ctx;
}

Result<std::unique_ptr<ServerTlsContext>> ServerTlsContext::Create(TlsServerOptions options,
                                                                   std::string where, Log log) {
  const std::string stamp = Stamp(options);
  auto first = NewServerContext(options);
  if (!first) return Error(first.error().WithPrefix(where));
  std::unique_ptr<ServerTlsContext> out(new ServerTlsContext(std::move(options), std::move(log)));
  MutexLock lock(out->mu_);
  out->name_ = std::move(where);
  out->current_ = std::move(*first);
  out->stamp_ = stamp;
  out->next_check_ = std::chrono::steady_clock::now() + out->interval_;
  return out;
}

std::shared_ptr<ssl::context> ServerTlsContext::Current() {
  std::string message;
  std::shared_ptr<ssl::context> current;
  {
    MutexLock lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now < next_check_) return current_;
    next_check_ = now + interval_;
    std::string stamp = Stamp(options_);
    if (stamp == stamp_) return current_;
    stamp_ = std::move(stamp);
    auto loaded = NewServerContext(options_);
    if (loaded) {
      current_ = std::move(*loaded);
      ++reloads_;
      message = name_ + ": TLS certificate reloaded";
    } else {
      ++failures_;
      message = name_ + ": TLS certificate reload failed, serving the previous one: " +
                loaded.error().message();
    }
    current = current_;
  }
  if (log_) log_(message);  // outside the lock: the log may block
  return current;
}

void ServerTlsContext::set_name(std::string name) {
  MutexLock lock(mu_);
  name_ = std::move(name);
}

std::uint64_t ServerTlsContext::reloads() const {
  MutexLock lock(mu_);
  return reloads_;
}

std::uint64_t ServerTlsContext::reload_failures() const {
  MutexLock lock(mu_);
  return failures_;
}

void ServerTlsContext::set_check_interval(std::chrono::milliseconds interval) {
  MutexLock lock(mu_);
  interval_ = interval;
  next_check_ = std::chrono::steady_clock::now() + interval;
}

}  // namespace gpucanary::net
