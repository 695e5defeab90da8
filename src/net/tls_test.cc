// HTTPS end to end with real OpenSSL and real sockets: the client
// (net::Fetch, net::HttpConnection) against the server (HttpServer::ListenTls)
// with certificates the test makes (net/tls_test_util.h).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/test_util.h"
#include "net/tls_test_util.h"

namespace gpucanary::net {
namespace {

using test::TestPki;
using ::testing::HasSubstr;

void Hello(const HttpRequest& req, HttpResponse& res) {
  res.content_type = "text/plain";
  res.body = "hello " + req.path;
}

// One HTTPS listener on 127.0.0.1:0 serving Hello.
struct TlsServer {
  explicit TlsServer(const TlsServerOptions& tls, HttpServer::Options options = {},
                     FastHandler fast = nullptr)
      : server(options) {
    auto p = server.ListenTls("127.0.0.1", 0, tls, Hello, std::move(fast));
    EXPECT_TRUE(p) << p.error().ToString();
    port = p.value_or(0);
    EXPECT_TRUE(server.Start().ok());
  }
  std::string Url(const std::string& target, const std::string& host = "127.0.0.1") const {
    return "https://" + host + ":" + std::to_string(port) + target;
  }
  HttpServer server;
  std::uint16_t port = 0;
};

class TlsTest : public ::testing::Test {
 protected:
  TlsServerOptions ServerWith(const std::string& name) const { return pki_.Server(name); }
  FetchOptions Trusting(const std::string& ca = "ca") const {
    FetchOptions o;
    o.tls = pki_.Trusting(ca);
    return o;
  }

  TestPki pki_;
};

TEST_F(TlsTest, FetchWithTheCaGetsTheAnswer) {
  TlsServer s(ServerWith("server"));
  for (const char* host : {"127.0.0.1", "localhost"}) {
    auto r = Fetch(s.Url("/metrics", host), Trusting());
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello /metrics");
  }
}

TEST_F(TlsTest, UnknownCaFailsTheHandshakeUnlessVerificationIsSkipped) {
  TlsServer s(ServerWith("server"));
  const std::string url = s.Url("/metrics");
  auto r = Fetch(url);  // the system's CAs do not know ours
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.error().message(),
            "GET " + url +
                ": TLS handshake: certificate verify failed (unable to get local "
                "issuer certificate)");
  FetchOptions skip;
  skip.tls.insecure_skip_verify = true;
  r = Fetch(url, skip);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, "hello /metrics");
}

TEST_F(TlsTest, SelfSignedCertificateIsRefusedByName) {
  TlsServer s(ServerWith("self_signed"));
  const std::string url = s.Url("/metrics");
  auto r = Fetch(url, Trusting());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "GET " + url + ": TLS handshake: certificate verify failed (self-signed certificate)");
  // Trusting the certificate itself is how a self-signed exporter is pinned.
  r = Fetch(url, Trusting("self_signed"));
  ASSERT_TRUE(r) << r.error().ToString();
}

TEST_F(TlsTest, ExpiredCertificateIsRefused) {
  TlsServer s(ServerWith("expired"));
  auto r = Fetch(s.Url("/"), Trusting());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(),
              HasSubstr("certificate verify failed (certificate has expired)"));
}

TEST_F(TlsTest, WrongHostIsRefusedAndServerNameOverridesTheUrlsHost) {
  TlsServer s(ServerWith("wrong_host"));
  auto r = Fetch(s.Url("/"), Trusting());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(),
              HasSubstr("TLS handshake: certificate verify failed (IP address mismatch)"));
  r = Fetch(s.Url("/", "localhost"), Trusting());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("certificate verify failed (hostname mismatch)"));
  FetchOptions named = Trusting();
  named.tls.server_name = "wrong.example";
  r = Fetch(s.Url("/"), named);
  ASSERT_TRUE(r) << r.error().ToString();
  // And the other way: the right certificate, asked for another name.
  TlsServer right(ServerWith("server"));
  named.tls.server_name = "other.example";
  r = Fetch(right.Url("/"), named);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("(hostname mismatch)"));
}

