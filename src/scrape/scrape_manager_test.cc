// The scraper against real servers on loopback: the live simulator's fleet
// and small net::HttpServer targets whose body, health and speed a test
// controls. Ports are picked by the OS; tests wait on commits, never on
// fixed sleeps. Schedules run on a ManualClock where a test needs exact
// times, on the real clock with short intervals where it measures real
// behaviour (timeouts, the 1 s fleet).

#include "scrape/scrape_manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/yaml_fields.h"
#include "core/mutex.h"
#include "net/http_server.h"
#include "net/tls_test_util.h"
#include "scrape/config.h"
#include "scrape/connection.h"
#include "scrape/test_appendable.h"
#include "sim/live.h"
#include "sim/scenario.h"

namespace gpucanary::scrape {
namespace {

namespace fs = std::filesystem;
using test::CapturingAppendable;
using test::Sample;

constexpr std::int64_t kStart = 1'764'680'000'000;

// One /metrics endpoint whose body and behaviour the test sets.
class TestTarget {
 public:
  // `tls`: serve HTTPS with it.
  explicit TestTarget(std::string body, const net::TlsServerOptions* tls = nullptr)
      : body_(std::move(body)), server_(Options()), https_(tls != nullptr) {
    auto handler = [this](const net::HttpRequest& q, net::HttpResponse& r) { Handle(q, r); };
    Result<std::uint16_t> p = tls != nullptr ? server_.ListenTls("127.0.0.1", 0, *tls, handler)
                                             : server_.Listen("127.0.0.1", 0, handler);
    EXPECT_TRUE(p.has_value());
    port_ = p.value_or(0);
    EXPECT_TRUE(server_.Start().ok());
  }
  ~TestTarget() { Release(); }

  void SetBody(std::string body) {
    MutexLock lock(mu_);
    body_ = std::move(body);
  }
  // Handlers block until Release() (or 5 s): a target that hangs.
  void Hang() {
    MutexLock lock(mu_);
    hang_ = true;
  }
  void Release() {
    {
      MutexLock lock(mu_);
      hang_ = false;
    }
    released_.NotifyAll();
  }
  void Kill() {
    Release();
    server_.Stop();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string url() const { return (https_ ? "https://" : "http://") + address() + "/metrics"; }
  std::uint64_t connections() const { return server_.stats().connections_accepted; }
  net::HttpRequest last_request() const {
    MutexLock lock(mu_);
    return last_;
  }

 private:
  static net::HttpServer::Options Options() {
    net::HttpServer::Options o;
    o.threads = 1;
    return o;
  }
  void Handle(const net::HttpRequest& q, net::HttpResponse& r) {
    MutexLock lock(mu_);
    last_ = q;
    released_.WaitFor(mu_, std::chrono::seconds(5), [this]() REQUIRES(mu_) { return !hang_; });
    r.content_type = "text/plain; version=0.0.4";
    r.body = body_;
  }

  mutable Mutex mu_;
  CondVar released_;
  std::string body_ GUARDED_BY(mu_);
  bool hang_ GUARDED_BY(mu_) = false;
  net::HttpRequest last_ GUARDED_BY(mu_);
  net::HttpServer server_;
  const bool https_;
  std::uint16_t port_ = 0;
};

ScrapeConfig OneJob(const std::vector<std::string>& targets, std::int64_t interval_ms,
                    std::int64_t timeout_ms, std::string name = "job") {
  ScrapeConfig c;
  JobConfig j;
  j.job_name = std::move(name);
  j.scrape_interval_ms = interval_ms;
  j.scrape_timeout_ms = timeout_ms;
  j.static_configs.push_back(StaticConfig{targets, {}});
  c.jobs.push_back(j);
  return c;
}

std::string Up(const std::string& address, const std::string& job = "job") {
  return "up{instance=\"" + address + "\",job=\"" + job + "\"}";
}

std::vector<std::int64_t> Times(const std::vector<Sample>& s) {
  std::vector<std::int64_t> out;
  for (const Sample& x : s) out.push_back(x.t_ms);
  return out;
}

ScrapeManager::Options ManualOptions(int ingest_threads = 1) {
  ScrapeManager::Options o;
  o.clock_poll_ms = 2;
  o.ingest_threads = ingest_threads;
  o.discovery.poll_ms = 5;
  return o;
}

// Polls `done` every millisecond for up to 5 s (for state that changes
// without a commit to wait on).
bool PollFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// Status is published just after the scrape's commit: wait for it.
::testing::AssertionResult StatusAt(const ScrapeManager& m, std::int64_t t_ms) {
  if (PollFor([&] {
        const std::vector<TargetStatus> t = m.Targets();
        return !t.empty() && t[0].last_scrape_ms == t_ms;
      })) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no status for the scrape at " << t_ms;
}

// ---- exact schedules on a ManualClock ----

class ManualScrapeTest : public ::testing::Test {
 protected:
  ManualScrapeTest() : clock_(kStart) {}

  // Moves the clock to `t_ms`, waits until `series` has a sample there and
  // the scrape is over (a ManualClock jumps: moving on while it still runs
  // would make the next slot find it in flight and skip).
  ::testing::AssertionResult ScrapeAt(const ScrapeManager& m, std::int64_t t_ms,
                                      const std::string& series) {
    clock_.Set(t_ms);
    if (!store_.WaitFor([&] {
          const auto s = store_.Samples(series);
          return !s.empty() && s.back().t_ms == t_ms;
        })) {
      return ::testing::AssertionFailure() << "no sample of " << series << " at " << t_ms;
    }
    if (!PollFor([&] { return m.stats().in_flight == 0; })) {
      return ::testing::AssertionFailure() << "the scrape at " << t_ms << " did not end";
    }
    return ::testing::AssertionSuccess();
  }

