#include "remote/sender.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <snappy.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "model/labels.h"
#include "net/http_client.h"
#include "net/url.h"
#include "remote/remote_write.pb.h"
#include "store/file.h"

namespace gpucanary::remote {

namespace fs = std::filesystem;
namespace pb = ::gpucanary::remote::prompb;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kPositionMagic = "gpucanary remote_write position 1";
constexpr std::string_view kUserAgent = "gpucanary/0.1";
constexpr auto kPollEvery = std::chrono::milliseconds(50);
constexpr auto kSaveIdleEvery = std::chrono::seconds(1);
constexpr auto kPruneEvery = std::chrono::minutes(10);
// A series with no sample for this long has left the store's head (idle
// after an hour): its entry goes.
constexpr auto kSeriesIdle = std::chrono::hours(2);

// A series as the sender sends it: its labels after write_relabel_configs,
// encoded once as the protobuf of a TimeSeries holding only them.
struct SeriesEntry {
  std::string labels_pb;
  int shard = 0;
  bool dropped = false;  // by write_relabel_configs
};

struct Queued {
  std::shared_ptr<const SeriesEntry> series;
  std::int64_t t = 0;
  std::uint64_t bits = 0;
  WalPosition pos;
};

WalPosition After(const WalPosition& p) { return {p.segment, p.offset, p.index + 1}; }

std::string LabelsPb(const model::Labels& labels) {
  pb::TimeSeries ts;
  for (const model::Label& l : labels) {
    pb::Label* label = ts.add_labels();
    label->set_name(l.name);
    label->set_value(l.value);
  }
  return ts.SerializeAsString();
}

// Appends WriteRequest.timeseries entries (field 1) for the samples of
// `batch`, grouped by series in first-seen order, each series' samples in
// queue order (time order: one series is always on one shard). Concatenated
// TimeSeries encodings merge (the protobuf encoding's rule for repeated
// fields), so each entry is the series' cached labels followed by its
// samples.
std::string EncodeBody(
    const std::vector<const SeriesEntry*>& series,
    const std::vector<std::vector<std::pair<std::int64_t, std::uint64_t>>>& samples) {
  using google::protobuf::io::CodedOutputStream;
  using google::protobuf::io::StringOutputStream;
  constexpr std::uint32_t kTimeSeriesTag = (1U << 3) | 2U;  // WriteRequest.timeseries, LEN
  constexpr std::uint32_t kSampleTag = (2U << 3) | 2U;      // TimeSeries.samples, LEN
  constexpr std::uint32_t kValueTag = (1U << 3) | 1U;       // Sample.value, I64
  constexpr std::uint32_t kTimestampTag = (2U << 3) | 0U;   // Sample.timestamp, VARINT
  std::string raw;
  {
    StringOutputStream stream(&raw);
    CodedOutputStream out(&stream);
    // A Sample message: value (tag, 8 bytes) and timestamp (tag, varint).
    const auto sample_bytes = [](std::int64_t t) -> std::size_t {
      return 1 + 8 + 1 + CodedOutputStream::VarintSize64(static_cast<std::uint64_t>(t));
    };
    for (std::size_t i = 0; i < series.size(); ++i) {
      std::size_t samples_bytes = 0;
      for (const auto& [t, bits] : samples[i]) {
        const std::size_t msg = sample_bytes(t);
        samples_bytes += 1 + CodedOutputStream::VarintSize32(static_cast<std::uint32_t>(msg)) + msg;
      }
      out.WriteTag(kTimeSeriesTag);
      out.WriteVarint32(static_cast<std::uint32_t>(series[i]->labels_pb.size() + samples_bytes));
      out.WriteRaw(series[i]->labels_pb.data(), static_cast<int>(series[i]->labels_pb.size()));
      for (const auto& [t, bits] : samples[i]) {
        const std::size_t msg = sample_bytes(t);
        out.WriteTag(kSampleTag);
        out.WriteVarint32(static_cast<std::uint32_t>(msg));
        out.WriteTag(kValueTag);
        out.WriteLittleEndian64(bits);
        out.WriteTag(kTimestampTag);
        out.WriteVarint64(static_cast<std::uint64_t>(t));
      }
    }
  }
  std::string compressed;
  snappy::Compress(raw.data(), raw.size(), &compressed);
  return compressed;
}

pb::MetricMetadata::MetricType MetadataType(model::MetricType type) {
  switch (type) {
    case model::MetricType::kCounter:
      return pb::MetricMetadata::COUNTER;
    case model::MetricType::kGauge:
      return pb::MetricMetadata::GAUGE;
    case model::MetricType::kHistogram:
      return pb::MetricMetadata::HISTOGRAM;
    case model::MetricType::kGaugeHistogram:
      return pb::MetricMetadata::GAUGEHISTOGRAM;
    case model::MetricType::kSummary:
      return pb::MetricMetadata::SUMMARY;
    case model::MetricType::kInfo:
      return pb::MetricMetadata::INFO;
    case model::MetricType::kStateSet:
      return pb::MetricMetadata::STATESET;
    case model::MetricType::kUnknown:
      break;
  }
  return pb::MetricMetadata::UNKNOWN;
}

std::string FirstLine(std::string_view body) {
  const std::size_t nl = body.find('\n');
  std::string line(body.substr(0, std::min<std::size_t>(nl, 512)));
  return line;
}

bool ParsePositionLine(std::istringstream& in, WalPosition& p) {
  return static_cast<bool>(in >> p.segment >> p.offset >> p.index);
}

}  // namespace