TEST_F(TlsTest, ClientCertificateRequiredWhenClientCaIsSet) {
  TlsServerOptions options = ServerWith("server");
  options.client_ca_file = pki_.Crt("ca");
  options.client_auth = ClientAuth::kRequireAndVerifyClientCert;
  TlsServer s(options);
  auto r = Fetch(s.Url("/"), Trusting());
  ASSERT_FALSE(r);
  // TLS 1.3: the server refuses after the client's half of the handshake,
  // so the client learns it from the alert, in OpenSSL's words.
  EXPECT_THAT(r.error().message(), HasSubstr("certificate required"));
  FetchOptions with_cert = Trusting();
  with_cert.tls.cert_file = pki_.Crt("client");
  with_cert.tls.key_file = pki_.Key("client");
  r = Fetch(s.Url("/"), with_cert);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  // A certificate from another CA is no better than none.
  with_cert.tls.cert_file = pki_.Crt("self_signed");
  with_cert.tls.key_file = pki_.Key("self_signed");
  EXPECT_FALSE(Fetch(s.Url("/"), with_cert));
}

TEST_F(TlsTest, OptionalClientCertificateIsVerifiedOnlyWhenGiven) {
  TlsServerOptions options = ServerWith("server");
  options.client_ca_file = pki_.Crt("ca");
  options.client_auth = ClientAuth::kVerifyClientCertIfGiven;
  TlsServer s(options);
  EXPECT_TRUE(Fetch(s.Url("/"), Trusting()));
  FetchOptions bad = Trusting();
  bad.tls.cert_file = pki_.Crt("self_signed");
  bad.tls.key_file = pki_.Key("self_signed");
  EXPECT_FALSE(Fetch(s.Url("/"), bad));
}

TEST_F(TlsTest, UnreadableFilesAreNamed) {
  FetchOptions o;
  o.tls.ca_file = pki_.dir.path() + "/missing.crt";
  auto r = Fetch("https://127.0.0.1:1/x", o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.error().message(), "GET https://127.0.0.1:1/x: tls_config.ca_file " + o.tls.ca_file +
                                     ": No such file or directory");
  o = Trusting();
  o.tls.cert_file = pki_.Crt("client");
  EXPECT_THAT(Fetch("https://127.0.0.1:1/x", o).error().message(),
              HasSubstr("cert_file and key_file: give both or neither"));
  o.tls.key_file = pki_.Key("server");
  EXPECT_THAT(Fetch("https://127.0.0.1:1/x", o).error().message(),
              HasSubstr("does not match tls_config.cert_file"));
  o.tls = {};
  o.tls.ca_file = pki_.Key("ca");  // a key is not a certificate
  EXPECT_THAT(Fetch("https://127.0.0.1:1/x", o).error().message(),
              HasSubstr("tls_config.ca_file " + pki_.Key("ca") + ": "));

  HttpServer server({});
  TlsServerOptions bad = ServerWith("server");
  bad.cert_file = pki_.dir.path() + "/nope.crt";
  auto p = server.ListenTls("127.0.0.1", 0, bad, Hello);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message(), "listen 127.0.0.1:0: tls_server_config.cert_file " +
                                     pki_.dir.path() + "/nope.crt: No such file or directory");
  bad = ServerWith("server");
  bad.client_auth = ClientAuth::kRequireAndVerifyClientCert;
  p = server.ListenTls("127.0.0.1", 0, bad, Hello);
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message(), HasSubstr("client_ca_file is required"));
}

TEST_F(TlsTest, KeepAliveHoldsOneTlsConnection) {
  TlsServer s(ServerWith("server"));
  HttpConnection c("127.0.0.1", s.port, pki_.Trusting());
  for (int i = 0; i < 3; ++i) {
    auto r = c.Request("/n" + std::to_string(i));
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->body, "hello /n" + std::to_string(i));
  }
  EXPECT_EQ(c.connects(), 1);
}

