// The release API, auth and publishing of a real Daemon (store, metadata
// database, HTTP server on 127.0.0.1:0), spoken to over HTTP; Grafana and the
// OTLP collector are real HTTP servers started here.

#include "daemon/release_api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "core/base64.h"
#include "core/mutex.h"
#include "daemon/auth.h"
#include "daemon/daemon.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/tls_test_util.h"
#include "net/url.h"
#include "remote/write_request.h"
#include "store/meta_db.h"

namespace gpucanary::daemon {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kNowMs = 1764680000000;  // 2025-12-02T12:53:20Z

constexpr std::string_view kExample =
    R"({"id": "llama3-70b-2026-12-02.1", "service": "chat-api", "version": "2026.12.02-1",
 "git_sha": "9f1c2e7", "model": "llama-3-70b-instruct", "checkpoint": "ckpt-18000",
 "quantization": "fp8", "cuda_version": "12.4", "framework": "vllm", "framework_version": "0.6.3",
 "environment": "prod", "started_at": 1764680000.0,
 "targets": ["node-4", "node-5"], "selector": "{Hostname=~\"node-[45]\"}",
 "previous": "llama3-70b-2026-11-28.2"})";

// A real HTTP server standing in for Grafana or a collector: records every
// request, answers 200 (or holds the answer while told to).
class Sink {
 public:
  Sink() {
    auto port = server_.Listen("127.0.0.1", 0,
                               [this](const net::HttpRequest& req, net::HttpResponse& resp) {
                                 MutexLock lock(mu_);
                                 requests_.push_back(req);
                                 cv_.NotifyAll();
                                 cv_.Wait(mu_, [&]() REQUIRES(mu_) { return !hold_; });
                                 resp.status = status_;
                                 resp.body = "{}";
                               });
    port_ = port.value_or(0);
    EXPECT_TRUE(server_.Start().ok());
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<net::HttpRequest> requests() const {
    MutexLock lock(mu_);
    return requests_;
  }
  void set_status(int status) {
    MutexLock lock(mu_);
    status_ = status;
  }
  void Hold(bool hold) {
    {
      MutexLock lock(mu_);
      hold_ = hold;
    }
    cv_.NotifyAll();
  }
  bool WaitForRequests(std::size_t n) {
    MutexLock lock(mu_);
    return cv_.WaitFor(mu_, std::chrono::seconds(10),
                       [&]() REQUIRES(mu_) { return requests_.size() >= n; });
  }

 private:
  mutable Mutex mu_;
  CondVar cv_;
  std::vector<net::HttpRequest> requests_ GUARDED_BY(mu_);
  int status_ GUARDED_BY(mu_) = 200;
  bool hold_ GUARDED_BY(mu_) = false;
  net::HttpServer server_{net::HttpServer::Options{}};
  std::uint16_t port_ = 0;
};

class ReleaseApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_release_api_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    daemon_.reset();
    fs::remove_all(dir_);
  }

  void Start(ServeConfig config = {}) {
    config.listen_port = 0;
    config.data_dir = dir_.string();
    config.publish.backoff_ms = 10;
    config.publish.max_backoff_ms = 20;
    config.publish.attempts = 2;
    DaemonOptions options;
    options.log = [this](std::string_view line) {
      MutexLock lock(log_mu_);
      log_ += std::string(line) + "\n";
    };
    auto d = Daemon::Start(config, clock_, options);
    ASSERT_TRUE(d.has_value()) << d.error().message();
    daemon_ = std::move(*d);
    url_ = "http://127.0.0.1:" + std::to_string(daemon_->port());
  }

  net::HttpResponse Send(const std::string& method, const std::string& target,
                         std::string body = "", const std::string& token = "") {
    net::FetchOptions o;
    o.method = method;
    o.body = std::move(body);
    if (!o.body.empty()) o.content_type = "application/json";
    if (!token.empty()) o.headers.emplace_back("Authorization", "Bearer " + token);
    auto r = net::Fetch(url_ + target, o);
    EXPECT_TRUE(r.has_value()) << r.error().message();
    return r.value_or(net::HttpResponse{});
  }
  net::HttpResponse Post(std::string body, const std::string& token = "") {
    return Send("POST", "/api/v1/releases", std::move(body), token);
  }

  std::string Log() {
    MutexLock lock(log_mu_);
    return log_;
  }

  fs::path dir_;
  ManualClock clock_{kNowMs};
  std::unique_ptr<Daemon> daemon_;
  std::string url_;
  Mutex log_mu_;
  std::string log_ GUARDED_BY(log_mu_);
};

