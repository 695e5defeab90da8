#include "remote/sender.h"

#include <gtest/gtest.h>
#include <snappy.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "model/labels.h"
#include "model/relabel.h"
#include "net/http_server.h"
#include "remote/receiver.h"
#include "remote/remote_write.pb.h"
#include "remote/test_util.h"
#include "remote/write_request.h"
#include "store/store.h"

namespace gpucanary::remote {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::int64_t NowMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

model::Labels Gpu(int k) {
  model::Labels l = {{"Hostname", "node-" + std::to_string(k / 8)},
                     {"__name__", "DCGM_FI_DEV_SM_CLOCK"},
                     {"gpu", std::to_string(k % 8)}};
  model::SortLabels(l);
  return l;
}

// A remote_write receiver on a real HTTP server: gpucanary's own Receiver
// into an in-memory store, behind a hook that can answer instead (an
// outage, 429, 400) or hold a request. Records what each request carried.
class TestReceiver {
 public:
  using Hook = std::function<bool(const net::HttpRequest&, net::HttpResponse&)>;

  TestReceiver() : receiver_(store_, ReceiverOptions{}) {
    net::HttpServer::Options options;
    options.threads = 4;
    options.max_body_bytes = 64 << 20;
    server_ = std::make_unique<net::HttpServer>(options);
    auto port = server_->Listen(
        "127.0.0.1", 0, [this](const net::HttpRequest& req, net::HttpResponse& resp) {
          Hook hook;
          {
            MutexLock lock(mu_);
            hook = hook_;
          }
          if (hook && hook(req, resp)) return;
          auto decoded = DecodeWriteRequest(req.body, req.Header("content-encoding"),
                                            req.Header("content-type"));
          {
            MutexLock lock(mu_);
            std::size_t n = 0;
            if (decoded) {
              for (const TimeSeries& ts : decoded->timeseries) n += ts.samples.size();
              metadata_ += decoded->metadata;
            }
            requests_.push_back(n);
            headers_ = req.headers;
          }
          resp = receiver_.Handle(req);
        });
    EXPECT_TRUE(port.has_value());
    port_ = port ? *port : 0;
    EXPECT_TRUE(server_->Start().ok());
  }
  ~TestReceiver() { server_->Stop(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/write"; }
  void set_hook(Hook hook) {
    MutexLock lock(mu_);
    hook_ = std::move(hook);
  }
  std::vector<std::size_t> requests() const {
    MutexLock lock(mu_);
    return requests_;
  }
  std::size_t metadata() const {
    MutexLock lock(mu_);
    return metadata_;
  }
  std::vector<std::pair<std::string, std::string>> headers() const {
    MutexLock lock(mu_);
    return headers_;
  }
  std::size_t SamplesStored() const {
    std::size_t n = 0;
    for (const auto& [labels, samples] : store_.All()) n += samples.size();
    return n;
  }
  const test::CaptureAppendable& store() const { return store_; }
  const Receiver& receiver() const { return receiver_; }

 private:
  test::CaptureAppendable store_;
  Receiver receiver_;
  std::unique_ptr<net::HttpServer> server_;
  std::uint16_t port_ = 0;
  mutable Mutex mu_;
  Hook hook_ GUARDED_BY(mu_);
  std::vector<std::size_t> requests_ GUARDED_BY(mu_);  // samples per request that reached it
  std::size_t metadata_ GUARDED_BY(mu_) = 0;
  std::vector<std::pair<std::string, std::string>> headers_ GUARDED_BY(mu_);
};

class SenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_sender_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    store::StoreOptions o;
    o.sync_interval_ms = 0;
    o.checkpoint_after_bytes = 64 << 10;
    o.wal_segment_bytes = 16 << 10;
    o.wal_keep_from = [this] { return keep_.load(); };
    auto s = store::Store::Open(dir_ / "data", o);
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    store_ = std::move(*s);
    t0_ = NowMs() - 600'000;
  }
  void TearDown() override {
    sender_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  SenderConfig Config() {
    SenderConfig c;
    c.name = "test";
    c.url = receiver_.url();
    c.timeout_ms = 2000;
    c.queue.shards = 3;
    c.queue.max_samples_per_send = 100;
    c.queue.batch_send_deadline_ms = 50;
    c.queue.min_backoff_ms = 10;
    c.queue.max_backoff_ms = 200;
    return c;
  }
  void StartSender(SenderConfig c, Sender::MetadataSource metadata = {}) {
    auto s = Sender::Create(
        std::move(c), dir_ / "data" / "wal", dir_ / "data" / "remote_write" / "test",
        [this](std::string_view line) {
          MutexLock lock(log_mu_);
          log_.emplace_back(line);
        },
        std::move(metadata));
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    sender_ = std::move(*s);
    keep_ = sender_->KeepFrom();
    ASSERT_TRUE(sender_->Start().ok());
  }
  // `seconds` commits of `series` series from second `from` (after t0_).
  void Write(int series, int from, int seconds) {
    auto app = store_->NewAppender();
    std::vector<store::SeriesRef> refs;
    for (int k = 0; k < series; ++k) refs.push_back(*app->Series(Gpu(k)));
    for (int i = from; i < from + seconds; ++i) {
      for (int k = 0; k < series; ++k) {
        const double v =
            i % 7 == 3 ? std::bit_cast<double>(std::uint64_t{0x7ff0000000000002}) : k * 1000.0 + i;
        ASSERT_TRUE(app->Append(refs[static_cast<std::size_t>(k)], t0_ + i * 1000LL, v).ok());
      }
      ASSERT_TRUE(app->Commit().has_value());
    }
  }
  bool WaitFor(const std::function<bool()>& done, int ms = 20'000) {
    const auto until = std::chrono::steady_clock::now() + milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(10));
      keep_ = sender_ ? sender_->KeepFrom() : UINT32_MAX;
    }
    return done();
  }
  // The receiver holds exactly seconds [from, to) of every series, bit-exact.
  void ExpectReceived(int series, int from, int to) {
    const auto all = receiver_.store().All();
    ASSERT_EQ(all.size(), static_cast<std::size_t>(series));
    for (int k = 0; k < series; ++k) {
      auto it = all.find(Gpu(k));
      ASSERT_NE(it, all.end());
      ASSERT_EQ(it->second.size(), static_cast<std::size_t>(to - from));
      for (int i = from; i < to; ++i) {
        const Sample& s = it->second[static_cast<std::size_t>(i - from)];
        ASSERT_EQ(s.timestamp_ms, t0_ + i * 1000LL);
        const double want =
            i % 7 == 3 ? std::bit_cast<double>(std::uint64_t{0x7ff0000000000002}) : k * 1000.0 + i;
        ASSERT_EQ(std::bit_cast<std::uint64_t>(s.value), std::bit_cast<std::uint64_t>(want));
      }
    }
  }
  std::size_t Received() const {
    std::size_t n = 0;
    for (std::size_t r : receiver_.requests()) n += r;
    return n;
  }
  bool Logged(std::string_view text) {
    MutexLock lock(log_mu_);
    for (const std::string& l : log_) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  }