TEST_F(TlsTest, LargeGzipBodiesAndPostsCrossTls) {
  HttpServer server({});
  const std::string large = test::LargeBody(300'000, 1);
  auto p = server.ListenTls("127.0.0.1", 0, ServerWith("server"),
                            [&large](const HttpRequest& req, HttpResponse& res) {
                              res.body = req.method == "POST" ? req.body : large;
                            });
  ASSERT_TRUE(p);
  ASSERT_TRUE(server.Start().ok());
  const std::string url = "https://127.0.0.1:" + std::to_string(*p) + "/";
  auto r = Fetch(url, Trusting());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->Header("content-encoding"), "gzip");
  EXPECT_EQ(r->body, large);
  FetchOptions post = Trusting();
  post.method = "POST";
  post.body = large;
  r = Fetch(url, post);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, large);
}

TEST_F(TlsTest, HandshakeTimeoutNamesThePhase) {
  // Accepts (the kernel does) and never speaks.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  const std::string url = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/";
  FetchOptions o = Trusting();
  o.timeout_ms = 200;
  auto r = Fetch(url, o);
  close(fd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "GET " + url + ": timed out after 200 ms (TLS handshake)");
}

TEST_F(TlsTest, PlainHttpToAnHttpsListenerIsClosed) {
  TlsServer s(ServerWith("server"));
  {
    test::RawClient raw(s.port);
    ASSERT_TRUE(raw.connected());
    raw.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(raw.WaitClosed());
  }
  auto r = Fetch("http://127.0.0.1:" + std::to_string(s.port) + "/");
  EXPECT_FALSE(r);
  // The listener goes on.
  r = Fetch(s.Url("/after"), Trusting());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, "hello /after");
  EXPECT_GE(s.server.stats().tls_handshake_failures, 2U);
}

TEST_F(TlsTest, SilentClientIsClosedAfterTheReadTimeout) {
  HttpServer::Options options;
  options.read_timeout_s = 1;
  TlsServer s(ServerWith("server"), options);
  test::RawClient raw(s.port);
  ASSERT_TRUE(raw.connected());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(raw.WaitClosed());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
}