TEST_F(ReleaseApiTest, PostThenGetKeepsTheAnnotationAsReceived) {
  Start();
  net::HttpResponse r = Post(std::string(kExample) + "\n");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.content_type, "application/json");
  // It names GPUs (targets, selector), so the canary service started its canary.
  EXPECT_EQ(
      r.body,
      R"({"status":"success","data":{"id":"llama3-70b-2026-12-02.1","canary":"llama3-70b-2026-12-02.1"}})");
  EXPECT_EQ(r.Header("location"), "/api/v1/releases/llama3-70b-2026-12-02.1");

  r = Send("GET", "/api/v1/releases/llama3-70b-2026-12-02.1");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"status":"success","data":)" + std::string(kExample) + "}");
  EXPECT_FALSE(nlohmann::json::parse(r.body, nullptr, false).is_discarded());

  // The same again: 200, also when only spacing, key order and number
  // spelling differ.
  r = Post(std::string(kExample));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"status":"success","data":{"id":"llama3-70b-2026-12-02.1"}})");
  auto reordered = nlohmann::json::parse(kExample);
  reordered["started_at"] = 1764680000;
  r = Post(reordered.dump(2));
  EXPECT_EQ(r.status, 200) << r.body;

  // Another annotation under the same id: 409, and the first one stays.
  reordered["version"] = "2026.12.02-2";
  r = Post(reordered.dump());
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(
      r.body,
      R"({"status":"error","errorType":"conflict","error":"release 'llama3-70b-2026-12-02.1' exists with a different annotation"})");
  r = Send("GET", "/api/v1/releases/llama3-70b-2026-12-02.1");
  EXPECT_EQ(r.body, R"({"status":"success","data":)" + std::string(kExample) + "}");
  EXPECT_NE(Log().find("serve: release 'llama3-70b-2026-12-02.1' announced for chat-api"),
            std::string::npos);
}

TEST_F(ReleaseApiTest, BadAnnotationsAreRefusedWithWhereAndWhy) {
  ServeConfig config;
  config.releases.max_body_bytes = 1000;
  Start(config);
  net::HttpResponse r = Post(R"({"id":"r1","started_at":"2026-12-02"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(
      r.body,
      R"({"status":"error","errorType":"bad_data","error":"field 'started_at': expected a number (Unix seconds), got a string"})");
  r = Post("{\"id\": \"r1\",\n  \"started_at\": 1764680000,\n}\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(
      r.body,
      R"({"status":"error","errorType":"bad_data","error":"3:1: syntax error while parsing object key - unexpected '}'; expected string literal"})");
  r = Post(R"({"id":"r1","started_at":1,"pad":")" + std::string(1000, 'x') + "\"}");
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(
      r.body,
      R"j({"status":"error","errorType":"bad_data","error":"annotation of 1035 bytes is over the 1000-byte limit (releases.max_body)"})j");
  r = Send("PUT", "/api/v1/releases", R"({"id":"r1","started_at":1})");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.Header("allow"), "GET, HEAD, POST");
  r = Send("DELETE", "/api/v1/releases/r1");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.Header("allow"), "GET, HEAD");
  r = Send("GET", "/api/v1/releases/nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body,
            R"({"status":"error","errorType":"not_found","error":"release 'nope' not found"})");
  // Nothing was stored.
  EXPECT_EQ(Send("GET", "/api/v1/releases").body, R"({"status":"success","data":[]})");
}