  ManualClock clock_;
  CapturingAppendable store_;
};

TEST_F(ManualScrapeTest, IntervalSwitches15sTo1sTo15sAtTheNextSlotOnOneConnection) {
  TestTarget target("m 1\n");
  ScrapeManager m(store_, clock_, ManualOptions());
  ASSERT_TRUE(m.ApplyConfig(OneJob({target.address()}, 15000, 10000)).ok());
  ASSERT_TRUE(m.Start().ok());
  const std::int64_t p15 = PhaseMs(target.url(), 15000);
  const std::int64_t p1 = PhaseMs(target.url(), 1000);
  const std::string up = Up(target.address());

  const std::int64_t s0 = SlotAtOrAfter(p15, 15000, kStart);
  ASSERT_TRUE(ScrapeAt(m, s0, up));
  ASSERT_EQ(m.Targets().at(0).interval_ms, 15000);

  m.SetFast("canary-1", MatchHosts({"127.0.0.1"}));
  const std::vector<TargetStatus> fast = m.Targets();
  EXPECT_TRUE(fast.at(0).fast);
  EXPECT_EQ(fast.at(0).interval_ms, 1000);
  EXPECT_EQ(fast.at(0).timeout_ms, 1000);  // capped at the interval
  const std::int64_t f1 = SlotAtOrAfter(p1, 1000, s0 + 1);
  EXPECT_EQ(fast.at(0).next_scrape_ms, f1);
  ASSERT_TRUE(ScrapeAt(m, f1, up));
  ASSERT_TRUE(ScrapeAt(m, f1 + 1000, up));
  ASSERT_TRUE(ScrapeAt(m, f1 + 2000, up));
  EXPECT_EQ(target.last_request().Header("x-prometheus-scrape-timeout-seconds"), "1");

  m.ClearFast("canary-1");
  EXPECT_EQ(m.Targets().at(0).interval_ms, 15000);
  const std::int64_t s1 = SlotAtOrAfter(p15, 15000, f1 + 2001);
  ASSERT_TRUE(ScrapeAt(m, s1, up));

  EXPECT_EQ(Times(store_.Samples(up)),
            (std::vector<std::int64_t>{s0, f1, f1 + 1000, f1 + 2000, s1}));
  for (const Sample& s : store_.Samples("m{instance=\"" + target.address() + "\",job=\"job\"}")) {
    EXPECT_EQ(s.value, 1);
  }
  EXPECT_EQ(target.connections(), 1U);  // kept alive through both switches
  EXPECT_EQ(m.stats().skipped_slots, 0U);
}

TEST_F(ManualScrapeTest, AConfigReloadKeepsTargetsAndAppliesANewFastInterval) {
  TestTarget target("m 1\n");
  ScrapeManager m(store_, clock_, ManualOptions());
  ScrapeConfig config = OneJob({target.address()}, 15000, 10000);
  ASSERT_TRUE(m.ApplyConfig(config).ok());
  ASSERT_TRUE(m.Start().ok());
  m.SetFast("c", MatchHosts({target.address()}));
  const std::int64_t t0 = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, kStart);
  ASSERT_TRUE(ScrapeAt(m, t0, Up(target.address())));
  config.global.fast_interval_ms = 500;
  ASSERT_TRUE(m.ApplyConfig(config).ok());
  const TargetStatus st = m.Targets().at(0);
  EXPECT_EQ(st.interval_ms, 500);
  EXPECT_EQ(st.next_scrape_ms, SlotAtOrAfter(PhaseMs(target.url(), 500), 500, t0 + 1));
  EXPECT_EQ(st.scrapes, 1U);  // the same target, not a new one
  ASSERT_TRUE(ScrapeAt(m, st.next_scrape_ms, Up(target.address())));
  EXPECT_EQ(target.connections(), 1U);
}

TEST_F(ManualScrapeTest, ASeriesThatDisappearsGetsAStaleMarkerAtTheNextScrape) {
  TestTarget target("a 1\nb 2\n");
  ScrapeManager m(store_, clock_, ManualOptions());
  ASSERT_TRUE(m.ApplyConfig(OneJob({target.address()}, 1000, 1000)).ok());
  ASSERT_TRUE(m.Start().ok());
  const std::string up = Up(target.address());
  const std::int64_t t0 = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, kStart);
  ASSERT_TRUE(ScrapeAt(m, t0, up));
  target.SetBody("a 1\n");
  ASSERT_TRUE(ScrapeAt(m, t0 + 1000, up));
  ASSERT_TRUE(StatusAt(m, t0 + 1000));
  const auto b = store_.Samples("b{instance=\"" + target.address() + "\",job=\"job\"}");
  ASSERT_EQ(b.size(), 2U);
  EXPECT_EQ(b[0].value, 2);
  EXPECT_EQ(b[1].t_ms, t0 + 1000);
  EXPECT_TRUE(store::IsStaleNaN(b[1].value));
  EXPECT_EQ(store_.Samples(up).back().value, 1);
  EXPECT_EQ(m.stats().stale_markers, 1U);
}

TEST_F(ManualScrapeTest, ATargetThatDiesIsDownWithStaleMarkers) {
  TestTarget target("a 1\nb 2\n");
  ScrapeManager m(store_, clock_, ManualOptions(/*ingest_threads=*/0));
  ASSERT_TRUE(m.ApplyConfig(OneJob({target.address()}, 1000, 1000)).ok());
  ASSERT_TRUE(m.Start().ok());
  const std::string up = Up(target.address());
  const std::int64_t t0 = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, kStart);
  ASSERT_TRUE(ScrapeAt(m, t0, up));
  ASSERT_TRUE(StatusAt(m, t0));
  EXPECT_EQ(m.Targets().at(0).health, TargetHealth::kUp);
  target.Kill();
  ASSERT_TRUE(ScrapeAt(m, t0 + 1000, up));
  ASSERT_TRUE(StatusAt(m, t0 + 1000));
  EXPECT_EQ(store_.Samples(up).back().value, 0);
  for (const char* name : {"a", "b"}) {
    const auto s =
        store_.Samples(std::string(name) + "{instance=\"" + target.address() + "\",job=\"job\"}");
    ASSERT_EQ(s.size(), 2U) << name;
    EXPECT_TRUE(store::IsStaleNaN(s[1].value)) << name;
    EXPECT_EQ(s[1].t_ms, t0 + 1000);
  }
  const TargetStatus st = m.Targets().at(0);
  EXPECT_EQ(st.health, TargetHealth::kDown);
  EXPECT_EQ(st.last_error, "GET " + target.url() + ": connect: Connection refused");
  EXPECT_EQ(st.last_scrape_ms, t0 + 1000);
  EXPECT_EQ(st.failures, 1U);
  EXPECT_EQ(TargetHealthName(st.health), "down");
}