TEST_F(TlsTest, FastHandlerAnswersOnHttpsWhileHandlersAreBusy) {
  HttpServer::Options options;
  options.handler_threads = 1;
  Mutex mu;
  bool release = false;
  HttpServer server(options);
  auto p = server.ListenTls(
      "127.0.0.1", 0, ServerWith("server"),
      [&](const HttpRequest&, HttpResponse& res) {
        for (int i = 0; i < 500; ++i) {
          {
            MutexLock lock(mu);
            if (release) break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        res.body = "slow";
      },
      [](const HttpRequest& req, HttpResponse& res) {
        if (req.path != "/-/healthy") return false;
        res.body = "healthy";
        return true;
      });
  ASSERT_TRUE(p);
  ASSERT_TRUE(server.Start().ok());
  const std::string base = "https://127.0.0.1:" + std::to_string(*p);
  std::thread slow([&] { EXPECT_TRUE(Fetch(base + "/slow", Trusting())); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto r = Fetch(base + "/-/healthy", Trusting());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, "healthy");
  {
    MutexLock lock(mu);
    release = true;
  }
  slow.join();
}

TEST_F(TlsTest, ConnectionLimitsHoldOnHttps) {
  HttpServer::Options options;
  options.max_connections = 1;
  TlsServer s(ServerWith("server"), options);
  HttpConnection held("127.0.0.1", s.port, pki_.Trusting());
  ASSERT_TRUE(held.Request("/"));
  // The refusal is written before any handshake, so a TLS client cannot
  // read it; it fails either way.
  EXPECT_FALSE(Fetch(s.Url("/"), Trusting()));
  EXPECT_EQ(s.server.stats().connections_refused, 1U);
  held.Close();
}

// Replaces the served certificate, as cert-manager or certbot would, and
// checks which one new connections get: each generation is signed by its
// own CA, so a client trusting only that CA succeeds only once it is served.
TEST_F(TlsTest, CertificateReloadsWithoutRestart) {
  test::TempDir dir;
  const test::TestCert ca2 = test::MakeCert(test::Spec("second CA", "", 10, /*ca=*/true));
  const test::TestCert server2 = test::MakeCert(test::Spec("server-2", "IP:127.0.0.1", 11), &ca2);
  const std::string ca2_file = dir.Write("ca2.crt", ca2.CertPem());
  const std::string crt = dir.Write("tls.crt", pki_.server.CertPem());
  const std::string key = dir.Write("tls.key", pki_.server.KeyPem());

  HttpServer::Options options;
  options.tls_check_interval_ms = 0;  // look at the files at every accept
  Mutex mu;
  std::vector<std::string> log;
  options.log = [&](const std::string& line) {
    MutexLock lock(mu);
    log.push_back(line);
  };
  TlsServerOptions files;
  files.cert_file = crt;
  files.key_file = key;
  TlsServer s(files, options);
  FetchOptions first = Trusting();
  FetchOptions second;
  second.tls.ca_file = ca2_file;
  ASSERT_TRUE(Fetch(s.Url("/"), first));
  EXPECT_FALSE(Fetch(s.Url("/"), second));
  HttpConnection kept("127.0.0.1", s.port, pki_.Trusting());
  ASSERT_TRUE(kept.Request("/"));

  // The key first, then the certificate: between the two the pair does not
  // match, which must keep the old one.
  dir.Write("tls.key", server2.KeyPem());
  EXPECT_TRUE(Fetch(s.Url("/"), first)) << "a mismatched pair replaced the served one";
  dir.Write("tls.crt", server2.CertPem());
  auto r = Fetch(s.Url("/"), second);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_FALSE(Fetch(s.Url("/"), first));
  // An open connection keeps the certificate it was made with.
  ASSERT_TRUE(kept.Request("/still"));
  EXPECT_EQ(kept.connects(), 1);

  // A broken certificate keeps the one served.
  dir.Write("tls.crt", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
  r = Fetch(s.Url("/"), second);
  ASSERT_TRUE(r) << r.error().ToString();
  const HttpServer::Stats stats = s.server.stats();
  EXPECT_EQ(stats.tls_reloads, 1U);
  EXPECT_EQ(stats.tls_reload_failures, 2U);
  MutexLock lock(mu);
  ASSERT_EQ(log.size(), 3U);
  const std::string where = "listen 127.0.0.1:" + std::to_string(s.port);
  EXPECT_EQ(log[0], where +
                        ": TLS certificate reload failed, serving the previous one: "
                        "tls_server_config.key_file " +
                        key + ": does not match tls_server_config.cert_file " + crt);
  EXPECT_EQ(log[1], where + ": TLS certificate reloaded");
  EXPECT_THAT(log[2], HasSubstr("reload failed, serving the previous one: "
                                "tls_server_config.cert_file " +
                                crt + ": "));
}

TEST_F(TlsTest, ReloadIsCheckedAtMostOncePerInterval) {
  test::TempDir dir;
  const std::string crt = dir.Write("tls.crt", pki_.server.CertPem());
  const std::string key = dir.Write("tls.key", pki_.server.KeyPem());
  HttpServer::Options options;
  options.tls_check_interval_ms = 60'000;
  options.log = [](const std::string&) {};
  TlsServerOptions files;
  files.cert_file = crt;
  files.key_file = key;
  TlsServer s(files, options);
  dir.Write("tls.crt", pki_.self_signed.CertPem());
  dir.Write("tls.key", pki_.self_signed.KeyPem());
  // Within the interval nothing is looked at: still the CA's certificate.
  ASSERT_TRUE(Fetch(s.Url("/"), Trusting()));
  EXPECT_EQ(s.server.stats().tls_reloads, 0U);
}

}  // namespace
}  // namespace gpucanary::net