TEST_F(ReleaseApiTest, ListFiltersByServiceAndTimeNewestFirst) {
  Start();
  ASSERT_EQ(Post(R"({"id":"a","service":"chat","started_at":1764600000})").status, 201);
  ASSERT_EQ(Post(R"({"id":"b","service":"embed","started_at":1764650000})").status, 201);
  ASSERT_EQ(Post(R"({"id":"c","service":"chat","started_at":1764670000.5,"x":{"y":1}})").status,
            201);
  ASSERT_EQ(Post(R"({"id":"d/e f","started_at":1764679000})").status, 201);

  EXPECT_EQ(Send("GET", "/api/v1/releases").body,
            R"({"status":"success","data":[{"id":"d/e f","started_at":1764679000},)"
            R"({"id":"c","service":"chat","started_at":1764670000.5,"x":{"y":1}},)"
            R"({"id":"b","service":"embed","started_at":1764650000},)"
            R"({"id":"a","service":"chat","started_at":1764600000}]})");
  EXPECT_EQ(
      Send("GET", "/api/v1/releases?service=chat&limit=1").body,
      R"({"status":"success","data":[{"id":"c","service":"chat","started_at":1764670000.5,"x":{"y":1}}]})");
  // from/to: Unix seconds or RFC 3339, both ends included.
  EXPECT_EQ(
      Send("GET", "/api/v1/releases?from=1764650000&to=2025-12-02T10:06:41Z").body,
      R"({"status":"success","data":[{"id":"c","service":"chat","started_at":1764670000.5,"x":{"y":1}},)"
      R"({"id":"b","service":"embed","started_at":1764650000}]})");
  // An id that needs escaping in a path.
  net::HttpResponse r = Send("GET", "/api/v1/releases/" + net::UrlEncode("d/e f"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"status":"success","data":{"id":"d/e f","started_at":1764679000}})");

  r = Send("GET", "/api/v1/releases?from=yesterday");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(
      r.body,
      R"({"status":"error","errorType":"bad_data","error":"invalid parameter \"from\": cannot parse \"yesterday\" to a valid timestamp"})");
  r = Send("GET", "/api/v1/releases?limit=0");
  EXPECT_EQ(r.status, 400);
  r = Send("GET", "/api/v1/releases?from=20&to=10");
  EXPECT_EQ(r.status, 400);
}

TEST_F(ReleaseApiTest, MetricsShowRecentReleasesWithEscapedLabels) {
  ServeConfig config;
  config.releases.info_window_ms = 3600 * 1000;
  Start(config);
  ASSERT_EQ(Post(R"({"id":"old","service":"chat","started_at":1764676000})").status, 201);
  ASSERT_EQ(Post(std::string(kExample)).status, 201);
  ASSERT_EQ(
      Post(R"({"id":"odd","model":"a \"quoted\"\\path\nnext","started_at":1764679999.25})").status,
      201);
  const std::string metrics = Send("GET", "/metrics").body;
  const std::size_t at = metrics.find("# HELP gpucanary_release_info");
  ASSERT_NE(at, std::string::npos) << metrics;
  // The release families end where the publisher's or the canaries' begin.
  const std::size_t end = std::min(metrics.find("# HELP gpucanary_publish", at),
                                   metrics.find("# HELP gpucanary_canary_", at));
  EXPECT_EQ(
      metrics.substr(at, end == std::string::npos ? std::string::npos : end - at),
      "# HELP gpucanary_release_info A release announced to gpucanary that started within "
      "releases.info_window; its fields as labels.\n"
      "# TYPE gpucanary_release_info gauge\n"
      "gpucanary_release_info{id=\"llama3-70b-2026-12-02.1\",service=\"chat-api\","
      "version=\"2026.12.02-1\",git_sha=\"9f1c2e7\",model=\"llama-3-70b-instruct\","
      "checkpoint=\"ckpt-18000\",quantization=\"fp8\",cuda_version=\"12.4\",framework=\"vllm\","
      "framework_version=\"0.6.3\",environment=\"prod\"} 1\n"
      "gpucanary_release_info{id=\"odd\",model=\"a \\\"quoted\\\"\\\\path\\nnext\"} 1\n"
      "# HELP gpucanary_release_started_timestamp_seconds When a release started (Unix "
      "seconds).\n"
      "# TYPE gpucanary_release_started_timestamp_seconds gauge\n"
      "gpucanary_release_started_timestamp_seconds{id=\"llama3-70b-2026-12-02.1\"} 1764680000\n"
      "gpucanary_release_started_timestamp_seconds{id=\"odd\"} 1764679999.25\n");
  // No sink configured: no publish counters.
  EXPECT_EQ(metrics.find("gpucanary_publish_"), std::string::npos);
  // An hour later the example has left the window.
  clock_.Advance(3600 * 1000 + 1);
  EXPECT_EQ(Send("GET", "/metrics").body.find("llama3-70b"), std::string::npos);
}