// Issue 22: with the disk full every scrape's samples were lost while the
// target stayed up with no failure. A commit that keeps nothing fails the
// scrape (Prometheus reports an append error so), and the next one that
// can write is up again.
TEST_F(ManualScrapeTest, AScrapeTheStoreCannotKeepIsAFailedScrape) {
  TestTarget target("a 1\n");
  ScrapeManager m(store_, clock_, ManualOptions(/*ingest_threads=*/0));
  ASSERT_TRUE(m.ApplyConfig(OneJob({target.address()}, 1000, 1000)).ok());
  ASSERT_TRUE(m.Start().ok());
  const std::string up = Up(target.address());
  const std::int64_t t0 = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, kStart);
  ASSERT_TRUE(ScrapeAt(m, t0, up));
  ASSERT_TRUE(StatusAt(m, t0));
  store_.FailCommits(true);
  clock_.Set(t0 + 1000);
  ASSERT_TRUE(StatusAt(m, t0 + 1000));
  TargetStatus st = m.Targets().at(0);
  EXPECT_EQ(st.health, TargetHealth::kDown);
  EXPECT_EQ(st.last_error, "store: data/wal/00000001: write: No space left on device");
  EXPECT_EQ(st.failures, 1U);
  EXPECT_EQ(st.store_rejected, 6U);  // a and the five report series (up, ...): all lost
  EXPECT_EQ(m.stats().failures, 1U);
  store_.FailCommits(false);
  ASSERT_TRUE(ScrapeAt(m, t0 + 2000, up));
  ASSERT_TRUE(StatusAt(m, t0 + 2000));
  st = m.Targets().at(0);
  EXPECT_EQ(st.health, TargetHealth::kUp);
  EXPECT_EQ(st.last_error, "");
  EXPECT_EQ(Times(store_.Samples(up)), (std::vector<std::int64_t>{t0, t0 + 2000}));
}

TEST_F(ManualScrapeTest, AMalformedExpositionFailsTheScrapeAndKeepsItsPosition) {
  TestTarget target("a 1\n");
  ScrapeManager m(store_, clock_, ManualOptions());
  ASSERT_TRUE(m.ApplyConfig(OneJob({target.address()}, 1000, 1000)).ok());
  ASSERT_TRUE(m.Start().ok());
  const std::string up = Up(target.address());
  const std::int64_t t0 = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, kStart);
  ASSERT_TRUE(ScrapeAt(m, t0, up));
  target.SetBody("a 1\nb{x=\"1\" 2\n");
  ASSERT_TRUE(ScrapeAt(m, t0 + 1000, up));
  ASSERT_TRUE(StatusAt(m, t0 + 1000));
  EXPECT_EQ(store_.Samples(up).back().value, 0);
  const TargetStatus st = m.Targets().at(0);
  EXPECT_EQ(st.health, TargetHealth::kDown);
  EXPECT_EQ(st.last_error, "parse error at 2:9: expected ',' or '}' after label value, found '2'");
  EXPECT_EQ(st.exposition_errors, 1U);
  EXPECT_EQ(m.stats().exposition_errors, 1U);
  target.SetBody("a 1\n");
  ASSERT_TRUE(ScrapeAt(m, t0 + 2000, up));
  ASSERT_TRUE(StatusAt(m, t0 + 2000));
  EXPECT_EQ(store_.Samples(up).back().value, 1);
  EXPECT_EQ(m.Targets().at(0).last_error, "");
}