  fs::path dir_;
  TestReceiver receiver_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Sender> sender_;
  std::atomic<std::uint32_t> keep_{UINT32_MAX};
  std::int64_t t0_ = 0;
  Mutex log_mu_;
  std::vector<std::string> log_ GUARDED_BY(log_mu_);
};

TEST(EncodeSeriesBatchTest, DecodesBackToTheSameSeriesAndBitExactSamples) {
  std::vector<SeriesBatch> batch = {
      {Gpu(1),
       {{-5, -0.0},
        {0, 0.0},
        {1764680000000, std::bit_cast<double>(std::uint64_t{0x7ff0000000000002})}}},
      {Gpu(2), {{1764680000000, 1e308}, {1764680000001, -INFINITY}}},
  };
  auto decoded = DecodeWriteRequest(EncodeSeriesBatch(batch), "snappy", "application/x-protobuf");
  ASSERT_TRUE(decoded.has_value()) << decoded.error().ToString();
  ASSERT_EQ(decoded->timeseries.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(decoded->timeseries[i].labels, batch[i].labels);
    ASSERT_EQ(decoded->timeseries[i].samples.size(), batch[i].samples.size());
    for (std::size_t j = 0; j < batch[i].samples.size(); ++j) {
      EXPECT_EQ(decoded->timeseries[i].samples[j].timestamp_ms, batch[i].samples[j].first);
      EXPECT_EQ(std::bit_cast<std::uint64_t>(decoded->timeseries[i].samples[j].value),
                std::bit_cast<std::uint64_t>(batch[i].samples[j].second));
    }
    EXPECT_TRUE(CheckSeriesLabels(decoded->timeseries[i].labels, i).ok());
  }
}