TEST_F(ReleaseApiTest, ATokenGuardsEveryWriteAndRead) {
  ServeConfig config;
  config.auth.tokens = {{"default", TokenScope::kAdmin, "s3cr3t-token"}};
  Start(config);
  net::HttpResponse r = Post(R"({"id":"r1","started_at":1})");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.Header("www-authenticate"), R"(Bearer realm="gpucanary")");
  EXPECT_EQ(
      r.body,
      R"({"status":"error","errorType":"unauthorized","error":"this endpoint needs Authorization: Bearer <token>"})");
  r = Post(R"({"id":"r1","started_at":1})", "s3cr3t-tokeN");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.Header("www-authenticate"), R"(Bearer realm="gpucanary", error="invalid_token")");
  r = Post(R"({"id":"r1","started_at":1})", "s3cr3t-token-and-more");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(Post(R"({"id":"r1","started_at":1})", "s3cr3t-token").status, 201);
  // The scheme is case-insensitive.
  net::FetchOptions o;
  o.method = "POST";
  o.headers = {{"Authorization", "bearer s3cr3t-token"}};
  o.body = R"({"id":"r2","started_at":1})";
  EXPECT_EQ(net::Fetch(url_ + "/api/v1/releases", o)->status, 201);
  // Basic carries the token as its password (a URL's user:token@, which is
  // all Flagger's webhooks can send), or as its user when there is none.
  o.headers = {{"Authorization", "Basic " + Base64Encode("flagger:s3cr3t-token")}};
  o.body = R"({"id":"r3","started_at":1})";
  EXPECT_EQ(net::Fetch(url_ + "/api/v1/releases", o)->status, 201);
  o.headers = {{"Authorization", "Basic " + Base64Encode("s3cr3t-token:")}};
  o.body = R"({"id":"r4","started_at":1})";
  EXPECT_EQ(net::Fetch(url_ + "/api/v1/releases", o)->status, 201);
  o.headers = {{"Authorization", "Basic " + Base64Encode("s3cr3t-token")}};  // no colon
  EXPECT_EQ(net::Fetch(url_ + "/api/v1/releases", o)->status, 401);
  o.headers = {{"Authorization", "Basic not*base64"}};
  EXPECT_EQ(net::Fetch(url_ + "/api/v1/releases", o)->status, 401);

  // Every read and write but the health checks and the dashboard's files
  // needs it: reads, remote_write, Flagger's webhooks, canary control.
  for (const auto& [method, target] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/api/v1/releases/r1"},
           {"GET", "/api/v1/releases"},
           {"GET", "/metrics"},
           {"GET", "/api/v1/query?query=up"},
           {"POST", "/api/v1/query"},
           {"GET", "/api/v1/label/job/values"},
           {"GET", "/api/v1/targets"},
           {"GET", "/api/v1/canaries"},
           {"GET", "/api/v1/correlate"},
           {"POST", "/api/v1/write"},
           {"POST", "/api/v1/flagger/confirm-promotion"},
           {"POST", "/api/v1/flagger/post-rollout"},
           {"POST", "/api/v1/canaries/r1/stop"},
           {"DELETE", "/api/v1/releases/r1"}}) {
    EXPECT_EQ(Send(method, target, method == "GET" ? "" : "{}").status, 401)
        << method << " " << target;
    EXPECT_NE(Send(method, target, method == "GET" ? "" : "{}", "s3cr3t-token").status, 401)
        << method << " " << target;
  }
  EXPECT_EQ(Send("GET", "/-/ready").status, 200);
  EXPECT_EQ(Send("GET", "/-/healthy").status, 200);
  EXPECT_EQ(Send("GET", "/").status, 200);  // the dashboard's page
}