TEST_F(ManualScrapeTest, GzipPrometheusHeadersAndKeepAlive) {
  std::string body;
  for (int i = 0; i < 200; ++i)
    body += "m{i=\"" + std::to_string(i) + "\"} " + std::to_string(i) + "\n";
  TestTarget target(body);  // over 1 KiB: the server gzips it
  ScrapeManager m(store_, clock_, ManualOptions());
  ASSERT_TRUE(m.ApplyConfig(OneJob({target.address()}, 1000, 800)).ok());
  ASSERT_TRUE(m.Start().ok());
  const std::string up = Up(target.address());
  const std::int64_t t0 = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, kStart);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(ScrapeAt(m, t0 + 1000 * k, up));
  const net::HttpRequest q = target.last_request();
  EXPECT_EQ(q.Header("accept-encoding"), "gzip");
  EXPECT_EQ(q.Header("accept"), internal::kAcceptHeader);
  EXPECT_EQ(q.Header("x-prometheus-scrape-timeout-seconds"), "0.8");
  EXPECT_EQ(q.Header("user-agent"), "gpucanary/0.1");
  EXPECT_EQ(store_.Samples("m{i=\"199\",instance=\"" + target.address() + "\",job=\"job\"}").size(),
            3U);
  EXPECT_EQ(
      store_.Samples("scrape_samples_scraped{instance=\"" + target.address() + "\",job=\"job\"}")
          .back()
          .value,
      200);
  EXPECT_EQ(target.connections(), 1U);
}

// An https target (dcgm-exporter can serve TLS) through the scrape config
// as an operator writes it: scheme, tls_config with files relative to the
// config file; one TLS connection kept alive across scrapes.
TEST_F(ManualScrapeTest, HttpsTargetWithTlsConfig) {
  const net::test::TestPki pki;
  const net::TlsServerOptions tls = pki.Server("server");
  TestTarget target("m 1\n", &tls);
  Result<ScrapeConfig> config = ParseScrapeConfig(
      "scrape_configs:\n"
      "  - job_name: job\n"
      "    scrape_interval: 1s\n"
      "    scheme: https\n"
      "    tls_config: {ca_file: ca.crt, cert_file: client.crt, key_file: client.key}\n"
      "    static_configs: [{targets: ['" +
          target.address() + "']}]\n",
      pki.dir.path() + "/scrape.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  ScrapeManager m(store_, clock_, ManualOptions());
  ASSERT_TRUE(m.ApplyConfig(*config).ok());
  ASSERT_TRUE(m.Start().ok());
  const std::string up = Up(target.address());
  const std::int64_t t0 = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, kStart);
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(ScrapeAt(m, t0 + 1000 * k, up));
  EXPECT_EQ(store_.Samples(up).back().value, 1);
  EXPECT_EQ(store_.Samples("m{instance=\"" + target.address() + "\",job=\"job\"}").size(), 2U);
  EXPECT_EQ(target.connections(), 1U);
  EXPECT_EQ(m.Targets()[0].url, target.url());
}

// prometheus_sd_configs from a Prometheus served over HTTPS: read with the
// entry's own tls_config; without the CA the discovery fails, saying why.
TEST_F(ManualScrapeTest, PrometheusSdOverHttpsUsesItsTlsConfig) {
  const net::test::TestPki pki;
  const net::TlsServerOptions tls = pki.Server("server");
  TestTarget exporter("m 1\n");
  TestTarget prometheus(R"({"status":"success","data":{"activeTargets":[{"labels":{"instance":")" +
                            exporter.address() + R"(","job":"dcgm"},"scrapeUrl":")" +
                            exporter.url() + R"("}],"droppedTargets":[]}})",
                        &tls);
  const std::string prom = "https://" + prometheus.address();
  auto config = [&](const std::string& tls_config) {
    return ParseScrapeConfig(
        "scrape_configs:\n  - job_name: job\n    scrape_interval: 1s\n"
        "    prometheus_sd_configs:\n      - url: " +
            prom + "\n        job: dcgm\n" + tls_config,
        pki.dir.path() + "/scrape.yaml");
  };
  Result<ScrapeConfig> trusted = config("        tls_config: {ca_file: ca.crt}\n");
  ASSERT_TRUE(trusted.has_value()) << trusted.error().message();
  ScrapeManager m(store_, clock_, ManualOptions());
  ASSERT_TRUE(m.ApplyConfig(*trusted).ok());
  ASSERT_EQ(m.Targets().size(), 1U);
  EXPECT_EQ(m.Targets()[0].url, exporter.url());

  Result<ScrapeConfig> untrusted = config("");
  ASSERT_TRUE(untrusted.has_value()) << untrusted.error().message();
  ScrapeManager n(store_, clock_, ManualOptions());
  const Status s = n.ApplyConfig(*untrusted);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("certificate verify failed"), std::string::npos) << s.message();
  EXPECT_TRUE(n.Targets().empty());
}