TEST_F(SenderTest, SendsEverySampleCommittedAfterItStartsExactlyOnce) {
  Write(16, 0, 10);  // before the sender: a new receiver is not sent the past
  StartSender(Config());
  Write(16, 10, 290);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 16U * 290U; }))
      << receiver_.SamplesStored();
  ExpectReceived(16, 10, 300);
  EXPECT_EQ(Received(), 16U * 290U);  // no sample reached the receiver twice
  const SenderStats st = sender_->stats();
  EXPECT_EQ(st.samples_sent, 16U * 290U);
  EXPECT_EQ(st.samples_failed, 0U);
  EXPECT_EQ(st.requests_4xx + st.requests_5xx + st.requests_error, 0U);
  EXPECT_EQ(st.highest_sent_timestamp_ms, t0_ + 299'000);
  EXPECT_TRUE(WaitFor([&] { return sender_->stats().samples_pending == 0; }));
  for (std::size_t n : receiver_.requests()) EXPECT_LE(n, 100U);
  std::map<std::string, std::string> headers;
  for (const auto& [k, v] : receiver_.headers()) headers[k] = v;
  EXPECT_EQ(headers["content-encoding"], "snappy");
  EXPECT_EQ(headers["content-type"], "application/x-protobuf");
  EXPECT_EQ(headers["x-prometheus-remote-write-version"], "0.1.0");
  EXPECT_EQ(headers["user-agent"].substr(0, 10), "gpucanary/");
}

TEST_F(SenderTest, AReceiverThatAnswers5xxOrRefusesConnectionsIsRetriedUntilItTakesAll) {
  std::atomic<int> refused{0};
  receiver_.set_hook([&](const net::HttpRequest&, net::HttpResponse& resp) {
    ++refused;
    resp.status = 503;
    resp.body = "down for maintenance\n";
    return true;
  });
  SenderConfig c = Config();
  StartSender(c);
  Write(16, 0, 100);
  ASSERT_TRUE(WaitFor([&] { return refused.load() >= 20; }));
  EXPECT_EQ(receiver_.SamplesStored(), 0U);
  EXPECT_GT(sender_->stats().samples_retried, 0U);
  EXPECT_GT(sender_->stats().requests_5xx, 0U);
  receiver_.set_hook({});
  Write(16, 100, 100);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 16U * 200U; }))
      << receiver_.SamplesStored();
  ExpectReceived(16, 0, 200);
  EXPECT_EQ(Received(), 16U * 200U);
  EXPECT_EQ(sender_->stats().samples_failed, 0U);
  EXPECT_TRUE(Logged("sending failed (HTTP 503: down for maintenance)"));
  EXPECT_TRUE(Logged("sending again after"));
}

TEST_F(SenderTest, A429IsRetriedAfterItsRetryAfter) {
  std::atomic<int> calls{0};
  receiver_.set_hook([&](const net::HttpRequest&, net::HttpResponse& resp) {
    if (calls++ > 0) return false;
    resp.status = 429;
    resp.headers.emplace_back("Retry-After", "1");
    return true;
  });
  SenderConfig c = Config();
  c.queue.shards = 1;
  StartSender(c);
  const auto start = std::chrono::steady_clock::now();
  Write(4, 0, 10);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 40U; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(1000));
  EXPECT_EQ(sender_->stats().requests_429, 1U);
  ExpectReceived(4, 0, 10);
}

TEST_F(SenderTest, A429IsDroppedWhenRetryingItIsOff) {
  receiver_.set_hook([&](const net::HttpRequest&, net::HttpResponse& resp) {
    resp.status = 429;
    return true;
  });
  SenderConfig c = Config();
  c.queue.retry_on_http_429 = false;
  c.queue.shards = 1;
  StartSender(c);
  Write(4, 0, 10);
  ASSERT_TRUE(WaitFor([&] { return sender_->stats().samples_failed == 40U; }));
  EXPECT_EQ(sender_->stats().samples_retried, 0U);
}

TEST_F(SenderTest, A400IsNotRetriedAndTheRestGoesOn) {
  std::atomic<int> calls{0};
  std::atomic<std::size_t> refused_samples{0};
  receiver_.set_hook([&](const net::HttpRequest& req, net::HttpResponse& resp) {
    if (calls++ > 0) return false;
    auto decoded = DecodeWriteRequest(req.body, "snappy", "application/x-protobuf");
    for (const TimeSeries& ts : decoded->timeseries) refused_samples += ts.samples.size();
    resp.status = 400;
    resp.body = "out of order sample\nmore detail\n";
    return true;
  });
  SenderConfig c = Config();
  c.queue.shards = 1;
  StartSender(c);
  Write(4, 0, 100);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() + refused_samples.load() == 400U; }));
  EXPECT_GT(refused_samples.load(), 0U);
  const SenderStats st = sender_->stats();
  EXPECT_EQ(st.samples_failed, refused_samples.load());
  EXPECT_EQ(st.requests_4xx, 1U);
  EXPECT_EQ(st.samples_retried, 0U);
  EXPECT_TRUE(Logged("refused, not retried: HTTP 400: out of order sample"));
}