TEST_F(ReleaseApiTest, ScopedTokensDoWhatTheirScopeCovers) {
  ServeConfig config;
  config.auth.tokens = {{"grafana", TokenScope::kRead, "ro-1"},
                        {"ci", TokenScope::kWrite, "wr-2"},
                        {"oncall", TokenScope::kAdmin, "ad-3"}};
  Start(config);
  struct Case {
    std::string method, target;
    TokenScope needs;
  };
  const std::vector<Case> cases = {
      {"GET", "/api/v1/releases", TokenScope::kRead},
      {"GET", "/metrics", TokenScope::kRead},
      {"POST", "/api/v1/query", TokenScope::kRead},  // a form: still a read
      {"GET", "/api/v1/canaries", TokenScope::kRead},
      {"POST", "/api/v1/write", TokenScope::kWrite},
      {"POST", "/api/v1/releases", TokenScope::kWrite},
      {"POST", "/api/v1/flagger/confirm-promotion", TokenScope::kWrite},
      {"POST", "/api/v1/flagger/post-rollout", TokenScope::kWrite},
      {"POST", "/api/v1/canaries/r1/stop", TokenScope::kAdmin},
      {"DELETE", "/api/v1/releases/r1", TokenScope::kAdmin},
  };
  const std::vector<std::pair<std::string, TokenScope>> tokens = {
      {"ro-1", TokenScope::kRead}, {"wr-2", TokenScope::kWrite}, {"ad-3", TokenScope::kAdmin}};
  for (const Case& c : cases) {
    for (const auto& [token, scope] : tokens) {
      const net::HttpResponse r =
          Send(c.method, c.target, c.method == "GET" ? "" : R"({"id":"x","started_at":1})", token);
      if (scope >= c.needs) {
        // (Flagger's gates answer 403 themselves to hold a step: no challenge then.)
        EXPECT_NE(r.status, 401) << c.method << " " << c.target << " with " << token;
        EXPECT_EQ(r.Header("www-authenticate"), "")
            << c.method << " " << c.target << " with " << token;
      } else {
        EXPECT_EQ(r.status, 403) << c.method << " " << c.target << " with " << token;
        EXPECT_EQ(r.Header("www-authenticate"),
                  R"(Bearer realm="gpucanary", error="insufficient_scope", scope=")" +
                      std::string(ScopeName(c.needs)) + "\"");
      }
    }
  }
  // The refusal names the token and both scopes, never the token's value,
  // and stays JSON whatever the path holds.
  const net::HttpResponse r = Send("POST", "/api/v1/canaries/a%22b/stop", "", "wr-2");
  EXPECT_EQ(r.status, 403);
  const nlohmann::json body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["errorType"], "forbidden");
  EXPECT_EQ(body["error"].get<std::string>().find("wr-2"), std::string::npos);
  EXPECT_NE(body["error"].get<std::string>().find("token 'ci' has scope write"), std::string::npos)
      << r.body;
}