// Without the CA the target is down, and says why.
TEST_F(ManualScrapeTest, HttpsTargetWithAnUnknownCaIsDown) {
  const net::test::TestPki pki;
  const net::TlsServerOptions tls = pki.Server("server");
  TestTarget target("m 1\n", &tls);
  ScrapeConfig config = OneJob({target.address()}, 1000, 800);
  config.jobs[0].scheme = "https";
  config.jobs[0].tls_config.ca_file = pki.Crt("self_signed");
  ScrapeManager m(store_, clock_, ManualOptions());
  ASSERT_TRUE(m.ApplyConfig(config).ok());
  ASSERT_TRUE(m.Start().ok());
  const std::string up = Up(target.address());
  const std::int64_t t0 = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, kStart);
  ASSERT_TRUE(ScrapeAt(m, t0, up));
  EXPECT_EQ(store_.Samples(up).back().value, 0);
  ASSERT_TRUE(StatusAt(m, t0));
  EXPECT_EQ(m.Targets()[0].last_error,
            "GET " + target.url() +
                ": TLS handshake: certificate verify failed (unable to get local issuer "
                "certificate)");
  // A CA file gone since the config was read fails each scrape, naming it.
  // The new settings make a new run of the target; it goes on at the next
  // slot, not again at the one just scraped.
  config.jobs[0].tls_config.ca_file = pki.dir.path() + "/gone.crt";
  ASSERT_TRUE(m.ApplyConfig(config).ok());
  ASSERT_EQ(m.Targets().size(), 1U);
  EXPECT_EQ(m.Targets()[0].next_scrape_ms, t0 + 1000);
  ASSERT_TRUE(ScrapeAt(m, t0 + 1000, up));
  ASSERT_TRUE(StatusAt(m, t0 + 1000));
  EXPECT_EQ(m.Targets()[0].last_error, "GET " + target.url() + ": tls_config.ca_file " +
                                           pki.dir.path() + "/gone.crt: No such file or directory");
}

// A series twice in one exposition: the first value kept, the second counted
// (Prometheus's prometheus_target_scrapes_sample_duplicate_timestamp_total).
TEST_F(ManualScrapeTest, DuplicateSeriesInAScrapeAreCounted) {
  TestTarget target("a 1\na 2\nb 3\nb 3\nc 4\n");
  ScrapeManager m(store_, clock_, ManualOptions());
  ASSERT_TRUE(m.ApplyConfig(OneJob({target.address()}, 1000, 1000)).ok());
  ASSERT_TRUE(m.Start().ok());
  const std::string up = Up(target.address());
  const std::int64_t t0 = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, kStart);
  ASSERT_TRUE(ScrapeAt(m, t0, up));
  ASSERT_TRUE(StatusAt(m, t0));
  EXPECT_EQ(m.stats().duplicate_samples, 2U);
  EXPECT_EQ(m.Targets().at(0).duplicate_samples, 2U);
  EXPECT_EQ(m.Targets().at(0).health, TargetHealth::kUp);
  const auto a = store_.Samples("a{instance=\"" + target.address() + "\",job=\"job\"}");
  ASSERT_EQ(a.size(), 1U);
  EXPECT_EQ(a[0].value, 1);
  ASSERT_TRUE(ScrapeAt(m, t0 + 1000, up));
  ASSERT_TRUE(StatusAt(m, t0 + 1000));
  EXPECT_EQ(m.stats().duplicate_samples, 4U);
}

// sample_limit, label limits and body_size_limit: the scrape fails, the
// target is down with the reason, and each is counted.
class ScrapeLimitTest : public ManualScrapeTest {
 protected:
  // Scrapes `body` once with `limits`; returns the target after it.
  TargetStatus ScrapeOnce(const std::string& body, const ScrapeLimits& limits,
                          ScrapeManager::Stats* stats) {
    TestTarget target(body);
    ScrapeManager m(store_, clock_, ManualOptions());
    ScrapeConfig config = OneJob({target.address()}, 1000, 1000);
    config.jobs[0].limits = limits;
    EXPECT_TRUE(m.ApplyConfig(config).ok());
    EXPECT_TRUE(m.Start().ok());
    url_ = target.url();
    const std::int64_t t = SlotAtOrAfter(PhaseMs(target.url(), 1000), 1000, clock_.NowMs() + 1);
    EXPECT_TRUE(ScrapeAt(m, t, Up(target.address())));
    EXPECT_TRUE(StatusAt(m, t));
    EXPECT_EQ(store_.Samples(Up(target.address())).back().value, 0);
    *stats = m.stats();
    return m.Targets().at(0);
  }
  std::string url_;
};

TEST_F(ScrapeLimitTest, OverTheSampleLimit) {
  ScrapeManager::Stats stats;
  const TargetStatus t = ScrapeOnce("a 1\nb 2\nc 3\n", ScrapeLimits{.sample_limit = 2}, &stats);
  EXPECT_EQ(t.health, TargetHealth::kDown);
  EXPECT_EQ(t.last_error,
            "sample limit exceeded: more than 2 samples after metric relabeling (sample_limit)");
  EXPECT_EQ(t.failures, 1U);
  EXPECT_EQ(stats.failures, 1U);
  EXPECT_EQ(stats.exceeded_sample_limit, 1U);
  EXPECT_EQ(stats.exceeded_body_size_limit, 0U);
}

TEST_F(ScrapeLimitTest, OverALabelLimit) {
  ScrapeManager::Stats stats;
  const TargetStatus t = ScrapeOnce("a{x=\"1\"} 1\n", ScrapeLimits{.label_limit = 3}, &stats);
  EXPECT_EQ(t.health, TargetHealth::kDown);
  EXPECT_EQ(t.last_error, "label_limit exceeded (metric: a, number of labels: 4, limit: 3)");
  EXPECT_EQ(stats.exceeded_label_limits, 1U);
}

TEST_F(ScrapeLimitTest, OverTheBodySizeLimit) {
  ScrapeManager::Stats stats;
  const TargetStatus t = ScrapeOnce("a 1\nb 2\nc 3\n", ScrapeLimits{.body_size_limit = 8}, &stats);
  EXPECT_EQ(t.health, TargetHealth::kDown);
  EXPECT_EQ(t.last_error,
            "GET " + url_ + ": body size limit exceeded: more than 8 bytes (body_size_limit)");
  EXPECT_EQ(stats.exceeded_body_size_limit, 1U);
  EXPECT_EQ(stats.failures, 1U);
}