TEST_F(SenderTest, AfterARestartItGoesOnWhereTheReceiverStoppedWithoutSendingAnythingTwice) {
  StartSender(Config());
  Write(16, 0, 100);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 1600U; }));
  ASSERT_TRUE(WaitFor([&] { return sender_->stats().samples_pending == 0; }));
  sender_.reset();
  Write(16, 100, 100);  // while no sender runs
  StartSender(Config());
  Write(16, 200, 100);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 4800U; }))
      << receiver_.SamplesStored();
  ExpectReceived(16, 0, 300);
  EXPECT_EQ(Received(), 4800U);
  EXPECT_TRUE(Logged("resuming at"));
}

// A position file that cannot be trusted never silently skips data: an
// unreadable one starts at the oldest WAL segment (samples may go twice, and
// the log says so); one written for another receiver starts at the end; a
// changed shard count starts at the smallest position.
TEST_F(SenderTest, APositionFileThatCannotBeTrustedIsLoggedAndNeverSkipsData) {
  StartSender(Config());
  Write(16, 0, 50);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 800U; }));
  ASSERT_TRUE(WaitFor([&] { return sender_->stats().samples_pending == 0; }));
  sender_.reset();
  const fs::path position = dir_ / "data" / "remote_write" / "test" / "position";
  ASSERT_TRUE(fs::exists(position));

  // Damaged: everything still in the WAL is sent again.
  std::ofstream(position) << "gpucanary remote_write position 1\nurl " << receiver_.url()
                          << "\nshards 3\n0 1 x\n";
  StartSender(Config());
  // The 800 reach the receiver again (at least once, and the log says so);
  // it refuses them as out of order, as Prometheus would.
  ASSERT_TRUE(WaitFor([&] {
    const SenderStats st = sender_->stats();
    return st.samples_sent + st.samples_failed == 800U;
  }));
  EXPECT_TRUE(Logged("cannot be read: starting at the oldest WAL segment"));
  EXPECT_EQ(Received(), 1600U);
  sender_.reset();

  // Another shard count: from the smallest position, nothing skipped.
  Write(16, 50, 10);
  SenderConfig four = Config();
  four.queue.shards = 4;
  StartSender(four);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 960U; }));
  EXPECT_TRUE(Logged("shards changed from 3 to 4"));
  sender_.reset();

  // Another receiver's file: a new receiver is not sent the past.
  std::string text;
  {
    std::ifstream in(position);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t at = text.find(receiver_.url());
  ASSERT_NE(at, std::string::npos);
  text.replace(at, receiver_.url().size(), "http://elsewhere:9090/api/v1/write");
  std::ofstream(position) << text;
  Write(16, 60, 10);
  const std::size_t before = Received();
  StartSender(Config());
  EXPECT_TRUE(
      Logged("was written for http://elsewhere:9090/api/v1/write: starting at the WAL's end"));
  Write(16, 70, 10);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 960U + 160U; }))
      << receiver_.SamplesStored();
  EXPECT_EQ(Received(), before + 160U);  // seconds 70-79 only
}

TEST_F(SenderTest, TheBatchInFlightAtAStopIsSentAgainAloneAndNothingNewIsMixedIn) {
  // The receiver takes the first batch but never answers it.
  std::atomic<bool> hold{true};
  std::atomic<std::size_t> held_samples{0};
  std::atomic<int> calls{0};
  receiver_.set_hook([&](const net::HttpRequest& req, net::HttpResponse&) {
    if (calls++ > 0 || !hold) return false;
    auto decoded = DecodeWriteRequest(req.body, "snappy", "application/x-protobuf");
    for (const TimeSeries& ts : decoded->timeseries) held_samples += ts.samples.size();
    while (hold) std::this_thread::sleep_for(milliseconds(5));
    return false;  // ... then it is stored, long after the sender gave up
  });
  SenderConfig c = Config();
  c.queue.shards = 1;
  c.timeout_ms = 300;
  c.queue.max_samples_per_send = 1000;
  c.queue.batch_send_deadline_ms = 1000;
  StartSender(c);
  Write(4, 0, 30);  // 120 samples: one partial batch, sent at the deadline
  ASSERT_TRUE(WaitFor([&] { return held_samples.load() > 0; }));
  sender_.reset();  // the answer never came: the batch stays "in flight" on disk
  hold = false;
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 120U; }));
  Write(4, 30, 30);
  const std::size_t before = receiver_.requests().size();
  StartSender(c);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 240U; }));
  const std::vector<std::size_t> requests = receiver_.requests();
  ASSERT_GE(requests.size(), before + 2);
  EXPECT_EQ(requests[before], held_samples.load());  // the same batch, alone
  ExpectReceived(4, 0, 60);
}