// The daemon's own listener over TLS (tls_server_config): the API answers
// HTTPS to a client that trusts the CA, refuses one that does not, and a
// plain-HTTP request to it gets no answer; health checks stay on HTTPS too.
TEST_F(ReleaseApiTest, TheDaemonServesHttpsWithTlsServerConfig) {
  const net::test::TestPki pki;
  ServeConfig config;
  config.tls_server = pki.Server("server");
  config.auth.tokens = {{"ci", TokenScope::kWrite, "w-token"}};
  Start(config);
  const std::string https = "https://127.0.0.1:" + std::to_string(daemon_->port());
  net::FetchOptions o;
  o.tls = pki.Trusting();
  o.method = "POST";
  o.content_type = "application/json";
  o.body = R"({"id":"tls-1","started_at":1})";
  o.headers.emplace_back("Authorization", "Bearer w-token");
  auto posted = net::Fetch(https + "/api/v1/releases", o);
  ASSERT_TRUE(posted.has_value()) << posted.error().message();
  EXPECT_EQ(posted->status, 201) << posted->body;
  net::FetchOptions health;
  health.tls = pki.Trusting();
  auto ready = net::Fetch(https + "/-/ready", health);
  ASSERT_TRUE(ready.has_value()) << ready.error().message();
  EXPECT_EQ(ready->status, 200);
  // Without the CA: the handshake fails, naming why.
  auto untrusted = net::Fetch(https + "/-/ready");
  ASSERT_FALSE(untrusted.has_value());
  EXPECT_NE(untrusted.error().message().find("certificate verify failed"), std::string::npos)
      << untrusted.error().message();
  // Plain HTTP to the HTTPS port: no HTTP answer.
  net::FetchOptions plain;
  plain.timeout_ms = 2000;
  auto cleartext = net::Fetch(url_ + "/-/ready", plain);
  EXPECT_FALSE(cleartext.has_value() && cleartext->status == 200);
}

TEST_F(ReleaseApiTest, ListeningBeyondLoopbackWithoutATokenIsWarnedAbout) {
  ServeConfig config;
  config.listen_host = "0.0.0.0";
  Start(config);
  EXPECT_NE(Log().find("serve: WARNING: listening on 0.0.0.0:"), std::string::npos) << Log();
  EXPECT_NE(Log().find("with no auth token: anyone who can reach this port can post releases"),
            std::string::npos);
}

TEST_F(ReleaseApiTest, NoWarningOnLoopbackOrWithAToken) {
  ServeConfig config;
  config.listen_host = "0.0.0.0";
  config.auth.tokens = {{"default", TokenScope::kAdmin, "t"}};
  Start(config);
  EXPECT_EQ(Log().find("WARNING"), std::string::npos) << Log();
  // Its own health on /metrics: failed writes, the API's connections.
  const std::string metrics = Send("GET", "/metrics", "", "t").body;
  for (const char* line : {"gpucanary_store_write_failures_total 0\n",
                           "gpucanary_store_last_write_failure_timestamp_seconds 0\n",
                           "gpucanary_http_connections_refused_total 0\n"}) {
    EXPECT_NE(metrics.find(line), std::string::npos) << line << metrics;
  }
  EXPECT_NE(metrics.find("gpucanary_http_open_connections 1\n"), std::string::npos) << metrics;
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("[::1]"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("::"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("127example.com"));
  EXPECT_FALSE(IsLoopbackHost("127.evil.example"));
}

// Issue 22: a deleted meta.sqlite started silently with no releases, and a
// damaged one kept the daemon from starting with no way back. Now: refused
// with a clear message unless told to start empty; meta.sqlite.bak restores.
class MetadataTest : public ReleaseApiTest {
 protected:
  Result<std::unique_ptr<Daemon>> Restart(bool empty_metadata) {
    daemon_.reset();
    ServeConfig config;
    config.listen_port = 0;
    config.data_dir = dir_.string();
    DaemonOptions options;
    options.log = [this](std::string_view line) {
      MutexLock lock(log_mu_);
      log_ += std::string(line) + "\n";
    };
    options.empty_metadata = empty_metadata;
    return Daemon::Start(config, clock_, options);
  }
  void RemoveMeta() {
    for (const char* f : {"meta.sqlite", "meta.sqlite-wal", "meta.sqlite-shm"}) {
      fs::remove(dir_ / f);
    }
  }
};

TEST_F(MetadataTest, AMissingDatabaseBesideTelemetryIsRefusedUnlessToldToStartEmpty) {
  Start();
  ASSERT_EQ(Post(R"({"id":"r1","started_at":1})").status, 201);
  daemon_.reset();
  RemoveMeta();
  auto refused = Restart(false);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.error().message().find("meta.sqlite is missing, but"), std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("--empty-metadata"), std::string::npos);
  // The backup the first run wrote restores it.
  ASSERT_TRUE(fs::exists(dir_ / "meta.sqlite.bak"));
  fs::copy_file(dir_ / "meta.sqlite.bak", dir_ / "meta.sqlite");
  auto restored = Restart(false);
  ASSERT_TRUE(restored.has_value()) << restored.error().message();
  daemon_ = std::move(*restored);
  url_ = "http://127.0.0.1:" + std::to_string(daemon_->port());
  EXPECT_EQ(Send("GET", "/api/v1/releases/r1").status, 200);
  // Told to start empty: it does, and says so.
  daemon_.reset();
  RemoveMeta();
  auto empty = Restart(true);
  ASSERT_TRUE(empty.has_value()) << empty.error().message();
  EXPECT_NE(Log().find("meta.sqlite was missing: starting with empty metadata"), std::string::npos);
}