// A gzipped body is limited by its decompressed size, as Prometheus's
// body_size_limit ("uncompressed response body").
TEST_F(ScrapeLimitTest, OverTheBodySizeLimitOnceDecompressed) {
  std::string body;
  for (int i = 0; i < 200; ++i) body += "m{i=\"" + std::to_string(i) + "\"} 1\n";  // gzipped
  ScrapeManager::Stats stats;
  const TargetStatus t = ScrapeOnce(body, ScrapeLimits{.body_size_limit = 1500}, &stats);
  EXPECT_EQ(t.last_error,
            "GET " + url_ + ": body size limit exceeded: more than 1500 bytes (body_size_limit)");
  EXPECT_EQ(stats.exceeded_body_size_limit, 1U);
}

// ---- discovery ----

class FileSdScrapeTest : public ManualScrapeTest {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpucanary-scrape-" + std::to_string(getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void WriteTargets(const std::string& text) {
    std::ofstream(dir_ / "targets.json") << text;
    fs::last_write_time(dir_ / "targets.json",
                        fs::last_write_time(dir_ / "targets.json") + std::chrono::seconds(++tick_));
  }
  static std::set<std::string> Urls(const ScrapeManager& m) {
    std::set<std::string> out;
    for (const TargetStatus& t : m.Targets()) out.insert(t.url);
    return out;
  }
  fs::path dir_;
  int tick_ = 0;
};

TEST_F(FileSdScrapeTest, ReloadsOnChangeKeepsLastGoodAndEndsVanishedTargets) {
  TestTarget a("x 1\n");
  TestTarget b("y 2\n");
  WriteTargets(R"([{"targets": [")" + a.address() + R"("], "labels": {"rack": "r1"}}])");
  const std::string config =
      "scrape_configs:\n  - job_name: job\n    scrape_interval: 1s\n"
      "    file_sd_configs: [{files: ['targets.json'], refresh_interval: 5m}]\n";
  Result<ScrapeConfig> c = ParseScrapeConfig(config, (dir_ / "scrape.yaml").string());
  ASSERT_TRUE(c.has_value()) << c.error().message();
  Mutex errors_mu;
  std::vector<std::string> errors;  // from background refreshes
  ScrapeManager::Options options = ManualOptions();
  options.discovery.on_error = [&](const Status& e) {
    MutexLock lock(errors_mu);
    errors.push_back(e.message());
  };
  ScrapeManager m(store_, clock_, options);
  ASSERT_TRUE(m.ApplyConfig(*c).ok());
  ASSERT_TRUE(m.Start().ok());
  ASSERT_EQ(Urls(m), (std::set<std::string>{a.url()}));
  EXPECT_EQ(m.Targets()[0].labels,
            (model::Labels{{"instance", a.address()}, {"job", "job"}, {"rack", "r1"}}));
  // The instances: one snapshot, shared until the targets change.
  const auto instances = m.Instances();
  ASSERT_NE(instances, nullptr);
  EXPECT_EQ(*instances, std::vector<std::string>{a.address()});
  EXPECT_EQ(m.Instances(), instances);  // the same object: nothing copied
  const std::string up_a = "up{instance=\"" + a.address() + "\",job=\"job\",rack=\"r1\"}";
  const std::int64_t ta = SlotAtOrAfter(PhaseMs(a.url(), 1000), 1000, kStart);
  ASSERT_TRUE(ScrapeAt(m, ta, up_a));

  // Changed on disk, picked up by the mtime poll once refresh_interval passes.
  WriteTargets(R"([{"targets": [")" + b.address() + R"("]}])");
  clock_.Set(ta + 5 * 60 * 1000 + 1);
  ASSERT_TRUE(PollFor([&] { return Urls(m) == std::set<std::string>{b.url()}; }))
      << "the file change was not picked up";
  EXPECT_EQ(*m.Instances(), std::vector<std::string>{b.address()});
  EXPECT_EQ(*instances, std::vector<std::string>{a.address()});  // a snapshot, unchanged
  ASSERT_TRUE(store_.WaitFor([&] {  // a's scrape may have been in flight: it ends first
    const auto s = store_.Samples(up_a);
    return !s.empty() && store::IsStaleNaN(s.back().value);
  }));
  // a vanished: every series it wrote, up included, ends with a stale marker
  // (after one more scrape, if the clock's jump reached a's slot first).
  for (const std::string& s :
       {up_a, "x{instance=\"" + a.address() + "\",job=\"job\",rack=\"r1\"}"}) {
    const auto samples = store_.Samples(s);
    ASSERT_GE(samples.size(), 2U) << s;
    EXPECT_FALSE(store::IsStaleNaN(samples[samples.size() - 2].value)) << s;
    EXPECT_TRUE(store::IsStaleNaN(samples.back().value)) << s;
    EXPECT_GT(samples.back().t_ms, ta);
  }

  // A bad edit: the poll reports where it broke, the last good targets stay;
  // ReloadDiscovery says the same.
  WriteTargets("[{\"targets\": [\"" + a.address() + "\"]},\n {\"targets\": 5}]");
  const std::string where =
      (dir_ / "targets.json").string() + ":2:14: [1].targets: expected a list of host:port";
  clock_.Set(clock_.NowMs() + 5 * 60 * 1000 + 1);
  ASSERT_TRUE(PollFor([&] {
    MutexLock lock(errors_mu);
    return !errors.empty();
  })) << "the bad file was not reported";
  {
    MutexLock lock(errors_mu);
    EXPECT_EQ(errors, std::vector<std::string>{where});
  }
  Status s = m.ReloadDiscovery();
  EXPECT_EQ(s.code(), StatusCode::kParseError);
  EXPECT_EQ(s.message(), where);
  EXPECT_EQ(Urls(m), (std::set<std::string>{b.url()}));
  const auto sources = m.DiscoverySources();
  ASSERT_EQ(sources.size(), 1U);
  EXPECT_EQ(sources[0].kind, "file");
  EXPECT_EQ(sources[0].last_error, s.message());

  // ReloadDiscovery applies a good file at once.
  WriteTargets(R"([{"targets": [")" + a.address() + R"(", ")" + b.address() + R"("]}])");
  EXPECT_TRUE(m.ReloadDiscovery().ok());
  EXPECT_EQ(Urls(m), (std::set<std::string>{a.url(), b.url()}));
  std::vector<std::string> both = {a.address(), b.address()};
  std::sort(both.begin(), both.end());
  EXPECT_EQ(*m.Instances(), both);
}