std::string EncodeSeriesBatch(const std::vector<SeriesBatch>& series) {
  std::vector<SeriesEntry> entries(series.size());
  std::vector<const SeriesEntry*> ptrs;
  std::vector<std::vector<std::pair<std::int64_t, std::uint64_t>>> samples(series.size());
  for (std::size_t i = 0; i < series.size(); ++i) {
    entries[i].labels_pb = LabelsPb(series[i].labels);
    ptrs.push_back(&entries[i]);
    for (const auto& [t, v] : series[i].samples) {
      samples[i].emplace_back(t, std::bit_cast<std::uint64_t>(v));
    }
  }
  return EncodeBody(ptrs, samples);
}

class Sender::Impl : public WalWatcher::Handler {
 public:
  Impl(SenderConfig config, fs::path wal_dir, fs::path state_dir, Sender::Log log,
       MetadataSource metadata)
      : config_(std::move(config)),
        wal_dir_(std::move(wal_dir)),
        state_dir_(std::move(state_dir)),
        log_(std::move(log)),
        metadata_(std::move(metadata)),
        watcher_(wal_dir_) {
    if (config_.queue.shards < 1) config_.queue.shards = 1;
    for (int i = 0; i < config_.queue.shards; ++i) shards_.push_back(std::make_unique<Shard>());
  }