// The backup follows the store's checkpoints: after one, meta.sqlite.bak
// holds what was posted before it, with no wait for the next retention pass
// (a minute) or a clean stop (a kill -9 gives none).
TEST_F(MetadataTest, MetadataIsBackedUpAtEveryStoreCheckpoint) {
  ServeConfig config;
  config.listen_port = 0;
  config.data_dir = dir_.string();
  DaemonOptions options;
  options.store_checkpoint_after_bytes = 1;  // every WAL write checkpoints
  options.retention_interval_ms = 3'600'000;
  auto d = Daemon::Start(config, clock_, options);
  ASSERT_TRUE(d.has_value()) << d.error().message();
  daemon_ = std::move(*d);
  url_ = "http://127.0.0.1:" + std::to_string(daemon_->port());
  ASSERT_EQ(Post(R"({"id":"r1","started_at":1})").status, 201);
  // The start's backup holds no r1; the next one comes from a checkpoint.
  fs::remove(dir_ / "meta.sqlite.bak");
  remote::WriteRequest write;
  write.timeseries.push_back({{{"__name__", "up"}, {"instance", "agent:9100"}, {"job", "x"}},
                              {{clock_.NowMs(), 1.0}},
                              0,
                              0});
  net::FetchOptions o;
  o.method = "POST";
  o.content_type = "application/x-protobuf";
  o.headers = {{"Content-Encoding", "snappy"}};
  o.body = remote::EncodeWriteRequest(write);
  auto written = net::Fetch(url_ + "/api/v1/write", o);
  ASSERT_TRUE(written.has_value()) << written.error().message();
  ASSERT_EQ(written->status, 204) << written->body;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!fs::exists(dir_ / "meta.sqlite.bak") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(fs::exists(dir_ / "meta.sqlite.bak"));
  // SQLite's backup writes the copy whole before it is renamed into place
  // (store::MetaDb::Backup), so it is complete once it exists.
  auto bak = store::MetaDb::Open(dir_ / "meta.sqlite.bak");
  ASSERT_TRUE(bak.has_value()) << bak.error().message();
  auto r1 = (*bak)->GetRelease("r1");
  ASSERT_TRUE(r1.has_value()) << r1.error().message();
  EXPECT_TRUE(r1->has_value());
}

TEST_F(MetadataTest, ADamagedDatabaseIsRefusedAndKeptAsideWhenStartingEmpty) {
  Start();
  ASSERT_EQ(Post(R"({"id":"r1","started_at":1})").status, 201);
  daemon_.reset();
  for (const char* f : {"meta.sqlite-wal", "meta.sqlite-shm"}) fs::remove(dir_ / f);
  {
    // 20 bytes of the header flipped, as the attack did.
    std::fstream file(dir_ / "meta.sqlite", std::ios::in | std::ios::out | std::ios::binary);
    for (int i = 0; i < 20; ++i) {
      file.seekg(i);
      const char c = static_cast<char>(file.get());
      file.seekp(i);
      file.put(static_cast<char>(~c));
    }
  }
  auto refused = Restart(false);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("meta.sqlite"), std::string::npos);
  EXPECT_NE(refused.error().message().find("Restore it"), std::string::npos)
      << refused.error().message();
  auto empty = Restart(true);
  ASSERT_TRUE(empty.has_value()) << empty.error().message();
  bool aside = false;
  for (const auto& e : fs::directory_iterator(dir_)) {
    aside = aside || e.path().filename().string().starts_with("meta.sqlite.damaged-");
  }
  EXPECT_TRUE(aside);
  EXPECT_NE(Log().find("starting with empty metadata (--empty-metadata)"), std::string::npos);
}