// The node-mapping recipe of docs/scraping.md end to end: a vLLM server
// serving vLLM's documented exposition (series labelled model_name only, no
// host), found through file SD with discovery labels as a Kubernetes pod has
// them; relabel_configs copy the pod's node into Hostname, so every stored
// series carries the node and MatchHosts selects the target by node name.
TEST_F(FileSdScrapeTest, RelabelingGivesAVllmTargetItsNode) {
  Result<std::string> body = config::ReadConfigFile(std::string(GPUCANARY_SOURCE_DIR) +
                                                    "/src/scrape/testdata/vllm_docs_metrics.prom");
  ASSERT_TRUE(body.has_value()) << body.error().message();
  TestTarget vllm(*body);
  TestTarget finished("x 1\n");
  WriteTargets(R"([{"targets": [")" + vllm.address() +
               R"("], "labels": {"__meta_kubernetes_pod_node_name": "gpu-node-7",
                                 "__meta_kubernetes_pod_phase": "Running"}},
                   {"targets": [")" +
               finished.address() +
               R"("], "labels": {"__meta_kubernetes_pod_node_name": "gpu-node-8",
                                 "__meta_kubernetes_pod_phase": "Succeeded"}}])");
  const std::string config = R"(scrape_configs:
  - job_name: vllm
    scrape_interval: 1s
    file_sd_configs: [{files: ['targets.json']}]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_phase]
        regex: Succeeded|Failed
        action: drop
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: Hostname
)";
  Result<ScrapeConfig> c = ParseScrapeConfig(config, (dir_ / "scrape.yaml").string());
  ASSERT_TRUE(c.has_value()) << c.error().message();
  ScrapeManager m(store_, clock_, ManualOptions());
  ASSERT_TRUE(m.ApplyConfig(*c).ok());
  ASSERT_TRUE(m.Start().ok());
  ASSERT_EQ(Urls(m), (std::set<std::string>{vllm.url()}));  // the finished pod is dropped
  const model::Labels target = {
      {"Hostname", "gpu-node-7"}, {"instance", vllm.address()}, {"job", "vllm"}};
  EXPECT_EQ(m.Targets()[0].labels, target);
  const std::string up =
      "up{Hostname=\"gpu-node-7\",instance=\"" + vllm.address() + "\",job=\"vllm\"}";
  ASSERT_TRUE(ScrapeAt(m, SlotAtOrAfter(PhaseMs(vllm.url(), 1000), 1000, kStart), up));
  const std::string bucket =
      "vllm:iteration_tokens_total_bucket{Hostname=\"gpu-node-7\",instance=\"" + vllm.address() +
      "\",job=\"vllm\",le=\"512.0\","
      "model_name=\"unsloth/Llama-3.2-1B-Instruct\"}";
  ASSERT_EQ(store_.Samples(bucket).size(), 1U);
  EXPECT_EQ(store_.Samples(bucket)[0].value, 3.0);
  for (const auto& [series, samples] : store_.All()) {
    EXPECT_NE(series.find("Hostname=\"gpu-node-7\""), std::string::npos) << series;
    EXPECT_EQ(series.find("__meta"), std::string::npos) << series;
  }
  Target t;
  t.labels = target;
  EXPECT_TRUE(MatchHosts({"gpu-node-7"})(t));
}

// ---- real time ----