TEST_F(SenderTest, WriteRelabelConfigsDropSeriesBeforeSending) {
  model::RelabelConfig drop;
  drop.source_labels = {"gpu"};
  drop.regex = "[0-3]";
  drop.action = model::RelabelAction::kDrop;
  drop.source_labels_set = true;
  auto rule = model::RelabelRule::Compile(drop);
  ASSERT_TRUE(rule.has_value()) << rule.error().ToString();
  SenderConfig c = Config();
  c.write_relabel = {*rule};
  StartSender(c);
  Write(8, 0, 50);
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 200U; }));
  ASSERT_TRUE(WaitFor([&] { return sender_->stats().dropped_relabel == 200U; }));
  for (const auto& [labels, samples] : receiver_.store().All()) {
    EXPECT_GE(std::stoi(std::string(model::LabelValue(labels, "gpu"))), 4);
  }
}

TEST_F(SenderTest, MetadataIsSentEveryInterval) {
  SenderConfig c = Config();
  c.metadata.send_interval_ms = 100;
  StartSender(c, [] {
    return std::vector<FamilyMetadata>{
        {"DCGM_FI_DEV_SM_CLOCK", model::MetricType::kGauge, "SM clock frequency (in MHz).", ""},
        {"vllm:generation_tokens", model::MetricType::kCounter,
         "Number of generation tokens processed.", ""}};
  });
  ASSERT_TRUE(WaitFor([&] { return sender_->stats().metadata_sent >= 4U; }));
  EXPECT_GE(receiver_.metadata(), 4U);
  // What one request carried, read with the protobuf library.
  std::atomic<bool> seen{false};
  Mutex mu;
  std::vector<std::string> entries;
  receiver_.set_hook([&](const net::HttpRequest& req, net::HttpResponse&) {
    std::string raw;
    prompb::WriteRequest message;
    if (!snappy::Uncompress(req.body.data(), req.body.size(), &raw) ||
        !message.ParseFromString(raw) || message.metadata_size() == 0 || seen) {
      return false;
    }
    MutexLock lock(mu);
    for (const prompb::MetricMetadata& m : message.metadata()) {
      entries.push_back(m.metric_family_name() + "|" + std::to_string(m.type()) + "|" + m.help());
    }
    seen = true;
    return false;
  });
  ASSERT_TRUE(WaitFor([&] { return seen.load(); }));
  MutexLock lock(mu);
  EXPECT_EQ(entries, (std::vector<std::string>{
                         "DCGM_FI_DEV_SM_CLOCK|2|SM clock frequency (in MHz).",
                         "vllm:generation_tokens|1|Number of generation tokens processed."}));
}

TEST_F(SenderTest, TheWalANotYetAnsweredSampleIsInIsKept) {
  SenderConfig c = Config();
  receiver_.set_hook([&](const net::HttpRequest&, net::HttpResponse& resp) {
    resp.status = 503;
    return true;
  });
  StartSender(c);
  const std::uint32_t first = sender_->KeepFrom();
  Write(16, 0, 400);  // several checkpoints while the receiver is down
  ASSERT_TRUE(store_->Checkpoint().ok());
  EXPECT_EQ(sender_->KeepFrom(), first);
  receiver_.set_hook({});
  ASSERT_TRUE(WaitFor([&] { return receiver_.SamplesStored() == 6400U; }))
      << receiver_.SamplesStored();
  ExpectReceived(16, 0, 400);
  EXPECT_EQ(sender_->stats().wal_lost, 0U);
  ASSERT_TRUE(WaitFor([&] { return sender_->KeepFrom() > first; }));
}

}  // namespace
}  // namespace gpucanary::remote