TEST_F(ReleaseApiTest, NewReleasesArePublishedWithoutHoldingTheReply) {
  Sink grafana;
  Sink collector;
  ServeConfig config;
  config.publish.grafana = releases::GrafanaSinkConfig{grafana.url(), "glsa_x", {"fleet"}, ""};
  config.publish.otlp = releases::OtlpSinkConfig{collector.url(), {{"X-Tenant", "t1"}}};
  Start(config);

  grafana.Hold(true);  // Grafana hangs: the POST must not wait for it
  const auto start = std::chrono::steady_clock::now();
  net::HttpResponse r = Post(std::string(kExample));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, 201);
  EXPECT_LT(took, std::chrono::seconds(2));
  ASSERT_TRUE(grafana.WaitForRequests(1));
  ASSERT_TRUE(collector.WaitForRequests(1));
  grafana.Hold(false);

  const auto g = grafana.requests();
  ASSERT_EQ(g.size(), 1U);
  EXPECT_EQ(g[0].target, "/api/annotations");
  EXPECT_EQ(g[0].Header("authorization"), "Bearer glsa_x");
  EXPECT_EQ(g[0].body,
            R"({"time":1764680000000,"tags":["gpucanary","release","chat-api","prod","fleet"],)"
            R"("text":"llama3-70b-2026-12-02.1: 2026.12.02-1 llama-3-70b-instruct ckpt-18000 )"
            R"(fp8 vllm 0.6.3 CUDA 12.4 9f1c2e7"})");
  const auto c = collector.requests();
  ASSERT_EQ(c.size(), 1U);
  EXPECT_EQ(c[0].target, "/v1/metrics");
  EXPECT_EQ(c[0].Header("x-tenant"), "t1");
  EXPECT_EQ(c[0].body, releases::OtlpMetricsBody(*releases::ParseRelease(kExample)));

  // The same release again is not news: nothing more is published.
  EXPECT_EQ(Post(std::string(kExample)).status, 200);

  // A sink that fails is logged and counted on /metrics.
  collector.set_status(503);
  ASSERT_EQ(Post(R"({"id":"r2","started_at":1764680001})").status, 201);
  ASSERT_TRUE(collector.WaitForRequests(3));
  ASSERT_TRUE(grafana.WaitForRequests(2));
  std::string metrics;
  for (int i = 0; i < 200; ++i) {  // the give-up is counted just after the last answer
    metrics = Send("GET", "/metrics").body;
    if (metrics.find("gpucanary_publish_dropped_total{sink=\"otlp\"} 1") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(metrics.find("gpucanary_publish_sent_total{sink=\"grafana\"} 2\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("gpucanary_publish_sent_total{sink=\"otlp\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("gpucanary_publish_failures_total{sink=\"otlp\"} 2\n"), std::string::npos);
  EXPECT_NE(metrics.find("gpucanary_publish_failures_total{sink=\"grafana\"} 0\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("gpucanary_publish_dropped_total{sink=\"otlp\"} 1\n"), std::string::npos);
  EXPECT_EQ(grafana.requests().size(), 2U);
  EXPECT_NE(Log().find("publish otlp: release 'r2': attempt 2/2: HTTP 503: {}; giving up"),
            std::string::npos)
      << Log();
}

TEST(ConstantTimeEqualsTest, ComparesWholeTokens) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", ""));
  EXPECT_FALSE(ConstantTimeEquals("ab", std::string_view("ab\0", 3)));
}

}  // namespace
}  // namespace gpucanary::daemon