TEST(RealTimeScrapeTest, AHangingTargetDoesNotDelayTheOthers) {
  RealClock clock;
  CapturingAppendable store;
  TestTarget hanging("h 1\n");
  hanging.Hang();
  std::vector<std::unique_ptr<TestTarget>> fine;
  std::vector<std::string> addresses = {hanging.address()};
  for (int i = 0; i < 4; ++i) {
    fine.push_back(std::make_unique<TestTarget>("f " + std::to_string(i) + "\n"));
    addresses.push_back(fine.back()->address());
  }
  ScrapeManager::Options o;
  o.ingest_threads = 0;
  ScrapeManager m(store, clock, o);
  ASSERT_TRUE(m.ApplyConfig(OneJob(addresses, 400, 250)).ok());
  ASSERT_TRUE(m.Start().ok());
  const auto enough = [&] {
    for (const auto& t : fine) {
      if (store.Samples(Up(t->address())).size() < 4) return false;
    }
    return store.Samples(Up(hanging.address())).size() >= 2;
  };
  ASSERT_TRUE(store.WaitFor(enough, std::chrono::seconds(10)));
  m.Stop();
  hanging.Release();
  for (const auto& t : fine) {
    const auto up = store.Samples(Up(t->address()));
    const std::int64_t phase = PhaseMs(t->url(), 400);
    for (std::size_t k = 0; k < up.size(); ++k) {
      EXPECT_EQ(up[k].value, 1);
      EXPECT_EQ(up[k].t_ms % 400, phase);
      if (k > 0) {
        EXPECT_EQ(up[k].t_ms - up[k - 1].t_ms, 400);  // no slot lost
      }
    }
  }
  for (const TargetStatus& t : m.Targets()) {
    if (t.url == hanging.url()) {
      EXPECT_EQ(t.health, TargetHealth::kDown);
      EXPECT_EQ(t.last_error, "GET " + hanging.url() + ": timed out after 250 ms (receive)");
      EXPECT_GE(t.last_duration_s, 0.25);
    } else {
      EXPECT_EQ(t.health, TargetHealth::kUp);
      EXPECT_LT(t.last_duration_s, 0.2);
      EXPECT_EQ(t.skipped_slots, 0U);
    }
  }
  EXPECT_GE(m.stats().timeouts, 2U);
  EXPECT_EQ(store.Samples(Up(hanging.address())).back().value, 0);
}

constexpr std::string_view kFleet = R"(
seed: 7
duration: 1h
fleet:
  - {nodes: "node-[1-4]", gpu: h100-sxm}
releases:
  stable: {profile: baseline}
traffic: {rps: 200}
events:
  - {at: 0s, deploy: stable, nodes: all}
)";

TEST(RealTimeScrapeTest, ScrapesTheLiveFleetEverySecondOnItsSchedule) {
  RealClock clock;
  Result<sim::Scenario> scenario = sim::ParseScenario(kFleet, "fleet.yaml");
  ASSERT_TRUE(scenario.has_value()) << scenario.error().message();
  sim::LiveOptions lo;
  lo.base_port = 0;
  lo.control_port = 0;
  sim::LiveSim live(*scenario, sim::EngineOptions{}, lo, clock);
  ASSERT_TRUE(live.Start().ok());
  std::vector<std::string> dcgm;
  std::vector<std::string> vllm;
  for (const sim::LiveSim::Endpoint& e : live.endpoints()) {
    dcgm.push_back("127.0.0.1:" + std::to_string(e.dcgm_port));
    vllm.push_back("127.0.0.1:" + std::to_string(e.server_port));
  }
  ScrapeConfig config = OneJob(dcgm, 1000, 900, "dcgm");
  config.jobs.push_back(OneJob(vllm, 1000, 900, "vllm").jobs[0]);

  CapturingAppendable store;
  ScrapeManager m(store, clock, ScrapeManager::Options{});
  ASSERT_TRUE(m.ApplyConfig(config).ok());
  ASSERT_TRUE(m.Start().ok());
  const auto scraped = [&](const std::vector<std::string>& targets, const std::string& job) {
    for (const std::string& t : targets) {
      const auto up = store.Samples(Up(t, job));
      if (up.size() < 3 || up.back().value != 1) return false;
    }
    return true;
  };
  ASSERT_TRUE(store.WaitFor([&] { return scraped(dcgm, "dcgm") && scraped(vllm, "vllm"); },
                            std::chrono::seconds(15)));
  m.Stop();

  // Every sample of every series sits on its target's schedule.
  std::map<std::string, std::int64_t> phase;  // instance -> phase
  for (const std::string& t : dcgm) phase[t] = PhaseMs("http://" + t + "/metrics", 1000);
  for (const std::string& t : vllm) phase[t] = PhaseMs("http://" + t + "/metrics", 1000);
  std::size_t series = 0;
  std::size_t samples = 0;
  for (const auto& [text, s] : store.All()) {
    const std::size_t at = text.find("instance=\"");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string instance = text.substr(at + 10, text.find('"', at + 10) - at - 10);
    ASSERT_EQ(phase.count(instance), 1U) << text;
    ++series;
    for (std::size_t k = 0; k < s.size(); ++k) {
      ++samples;
      ASSERT_EQ(s[k].t_ms % 1000, phase[instance]) << text;
      if (k > 0) {
        ASSERT_EQ(s[k].t_ms - s[k - 1].t_ms, 1000) << text;
      }
    }
  }
  EXPECT_GT(series, 4U * 8 * 20);  // 4 nodes x 8 GPUs x 20+ DCGM fields, plus vLLM
  bool found = false;
  for (const auto& [text, s] : store.All()) {
    if (text.rfind("DCGM_FI_DEV_SM_CLOCK{", 0) == 0 &&
        text.find("gpu=\"7\"") != std::string::npos &&
        text.find("job=\"dcgm\"") != std::string::npos && !s.empty() && s.back().value > 0) {
      found = true;
    }
  }
  EXPECT_TRUE(found);
  const ScrapeManager::Stats st = m.stats();
  EXPECT_EQ(st.targets, 8U);
  EXPECT_EQ(st.exposition_errors, 0U);
  EXPECT_EQ(st.skipped_slots, 0U);
  EXPECT_GT(samples, series);
  live.Stop();
}

}  // namespace
}  // namespace gpucanary::scrape