  ~Impl() override { Stop(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Status Init() {
    auto url = net::ParseHttpUrl(config_.url);
    if (!url) return url.error();
    url_ = *url;
    std::error_code ec;
    fs::create_directories(state_dir_, ec);
    if (ec) {
      return Status(StatusCode::kIoError, state_dir_.string() + ": " + ec.message());
    }
    LoadPosition();
    return Status::Ok();
  }

  std::uint32_t KeepFrom() const { return keep_from_.load(std::memory_order_relaxed); }

  Status Start() {
    if (started_) return Status(StatusCode::kFailedPrecondition, "already started");
    started_ = true;
    SavePosition();
    reader_ = std::thread([this] { ReaderLoop(); });
    for (auto& s : shards_) {
      Shard* shard = s.get();
      shard->thread = std::thread([this, shard] { ShardLoop(*shard); });
    }
    if (config_.metadata.send && metadata_) {
      metadata_thread_ = std::thread([this] { MetadataLoop(); });
    }
    return Status::Ok();
  }

  void RequestStop() {
    stopping_ = true;
    {
      MutexLock lock(wake_mu_);
      wake_cv_.NotifyAll();
    }
    for (auto& s : shards_) {
      MutexLock lock(s->mu);
      s->cv.NotifyAll();
    }
  }

  void Stop() {
    RequestStop();
    if (stopped_.exchange(true)) return;
    if (reader_.joinable()) reader_.join();
    for (auto& s : shards_) {
      if (s->thread.joinable()) s->thread.join();
    }
    if (metadata_thread_.joinable()) metadata_thread_.join();
    if (started_) SavePosition();
  }

  SenderStats stats() const {
    SenderStats s;
    s.samples_sent = sent_.load();
    s.samples_failed = failed_.load();
    s.samples_retried = retried_.load();
    s.dropped_relabel = dropped_relabel_.load();
    s.dropped_unknown_series = dropped_unknown_.load();
    s.wal_lost = wal_lost_.load();
    s.dropped_resent_refused = dropped_resent_.load();
    s.samples_pending = pending_.load();
    s.wal_backlog_bytes = backlog_bytes_.load();
    s.highest_sent_timestamp_ms = highest_sent_.load();
    s.requests_2xx = req_2xx_.load();
    s.requests_4xx = req_4xx_.load();
    s.requests_429 = req_429_.load();
    s.requests_5xx = req_5xx_.load();
    s.requests_error = req_error_.load();
    s.metadata_sent = metadata_sent_.load();
    s.metadata_failed = metadata_failed_.load();
    s.shards = static_cast<int>(shards_.size());
    return s;
  }

  const SenderConfig& config() const { return config_; }

  // WalWatcher::Handler, on the reader thread.
  void Series(store::SeriesRef ref, const model::Labels& labels) override {
    auto entry = std::make_shared<SeriesEntry>();
    model::Labels relabelled = labels;
    if (!config_.write_relabel.empty() && !model::Relabel(config_.write_relabel, relabelled)) {
      entry->dropped = true;
    } else {
      entry->labels_pb = LabelsPb(relabelled);
      entry->shard = static_cast<int>(model::LabelsHash(relabelled) % shards_.size());
    }
    series_[ref] = {std::move(entry), poll_started_};
  }

  bool Sample(store::SeriesRef ref, std::int64_t t, std::uint64_t bits,
              const WalPosition& pos) override {
    auto it = series_.find(ref);
    if (it == series_.end()) {
      ++dropped_unknown_;
      if (!unknown_logged_) {
        unknown_logged_ = true;
        Log("a sample of series ref " + std::to_string(ref) + " at WAL " + FormatPosition(pos) +
            " has no series record left in the WAL: dropped (counted in "
            "gpucanary_remote_write_out_samples_dropped_total{reason=\"unknown_series\"})");
      }
      return true;
    }
    it->second.last_seen = poll_started_;
    const std::shared_ptr<const SeriesEntry>& entry = it->second.entry;
    if (entry->dropped) {
      ++dropped_relabel_;
      return true;
    }
    Shard& s = *shards_[static_cast<std::size_t>(entry->shard)];
    MutexLock lock(s.mu);
    if (pos < s.acked) return true;  // answered before the restart
    while (!stopping_ && s.queue.size() >= config_.queue.capacity) s.cv.Wait(s.mu);
    if (stopping_) return false;
    if (s.queue.empty()) s.first_queued = Clock::now();
    s.queue.push_back({entry, t, bits, pos});
    ++pending_;
    // A full batch wakes the shard once; while it sends, it looks again
    // after each request.
    if (s.queue.size() == config_.queue.max_samples_per_send) s.cv.NotifyAll();
    return true;
  }

  void Lost(std::string_view what) override {
    ++wal_lost_;
    Log(std::string(what) + " (counted in gpucanary_remote_write_out_wal_lost_total)");
  }

 private:
  struct Shard {
    Mutex mu;
    CondVar cv;  // samples queued, room made, stopping
    std::deque<Queued> queue GUARDED_BY(mu);
    // Every sample of this shard before `fed` is queued or answered.
    WalPosition fed GUARDED_BY(mu);
    // Every sample of this shard before `acked` is answered.
    WalPosition acked GUARDED_BY(mu);
    // The end of the batch being sent; == acked when none is.
    WalPosition in_flight_end GUARDED_BY(mu);
    // > acked: the end of the batch that was in flight when the process
    // stopped, to be sent again alone.
    WalPosition replay_end GUARDED_BY(mu);
    Clock::time_point first_queued GUARDED_BY(mu);
    std::thread thread;
    std::unique_ptr<net::HttpConnection> conn;  // the shard's thread only
  };
  struct SeriesSlot {
    std::shared_ptr<const SeriesEntry> entry;
    Clock::time_point last_seen;
  };
  enum class Outcome { kDone, kStopped };

  void Log(const std::string& line) const {
    if (log_) log_("remote_write " + config_.name + ": " + line);
  }

  // Reads STATE_DIR/position: where each shard's receiver stands.
  void LoadPosition() {
    const fs::path path = state_dir_ / "position";
    WalPosition start;
    std::vector<std::pair<WalPosition, WalPosition>> shards;  // acked, in flight end
    std::ifstream in(path);
    if (!in) {
      start = WalWatcher::End(wal_dir_);
      Log("no position yet: starting at the WAL's end (" + FormatPosition(start) + ")");
      SetAll(start);
      return;
    }
    std::string line;
    std::string url;
    std::size_t n = 0;
    bool ok = static_cast<bool>(std::getline(in, line)) && line == kPositionMagic;
    ok = ok && static_cast<bool>(std::getline(in, line)) && line.starts_with("url ");
    if (ok) url = line.substr(4);
    ok = ok && static_cast<bool>(std::getline(in, line)) &&
         std::sscanf(line.c_str(), "shards %zu", &n) == 1 && n > 0 && n <= 100'000;
    for (std::size_t i = 0; ok && i < n; ++i) {
      ok = static_cast<bool>(std::getline(in, line));
      std::istringstream fields(line);
      std::size_t index = 0;
      WalPosition acked;
      WalPosition end;
      ok = ok && static_cast<bool>(fields >> index) && index == i &&
           ParsePositionLine(fields, acked) && ParsePositionLine(fields, end);
      shards.emplace_back(acked, end);
    }
    if (!ok) {
      start = {WalWatcher::OldestSegment(wal_dir_), 0, 0};
      Log(path.string() + " cannot be read: starting at the oldest WAL segment (" +
          FormatPosition(start) + "); samples sent before may be sent again");
      SetAll(start);
      return;
    }
    if (url != config_.url) {
      start = WalWatcher::End(wal_dir_);
      Log(path.string() + " was written for " + url + ": starting at the WAL's end (" +
          FormatPosition(start) + ")");
      SetAll(start);
      return;
    }
    start = shards.front().first;
    for (const auto& s : shards) start = std::min(start, s.first);
    if (n != shards_.size()) {
      Log("shards changed from " + std::to_string(n) + " to " + std::to_string(shards_.size()) +
          ": starting at " + FormatPosition(start) + "; samples sent before may be sent again");
      SetAll(start);
      return;
    }
    for (std::size_t i = 0; i < n; ++i) {
      Shard& s = *shards_[i];
      MutexLock lock(s.mu);
      s.acked = s.fed = s.in_flight_end = shards[i].first;
      if (shards[i].second > shards[i].first) s.replay_end = shards[i].second;
    }
    start_ = start;
    keep_from_ = start.segment;
    Log("resuming at " + FormatPosition(start));
  }

  void SetAll(const WalPosition& p) {
    for (auto& s : shards_) {
      MutexLock lock(s->mu);
      s->acked = s->fed = s->in_flight_end = p;
      s->replay_end = {};
    }
    start_ = p;
    keep_from_ = p.segment;
  }

  // Replaces STATE_DIR/position (write, rename).
  void SavePosition() {
    MutexLock lock(save_mu_);
    std::string text(kPositionMagic);
    text += "\nurl " + config_.url + "\nshards " + std::to_string(shards_.size()) + "\n";
    std::uint32_t keep = UINT32_MAX;
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      Shard& s = *shards_[i];
      WalPosition acked;
      WalPosition end;
      {
        MutexLock shard_lock(s.mu);
        acked = s.acked;
        end = std::max({s.acked, s.in_flight_end, s.replay_end});
      }
      keep = std::min(keep, acked.segment);
      char buf[160];
      std::snprintf(buf, sizeof buf, "%zu %u %llu %u %u %llu %u\n", i, acked.segment,
                    static_cast<unsigned long long>(acked.offset), acked.index, end.segment,
                    static_cast<unsigned long long>(end.offset), end.index);
      text += buf;
    }
    keep_from_ = keep;
    // Atomic against a kill -9 (rename); not synced: the WAL it points into
    // is synced once a second, and a position older than the data only
    // sends it again.
    if (Status st = store::WriteFileAtomic(state_dir_ / "position", text, /*sync=*/false);
        !st.ok()) {
      LogSaveFailure(st.message());
    }
  }

  void LogSaveFailure(const std::string& why) REQUIRES(save_mu_) {
    const auto now = Clock::now();
    if (now - save_failure_logged_ < std::chrono::minutes(1)) return;
    save_failure_logged_ = now;
    Log("position not saved (" + why + "): after a restart, samples may be sent again");
  }

  // Sleeps `d` unless Stop comes first; false when stopping.
  bool SleepFor(Clock::duration d) {
    MutexLock lock(wake_mu_);
    return !wake_cv_.WaitFor(wake_mu_, d, [this] { return stopping_.load(); });
  }

  void ReaderLoop() {
    if (Status s = watcher_.Start(start_, *this); !s.ok()) Log("reading the WAL: " + s.message());
    auto last_save = Clock::now();
    auto last_prune = Clock::now();
    bool error_logged = false;
    while (!stopping_) {
      poll_started_ = Clock::now();
      auto caught_up = watcher_.Poll(*this);
      if (!caught_up) {
        if (!error_logged) Log("reading the WAL: " + caught_up.error().message());
        error_logged = true;
        SleepFor(std::chrono::seconds(1));
        continue;
      }
      error_logged = false;
      if (!*caught_up) continue;  // stopping
      const WalPosition here = watcher_.position();
      for (auto& s : shards_) {
        MutexLock lock(s->mu);
        if (here > s->fed) {
          s->fed = here;
          s->cv.NotifyAll();
        }
      }
      backlog_bytes_ = watcher_.BytesBehind();
      const auto now = Clock::now();
      if (now - last_save >= kSaveIdleEvery) {
        SavePosition();
        last_save = now;
      }
      if (now - last_prune >= kPruneEvery) {
        std::erase_if(series_,
                      [&](const auto& kv) { return now - kv.second.last_seen > kSeriesIdle; });
        last_prune = now;
      }
      SleepFor(kPollEvery);
    }
  }

  void ShardLoop(Shard& s) {
    s.conn = NewConnection();
    const auto deadline = std::chrono::milliseconds(config_.queue.batch_send_deadline_ms);
    std::vector<Queued> batch;
    for (;;) {
      bool replay = false;
      WalPosition end;
      batch.clear();
      {
        MutexLock lock(s.mu);
        for (;;) {
          if (stopping_) return;
          const auto now = Clock::now();
          if (s.replay_end > s.acked) {
            // The batch in flight before the restart: whole once the reader
            // is past its end.
            if (s.fed >= s.replay_end || (!s.queue.empty() && s.queue.back().pos >= s.replay_end)) {
              replay = true;
              break;
            }
          } else {
            if (s.queue.empty() && s.fed > s.acked) s.acked = s.in_flight_end = s.fed;
            if (s.queue.size() >= config_.queue.max_samples_per_send) break;
            if (!s.queue.empty() && now - s.first_queued >= deadline) break;
          }
          if (s.queue.empty()) {
            s.cv.Wait(s.mu);
          } else {
            s.cv.WaitFor(s.mu, deadline - (now - s.first_queued));
          }
        }
        if (replay) {
          while (!s.queue.empty() && s.queue.front().pos < s.replay_end) {
            batch.push_back(std::move(s.queue.front()));
            s.queue.pop_front();
          }
          end = s.replay_end;
        } else {
          const std::size_t n = std::min(s.queue.size(), config_.queue.max_samples_per_send);
          for (std::size_t i = 0; i < n; ++i) {
            batch.push_back(std::move(s.queue.front()));
            s.queue.pop_front();
          }
          end = After(batch.back().pos);
        }
        s.first_queued = Clock::now();
        s.in_flight_end = end;
        s.cv.NotifyAll();  // room for the reader
      }
      if (!batch.empty()) {
        SavePosition();
        if (Send(s, batch, replay) == Outcome::kStopped) return;
        pending_ -= batch.size();
      }
      {
        MutexLock lock(s.mu);
        s.acked = s.in_flight_end = std::max(s.acked, end);
        s.replay_end = {};
      }
      SavePosition();
    }
  }

  // A kept-alive connection to the receiver (one per shard, one for metadata).
  std::unique_ptr<net::HttpConnection> NewConnection() const {
    if (!url_.https) return std::make_unique<net::HttpConnection>(url_.host, url_.port);
    return std::make_unique<net::HttpConnection>(url_.host, url_.port,
                                                 config_.tls.value_or(net::TlsClientOptions{}));
  }

  net::FetchOptions RequestOptions(std::string body) const {
    net::FetchOptions o;
    o.method = "POST";
    o.body = std::move(body);
    o.content_type = "application/x-protobuf";
    o.timeout_ms = config_.timeout_ms;
    o.accept_gzip = false;
    o.max_body_bytes = 1 << 20;
    o.headers = {{"Content-Encoding", "snappy"},
                 {"User-Agent", std::string(kUserAgent)},
                 {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
    if (!config_.authorization.empty())
      o.headers.emplace_back("Authorization", config_.authorization);
    for (const auto& h : config_.headers) o.headers.push_back(h);
    return o;
  }

  Outcome Send(Shard& s, const std::vector<Queued>& batch, bool replay) {
    // Group by series, first-seen order; a series' samples stay in order.
    std::vector<const SeriesEntry*> series;
    std::vector<std::vector<std::pair<std::int64_t, std::uint64_t>>> samples;
    std::unordered_map<const SeriesEntry*, std::size_t> index;
    std::int64_t newest = std::numeric_limits<std::int64_t>::min();
    for (const Queued& q : batch) {
      auto [it, fresh] = index.try_emplace(q.series.get(), series.size());
      if (fresh) {
        series.push_back(q.series.get());
        samples.emplace_back();
      }
      samples[it->second].emplace_back(q.t, q.bits);
      newest = std::max(newest, q.t);
    }
    const net::FetchOptions options = RequestOptions(EncodeBody(series, samples));
    auto backoff = std::chrono::milliseconds(config_.queue.min_backoff_ms);
    const auto max_backoff = std::chrono::milliseconds(config_.queue.max_backoff_ms);
    const auto failing_since = Clock::now();
    int attempts = 0;
    for (;;) {
      if (stopping_) return Outcome::kStopped;
      ++attempts;
      auto r = s.conn->Request(url_.target, options);
      std::string why;
      auto wait = backoff;
      if (!r) {
        ++req_error_;
        why = r.error().message();
      } else if (r->status >= 200 && r->status < 300) {
        ++req_2xx_;
        sent_ += batch.size();
        std::int64_t prev = highest_sent_.load();
        while (newest > prev && !highest_sent_.compare_exchange_weak(prev, newest)) {
        }
        if (attempts > 1) {
          Log("sending again after " + std::to_string(attempts - 1) + " failed attempts over " +
              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                                   failing_since)
                                 .count()) +
              " ms");
        }
        return Outcome::kDone;
      } else if (r->status == 429 && config_.queue.retry_on_http_429) {
        ++req_429_;
        why = "HTTP 429: " + FirstLine(r->body);
        double seconds = 0;
        const std::string retry_after(r->Header("retry-after"));
        if (!retry_after.empty() && std::sscanf(retry_after.c_str(), "%lf", &seconds) == 1 &&
            seconds > 0 && seconds < 3600) {
          wait =
              std::max(wait, std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000)));
        }
      } else if (r->status >= 500) {
        ++req_5xx_;
        why = "HTTP " + std::to_string(r->status) + ": " + FirstLine(r->body);
      } else {
        if (r->status == 429) {
          ++req_429_;
        } else {
          ++req_4xx_;
        }
        const std::string line = "HTTP " + std::to_string(r->status) + ": " + FirstLine(r->body);
        if (replay) {
          dropped_resent_ += batch.size();
          Log("the batch in flight before the restart (" + std::to_string(batch.size()) +
              " samples) was refused when sent again, most likely because it had been received: " +
              line);
        } else {
          failed_ += batch.size();
          Log(std::to_string(batch.size()) + " samples refused, not retried: " + line);
        }
        return Outcome::kDone;
      }
      retried_ += batch.size();
      if (attempts == 1) {
        Log("sending failed (" + why + "); retrying with backoff from " +
            std::to_string(config_.queue.min_backoff_ms) + " ms to " +
            std::to_string(config_.queue.max_backoff_ms) + " ms");
      }
      if (!SleepFor(wait)) return Outcome::kStopped;
      backoff = std::min(backoff * 2, max_backoff);
    }
  }

  void MetadataLoop() {
    std::unique_ptr<net::HttpConnection> conn = NewConnection();
    const auto every = std::chrono::milliseconds(config_.metadata.send_interval_ms);
    bool failing = false;  // logged once per run of failures
    while (SleepFor(every)) {
      std::vector<FamilyMetadata> families = metadata_();
      for (std::size_t from = 0; from < families.size();
           from += config_.queue.max_samples_per_send) {
        const std::size_t to = std::min(families.size(), from + config_.queue.max_samples_per_send);
        pb::WriteRequest request;
        for (std::size_t i = from; i < to; ++i) {
          pb::MetricMetadata* m = request.add_metadata();
          m->set_type(MetadataType(families[i].type));
          m->set_metric_family_name(families[i].family);
          m->set_help(families[i].help);
          m->set_unit(families[i].unit);
        }
        const std::string raw = request.SerializeAsString();
        std::string body;
        snappy::Compress(raw.data(), raw.size(), &body);
        auto r = conn->Request(url_.target, RequestOptions(std::move(body)));
        if (r && r->status >= 200 && r->status < 300) {
          metadata_sent_ += to - from;
          if (failing) Log("metadata sent again");
          failing = false;
        } else {
          metadata_failed_ += to - from;
          if (!failing) {
            Log("metadata not sent (" +
                (r ? "HTTP " + std::to_string(r->status) + ": " + FirstLine(r->body)
                   : r.error().message()) +
                "); trying again every " + std::to_string(config_.metadata.send_interval_ms) +
                " ms");
          }
          failing = true;
          break;
        }
      }
    }
  }

  SenderConfig config_;
  const fs::path wal_dir_;
  const fs::path state_dir_;
  const Sender::Log log_;
  const MetadataSource metadata_;
  net::HttpUrl url_;

  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};  // Stop has joined (or is joining) the threads
  bool started_ = false;
  std::thread reader_;
  std::thread metadata_thread_;
  Mutex wake_mu_;
  CondVar wake_cv_;  // Stop

  // The reader thread's (and Init's, before it starts).
  WalWatcher watcher_;
  WalPosition start_;
  std::unordered_map<store::SeriesRef, SeriesSlot> series_;
  Clock::time_point poll_started_ = Clock::now();  // a series' last_seen: no clock read per sample
  bool unknown_logged_ = false;

  Mutex save_mu_;  // taken before a shard's mu
  Clock::time_point save_failure_logged_ GUARDED_BY(save_mu_){};
  std::atomic<std::uint32_t> keep_from_{UINT32_MAX};

  std::atomic<std::uint64_t> sent_{0}, failed_{0}, retried_{0}, dropped_relabel_{0},
      dropped_unknown_{0}, wal_lost_{0}, dropped_resent_{0}, pending_{0}, backlog_bytes_{0},
      req_2xx_{0}, req_4xx_{0}, req_429_{0}, req_5xx_{0}, req_error_{0}, metadata_sent_{0},
      metadata_failed_{0};
  std::atomic<std::int64_t> highest_sent_{0};
};

Result<std::unique_ptr<Sender>> Sender::Create(SenderConfig config, fs::path wal_dir,
                                               fs::path state_dir, Log log,
                                               MetadataSource metadata) {
  auto impl = std::make_unique<Impl>(std::move(config), std::move(wal_dir), std::move(state_dir),
                                     std::move(log), std::move(metadata));
  if (Status s = impl->Init(); !s.ok()) return Error(s);
  return std::unique_ptr<Sender>(new Sender(std::move(impl)));
}

Sender::Sender(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sender::~Sender() { Stop(); }
std::uint32_t Sender::KeepFrom() const { return impl_->KeepFrom(); }
Status Sender::Start() { return impl_->Start(); }
void Sender::Stop() { impl_->Stop(); }
void Sender::RequestStop() { impl_->RequestStop(); }
SenderStats Sender::stats() const { return impl_->stats(); }
const SenderConfig& Sender::config() const { return impl_->config(); }

}  // namespace gpucanary::remote
