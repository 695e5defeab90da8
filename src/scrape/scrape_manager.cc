#include "scrape/scrape_manager.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <exception>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/mutex.h"
#include "net/gzip.h"
#include "net/tls_context.h"
#include "scrape/connection.h"
#include "scrape/ingester.h"

namespace gpucanary::scrape {
namespace {

namespace asio = boost::asio;
using ErrorCode = boost::system::error_code;

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::min();

// One target as the scraper runs it. Owned by the io thread (and, while its
// ingest runs on a worker, by that worker: `in_flight` sequences them).
struct TargetRun {
  std::uint64_t id = 0;
  std::string key;  // Target::Key() and the job settings that shape scraping
  Target target;
  JobConfig job;
  std::shared_ptr<net::AsyncConnection> conn;
  // Why an https target cannot be scraped (its job's tls_config files
  // failed to load); each scrape then fails with it.
  Status tls_error;
  internal::ScrapeRequest request;
  std::unique_ptr<Ingester> ingester;
  bool fast = false;
  std::int64_t interval_ms = 0;
  std::int64_t phase_ms = 0;
  std::int64_t last_slot_ms = kNever;  // the scheduled time of the last scrape started
  std::uint64_t gen = 0;               // invalidates older heap entries
  bool in_flight = false;
  bool removed = false;
  bool ended = false;  // EndOfRun written
};

// A slot in the schedule heap; stale once the target's gen moved on.
struct Due {
  std::int64_t ms;
  std::uint64_t id;
  std::uint64_t gen;
  bool operator>(const Due& o) const { return ms > o.ms; }
};

// The job's metric_relabel_configs as text (the ingester applies them).
std::string MetricRelabelFingerprint(const JobConfig& j) {
  std::string out;
  for (const model::RelabelRule& r : j.metric_relabel_configs) {
    const model::RelabelConfig& c = r.config();
    out += '\n';
    out += model::RelabelActionName(c.action);
    for (const std::string& l : c.source_labels) out += "\x1f" + l;
    out += "\x1e" + c.separator + "\x1e" + c.regex.value_or("\x1d") + "\x1e" + c.target_label +
           "\x1e" + c.replacement + "\x1e" + std::to_string(c.modulus);
  }
  return out;
}

std::string TlsFingerprint(const net::TlsClientOptions& t) {
  return t.ca_file + "\x1f" + t.cert_file + "\x1f" + t.key_file + "\x1f" + t.server_name +
         (t.insecure_skip_verify ? "\x1fI" : "\x1fV");
}

// What besides the target's identity decides how it is scraped: a change
// makes it a new target (Prometheus restarts a job's loops on such changes).
std::string JobFingerprint(const JobConfig& j) {
  const ScrapeLimits& l = j.limits;
  return std::to_string(j.scrape_interval_ms) + "/" + std::to_string(j.scrape_timeout_ms) + "/" +
         (j.honor_labels ? "L" : "l") + (j.honor_timestamps ? "T" : "t") + "/" +
         std::to_string(l.sample_limit) + "/" + std::to_string(l.label_limit) + "/" +
         std::to_string(l.label_name_length_limit) + "/" +
         std::to_string(l.label_value_length_limit) + "/" + std::to_string(l.body_size_limit) +
         "/" + TlsFingerprint(j.tls_config) + MetricRelabelFingerprint(j);
}

// The most body bytes a target's scrape takes (decoded): its job's
// body_size_limit within the scraper's own limit.
std::size_t BodyLimit(const JobConfig& job, std::size_t scraper_limit) {
  const std::uint64_t job_limit = job.limits.body_size_limit;
  return job_limit > 0 && job_limit < scraper_limit ? static_cast<std::size_t>(job_limit)
                                                    : scraper_limit;
}

// Prometheus: "body size limit exceeded" fails the scrape.
ScrapeOutcome BodyTooLarge(TargetRun& run, std::int64_t slot, double duration_s,
                           std::size_t limit) {
  const bool job_limit = run.job.limits.body_size_limit == limit;
  ScrapeOutcome o = run.ingester->Fail(
      Status(StatusCode::kOutOfRange,
             "GET " + run.target.url + ": body size limit exceeded: more than " +
                 std::to_string(limit) + " bytes" + (job_limit ? " (body_size_limit)" : "")),
      slot, duration_s);
  o.exceeded = LimitExceeded::kBodySizeLimit;
  return o;
}

// Decodes and ingests one fetch (any thread: the target's ingest is ours
// while it is in flight).
ScrapeOutcome IngestFetch(TargetRun& run, std::int64_t slot, net::FetchResult& r,
                          std::size_t scraper_limit) {
  Ingester& in = *run.ingester;
  const std::size_t body_limit = BodyLimit(run.job, scraper_limit);
  // The connection reports a body over the limit as kOutOfRange.
  if (r.error.code() == StatusCode::kOutOfRange) {
    return BodyTooLarge(run, slot, r.duration_s, body_limit);
  }
  if (!r.error.ok()) return in.Fail(r.error, slot, r.duration_s);
  if (r.status != 200) {
    return in.Fail(Status(StatusCode::kUnavailable, "GET " + run.target.url +
                                                        ": server returned HTTP status " +
                                                        std::to_string(r.status)),
                   slot, r.duration_s);
  }
  std::string_view body = r.body;
  std::string decoded;
  if (r.gzip) {
    Result<std::string> d = net::GzipDecompress(r.body, body_limit);
    if (!d && d.error().code() == StatusCode::kOutOfRange) {
      return BodyTooLarge(run, slot, r.duration_s, body_limit);
    }
    if (!d) return in.Fail(d.error().WithPrefix("GET " + run.target.url), slot, r.duration_s);
    decoded = std::move(*d);
    body = decoded;
  }
  return in.Ingest(body, FormatForContentType(r.content_type), slot, r.duration_s);
}

double ThreadCpuSeconds(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

std::string_view TargetHealthName(TargetHealth health) {
  switch (health) {
    case TargetHealth::kUp:
      return "up";
    case TargetHealth::kDown:
      return "down";
    case TargetHealth::kUnknown:
      break;
  }
  return "unknown";
}

class ScrapeManager::Impl {
 public:
  Impl(store::Appendable& store, Clock& clock, Options options);
  ~Impl() {
    try {
      Stop();
    } catch (...) {  // only a broken thread or mutex could throw here; nothing to save
    }
  }

  Status ApplyConfig(const ScrapeConfig& config);
  Status Start();
  void Stop();
  Status ReloadDiscovery();
  void SetFast(const std::string& key, TargetMatcher matcher);
  void ClearFast(const std::string& key);
  std::vector<TargetStatus> Targets() const;
  std::vector<Discovery::SourceStatus> DiscoverySources() const;
  std::vector<MetricMetadata> Metadata() const;
  Stats stats() const;

 private:
  using RunPtr = std::shared_ptr<TargetRun>;

  // Runs `fn` on the io thread and waits for it; nothing after Stop.
  void RunOnIo(const std::function<void()>& fn);
  std::shared_ptr<Discovery> discovery() const {
    MutexLock lock(discovery_mu_);
    return discovery_;
  }

  // On the io thread:
  void SyncJob(const JobConfig& job, std::vector<Target> targets);
  void RemoveJobsNotIn(const ScrapeConfig& config);
  // `tls`: the job's TLS context for an https target (or why there is
  // none); null for http.
  void Add(Target target, const JobConfig& job, std::string key, std::int64_t after_ms,
           const Result<std::shared_ptr<const net::ClientTls>>* tls);
  void Remove(const RunPtr& run);
  void EndRun(TargetRun& run);
  bool IsFast(const Target& t) const;
  void SetInterval(TargetRun& run);
  void Refit(const RunPtr& run);
  void Schedule(TargetRun& run, std::int64_t slot_ms);
  void Arm();
  void OnTimer();
  void StartScrape(const RunPtr& run, std::int64_t slot, std::int64_t now);
  void OnFetched(const RunPtr& run, std::int64_t slot, net::FetchResult r);
  void Complete(const RunPtr& run, std::int64_t slot, const ScrapeOutcome& o, bool timed_out,
                double duration_s);
  void NoteInFlight(int delta);

  store::Appendable& store_;
  Clock& clock_;
  const Options options_;

  asio::io_context ioc_{1};
  asio::executor_work_guard<asio::io_context::executor_type> work_{ioc_.get_executor()};
  asio::steady_timer timer_{ioc_};
  std::optional<asio::thread_pool> pool_;
  std::thread io_thread_;
  pthread_t io_handle_{};  // for its CPU clock, valid until joined
  std::atomic<double> io_cpu_at_exit_{0};
  mutable Mutex io_cpu_mu_;
  bool io_joined_ GUARDED_BY(io_cpu_mu_) = false;

  // Io thread only.
  std::unordered_map<std::string, RunPtr> by_key_;
  std::unordered_map<std::uint64_t, RunPtr> by_id_;
  // Removed targets whose fetch is still in flight (io thread only): their
  // only other owner is that fetch's callback.
  std::unordered_map<std::uint64_t, RunPtr> draining_;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> heap_;
  std::map<std::string, TargetMatcher> fast_;
  std::int64_t fast_interval_ms_ = 1000;
  std::uint64_t next_id_ = 0;
  bool scraping_ = false;

  Mutex control_mu_;  // serialises ApplyConfig, Start, Stop, ReloadDiscovery
  mutable Mutex discovery_mu_;
  std::shared_ptr<Discovery> discovery_ GUARDED_BY(discovery_mu_);

  Mutex post_mu_;
  bool io_stopped_ GUARDED_BY(post_mu_) = false;
  bool started_ GUARDED_BY(control_mu_) = false;

  mutable Mutex status_mu_;
  std::map<std::uint64_t, TargetStatus> status_ GUARDED_BY(status_mu_);
  // Each target's ingester, for Metadata(): removed before the run goes.
  std::map<std::uint64_t, const Ingester*> ingesters_ GUARDED_BY(status_mu_);
  // Targets per `instance` value, and Instances()'s snapshot of its keys
  // (null: to be rebuilt, the set changed).
  std::map<std::string, std::size_t, std::less<>> instance_counts_ GUARDED_BY(status_mu_);
  mutable std::shared_ptr<const std::vector<std::string>> instances_ GUARDED_BY(status_mu_);

 public:
  std::shared_ptr<const std::vector<std::string>> Instances() const {
    MutexLock lock(status_mu_);
    if (instances_ == nullptr) {
      auto keys = std::make_shared<std::vector<std::string>>();
      keys->reserve(instance_counts_.size());
      for (const auto& [instance, count] : instance_counts_) keys->push_back(instance);
      instances_ = std::move(keys);
    }
    return instances_;
  }

 private:
  std::atomic<std::uint64_t> scrapes_{0}, failures_{0}, timeouts_{0}, exposition_errors_{0},
      skipped_{0}, samples_{0}, stale_{0}, in_flight_{0}, max_in_flight_{0}, ingest_cpu_ns_{0};
  std::atomic<std::uint64_t> exceeded_sample_limit_{0}, exceeded_label_limits_{0},
      exceeded_body_size_limit_{0}, duplicate_samples_{0}, out_of_bounds_{0}, store_rejected_{0};
};

ScrapeManager::Impl::Impl(store::Appendable& store, Clock& clock, Options options)
    : store_(store), clock_(clock), options_(std::move(options)) {
  GC_CHECK(options_.ingest_threads >= 0 && options_.ingest_threads <= 64,
           "ScrapeManager: ingest_threads must be 0..64");
  GC_CHECK(options_.clock_poll_ms >= 1 && options_.clock_poll_ms <= 1000,
           "ScrapeManager: clock_poll_ms must be 1..1000");
  if (options_.ingest_threads > 0) {
    pool_.emplace(static_cast<std::size_t>(options_.ingest_threads));
  }
  io_thread_ = std::thread([this] {
    while (true) {
      try {
        ioc_.run();
        break;
      } catch (const std::exception&) {
        // Only allocation failures can get here; the scrape that threw is
        // lost, the others go on.
      }
    }
    io_cpu_at_exit_.store(ThreadCpuSeconds(CLOCK_THREAD_CPUTIME_ID));
  });
  io_handle_ = io_thread_.native_handle();
}

void ScrapeManager::Impl::RunOnIo(const std::function<void()>& fn) {
  GC_CHECK(std::this_thread::get_id() != io_thread_.get_id(),
           "ScrapeManager called from its own io thread (a TargetMatcher?)");
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  {
    MutexLock lock(post_mu_);
    if (io_stopped_) return;
    asio::post(ioc_, [&] {
      fn();
      done.set_value();
    });
  }
  finished.wait();
}

Status ScrapeManager::Impl::ApplyConfig(const ScrapeConfig& config) {
  MutexLock control(control_mu_);
  if (std::shared_ptr<Discovery> old = discovery()) old->Stop();
  RunOnIo([&] {
    RemoveJobsNotIn(config);
    if (fast_interval_ms_ == config.global.fast_interval_ms) return;
    fast_interval_ms_ = config.global.fast_interval_ms;
    for (auto& [id, run] : by_id_) {
      if (!run->fast) continue;
      run->fast = false;  // so that Refit moves it to the new fast schedule
      Refit(run);
    }
    Arm();
  });
  auto d = std::make_shared<Discovery>(
      config, clock_,
      [this](const JobConfig& job, std::vector<Target> targets) {
        RunOnIo([&] { SyncJob(job, std::move(targets)); });
      },
      options_.discovery);
  {
    MutexLock lock(discovery_mu_);
    discovery_ = d;
  }
  Status first = d->RefreshNow();
  if (started_) d->Start();
  return first;
}

Status ScrapeManager::Impl::Start() {
  MutexLock control(control_mu_);
  {
    MutexLock lock(post_mu_);
    if (io_stopped_) return Error(StatusCode::kUnavailable, "ScrapeManager: stopped");
  }
  if (started_) return Status::Ok();
  started_ = true;
  RunOnIo([&] {
    scraping_ = true;
    Arm();
  });
  if (std::shared_ptr<Discovery> d = discovery()) d->Start();
  return Status::Ok();
}

void ScrapeManager::Impl::Stop() {
  MutexLock control(control_mu_);
  if (std::shared_ptr<Discovery> d = discovery()) d->Stop();
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  {
    MutexLock lock(post_mu_);
    if (io_stopped_) return;
    io_stopped_ = true;
    // Runs after every RunOnIo posted before it (FIFO), so no caller waits forever.
    asio::post(ioc_, [&] {
      scraping_ = false;
      timer_.cancel();
      for (auto& [id, run] : by_id_) run->conn->Close();
      done.set_value();
    });
  }
  finished.wait();
  if (pool_) pool_->join();  // ingests under way finish; their completions are dropped
  work_.reset();
  ioc_.stop();
  MutexLock lock(io_cpu_mu_);
  if (io_thread_.joinable()) io_thread_.join();
  io_joined_ = true;
  // ioc_.stop() can leave a cancelled fetch's completion unrun: its
  // connection then still holds the callback, which holds the target, which
  // holds the connection. Dropping the targets' connections breaks that
  // cycle; each connection goes when the io_context drops its handlers.
  for (auto& [id, run] : by_id_) run->conn.reset();
  for (auto& [id, run] : draining_) run->conn.reset();
  draining_.clear();
}

Status ScrapeManager::Impl::ReloadDiscovery() {
  MutexLock control(control_mu_);
  std::shared_ptr<Discovery> d = discovery();
  if (d == nullptr) return Status::Ok();
  return d->RefreshNow();
}

void ScrapeManager::Impl::SetFast(const std::string& key, TargetMatcher matcher) {
  RunOnIo([&] {
    fast_[key] = std::move(matcher);
    for (auto& [id, run] : by_id_) Refit(run);
    Arm();
  });
}

void ScrapeManager::Impl::ClearFast(const std::string& key) {
  RunOnIo([&] {
    if (fast_.erase(key) == 0) return;
    for (auto& [id, run] : by_id_) Refit(run);
    Arm();
  });
}

// ---- the io thread ----

void ScrapeManager::Impl::SyncJob(const JobConfig& job, std::vector<Target> targets) {
  const std::string fingerprint = JobFingerprint(job);
  std::unordered_set<std::string> keep;
  // Loaded once per update, for the job's new https targets (those already
  // running keep the context they were made with).
  std::optional<Result<std::shared_ptr<const net::ClientTls>>> tls;
  // A target whose job settings changed gets a new run; it goes on after the
  // last slot the old run scraped, not again at that slot (whose samples, and
  // the old run's stale markers just after it, are already written).
  std::unordered_map<std::string, std::int64_t> last_slot;
  for (const auto& [key, run] : by_key_) {
    if (run->job.job_name != job.job_name || run->last_slot_ms == kNever) continue;
    std::int64_t& last = last_slot[run->target.Key()];
    last = std::max(last, run->last_slot_ms);
  }
  const std::int64_t now = clock_.NowMs();
  for (Target& t : targets) {
    std::string key = t.Key() + "\n" + fingerprint;
    if (!keep.insert(key).second || by_key_.count(key) != 0) continue;
    std::int64_t after = now;
    if (auto it = last_slot.find(t.Key()); it != last_slot.end()) {
      after = std::max(after, it->second + 1);
    }
    const bool https = t.https;
    if (https && !tls) tls = net::NewClientTls(job.tls_config);
    Add(std::move(t), job, std::move(key), after, https ? &*tls : nullptr);
  }
  std::vector<RunPtr> gone;
  for (const auto& [key, run] : by_key_) {
    if (run->job.job_name == job.job_name && keep.count(key) == 0) gone.push_back(run);
  }
  for (const RunPtr& run : gone) Remove(run);
  Arm();
}

void ScrapeManager::Impl::RemoveJobsNotIn(const ScrapeConfig& config) {
  std::vector<RunPtr> gone;
  for (const auto& entry : by_key_) {
    const std::string& job = entry.second->job.job_name;
    const bool kept = std::any_of(config.jobs.begin(), config.jobs.end(),
                                  [&](const JobConfig& j) { return j.job_name == job; });
    if (!kept) gone.push_back(entry.second);
  }
  for (const RunPtr& run : gone) Remove(run);
}

void ScrapeManager::Impl::Add(Target target, const JobConfig& job, std::string key,
                              std::int64_t after_ms,
                              const Result<std::shared_ptr<const net::ClientTls>>* tls) {
  auto run = std::make_shared<TargetRun>();
  run->id = ++next_id_;
  run->key = std::move(key);
  run->job = job;
  std::shared_ptr<const net::ClientTls> context;
  if (tls != nullptr && *tls) context = **tls;
  if (tls != nullptr && !*tls) run->tls_error = tls->error().WithPrefix("GET " + target.url);
  run->conn = internal::NewConnection(ioc_, target, std::move(context));
  run->request = internal::ScrapeRequest(target, options_.user_agent,
                                         BodyLimit(job, options_.body_limit_bytes));
  run->ingester = std::make_unique<Ingester>(store_, target.labels,
                                             IngestOptions{job.honor_labels, job.honor_timestamps,
                                                           job.metric_relabel_configs, job.limits});
  run->target = std::move(target);
  run->fast = IsFast(run->target);
  {
    MutexLock lock(status_mu_);
    ingesters_[run->id] = run->ingester.get();
    TargetStatus& s = status_[run->id];
    s.job = job.job_name;
    s.url = run->target.url;
    s.labels = run->target.labels;
    const std::string_view instance = model::LabelValue(s.labels, "instance");
    if (!instance.empty() && instance_counts_[std::string(instance)]++ == 0) instances_.reset();
  }
  SetInterval(*run);
  by_key_[run->key] = run;
  by_id_[run->id] = run;
  Schedule(*run, SlotAtOrAfter(run->phase_ms, run->interval_ms, after_ms));
}

void ScrapeManager::Impl::Remove(const RunPtr& run) {
  run->removed = true;
  by_key_.erase(run->key);
  by_id_.erase(run->id);
  {
    MutexLock lock(status_mu_);
    ingesters_.erase(run->id);
    if (auto it = status_.find(run->id); it != status_.end()) {
      const std::string_view instance = model::LabelValue(it->second.labels, "instance");
      auto count = instance_counts_.find(instance);
      if (count != instance_counts_.end() && --count->second == 0) {
        instance_counts_.erase(count);
        instances_.reset();
      }
      status_.erase(it);
    }
  }
  run->conn->Close();  // a fetch in flight completes at once, cancelled
  if (run->in_flight) {
    draining_[run->id] = run;
  } else {
    EndRun(*run);
  }
}

// Prometheus writes stale markers for every series of a target that
// discovery dropped ("end of run staleness"); we write them now rather than
// two intervals later, so a query sees the target gone at once.
void ScrapeManager::Impl::EndRun(TargetRun& run) {
  if (run.ended) return;
  run.ended = true;
  const std::int64_t t =
      run.last_slot_ms == kNever ? clock_.NowMs() : std::max(clock_.NowMs(), run.last_slot_ms + 1);
  run.ingester->EndOfRun(t);
}

bool ScrapeManager::Impl::IsFast(const Target& t) const {
  return std::any_of(fast_.begin(), fast_.end(), [&](const auto& f) { return f.second(t); });
}

void ScrapeManager::Impl::SetInterval(TargetRun& run) {
  run.interval_ms =
      run.fast ? std::min(fast_interval_ms_, run.target.interval_ms) : run.target.interval_ms;
  run.phase_ms = PhaseMs(run.target.url, run.interval_ms);
  MutexLock lock(status_mu_);
  auto it = status_.find(run.id);
  if (it == status_.end()) return;
  it->second.fast = run.fast;
  it->second.interval_ms = run.interval_ms;
  it->second.timeout_ms = std::min(run.target.timeout_ms, run.interval_ms);
}

// A canary started or ended: the target moves to the other schedule from
// that schedule's next slot on, keeping its connection and cache.
void ScrapeManager::Impl::Refit(const RunPtr& run) {
  const bool fast = IsFast(run->target);
  if (fast == run->fast) return;
  run->fast = fast;
  SetInterval(*run);
  std::int64_t after = clock_.NowMs();
  if (run->last_slot_ms != kNever) after = std::max(after, run->last_slot_ms + 1);
  Schedule(*run, SlotAtOrAfter(run->phase_ms, run->interval_ms, after));
}

void ScrapeManager::Impl::Schedule(TargetRun& run, std::int64_t slot_ms) {
  ++run.gen;
  heap_.push(Due{slot_ms, run.id, run.gen});
  MutexLock lock(status_mu_);
  auto it = status_.find(run.id);
  if (it != status_.end()) it->second.next_scrape_ms = slot_ms;
}

// One timer for every target: it fires at the earliest slot, or after
// clock_poll_ms to look at the Clock again (a ManualClock moves by itself).
void ScrapeManager::Impl::Arm() {
  if (!scraping_) return;
  std::int64_t wait = options_.clock_poll_ms;
  while (!heap_.empty()) {
    const Due& d = heap_.top();
    auto it = by_id_.find(d.id);
    if (it == by_id_.end() || it->second->gen != d.gen) {
      heap_.pop();
      continue;
    }
    wait = std::clamp<std::int64_t>(d.ms - clock_.NowMs(), 0, options_.clock_poll_ms);
    break;
  }
  timer_.expires_after(std::chrono::milliseconds(wait));
  timer_.async_wait([this](ErrorCode ec) {
    if (!ec) OnTimer();
  });
}

void ScrapeManager::Impl::OnTimer() {
  if (!scraping_) return;
  const std::int64_t now = clock_.NowMs();
  while (!heap_.empty() && heap_.top().ms <= now) {
    const Due d = heap_.top();
    heap_.pop();
    auto it = by_id_.find(d.id);
    if (it == by_id_.end() || it->second->gen != d.gen) continue;
    StartScrape(it->second, d.ms, now);
  }
  Arm();
}

void ScrapeManager::Impl::StartScrape(const RunPtr& run, std::int64_t slot, std::int64_t now) {
  std::uint64_t skipped = 0;
  if (now - slot >= run->interval_ms) {
    // A whole interval late (a stalled process, a clock jump): scrape for
    // the latest slot, not for every one missed.
    std::int64_t latest = SlotAtOrAfter(run->phase_ms, run->interval_ms, now);
    if (latest > now) latest -= run->interval_ms;
    skipped = static_cast<std::uint64_t>((latest - slot) / run->interval_ms);
    slot = latest;
  }
  Schedule(*run, slot + run->interval_ms);
  if (run->in_flight) ++skipped;
  if (skipped > 0) {
    skipped_.fetch_add(skipped, std::memory_order_relaxed);
    MutexLock lock(status_mu_);
    status_[run->id].skipped_slots += skipped;
  }
  if (run->in_flight) return;
  run->in_flight = true;
  run->last_slot_ms = slot;
  NoteInFlight(+1);
  if (!run->tls_error.ok()) {
    // Posted: OnFetched never runs inside the scrape that started it.
    net::FetchResult r;
    r.error = run->tls_error;
    asio::post(ioc_, [this, run, slot, r = std::move(r)]() mutable {
      OnFetched(run, slot, std::move(r));
    });
    return;
  }
  const std::chrono::milliseconds timeout(std::min(run->target.timeout_ms, run->interval_ms));
  run->conn->Fetch(run->request.WithTimeout(timeout), timeout,
                   [this, run, slot](net::FetchResult r) { OnFetched(run, slot, std::move(r)); });
}

void ScrapeManager::Impl::OnFetched(const RunPtr& run, std::int64_t slot, net::FetchResult r) {
  if (run->removed || !scraping_) {
    // Cut short by Stop: nothing is written (a restart continues the series).
    run->in_flight = false;
    NoteInFlight(-1);
    if (run->removed) {
      EndRun(*run);
      draining_.erase(run->id);
    }
    return;
  }
  if (!pool_) {
    const ScrapeOutcome o = IngestFetch(*run, slot, r, options_.body_limit_bytes);
    Complete(run, slot, o, r.timed_out, r.duration_s);
    return;
  }
  asio::post(*pool_, [this, run, slot, r = std::move(r)]() mutable {
    const double cpu0 = ThreadCpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    ScrapeOutcome o = IngestFetch(*run, slot, r, options_.body_limit_bytes);
    const double cpu = ThreadCpuSeconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    ingest_cpu_ns_.fetch_add(static_cast<std::uint64_t>(cpu * 1e9), std::memory_order_relaxed);
    asio::post(ioc_,
               [this, run, slot, o = std::move(o), timed_out = r.timed_out,
                duration_s = r.duration_s] { Complete(run, slot, o, timed_out, duration_s); });
  });
}

void ScrapeManager::Impl::Complete(const RunPtr& run, std::int64_t slot, const ScrapeOutcome& o,
                                   bool timed_out, double duration_s) {
  run->in_flight = false;
  NoteInFlight(-1);
  if (run->removed) {
    EndRun(*run);
    draining_.erase(run->id);
    return;
  }
  scrapes_.fetch_add(1, std::memory_order_relaxed);
  samples_.fetch_add(o.samples, std::memory_order_relaxed);
  stale_.fetch_add(o.stale_markers, std::memory_order_relaxed);
  if (!o.up) failures_.fetch_add(1, std::memory_order_relaxed);
  if (timed_out) timeouts_.fetch_add(1, std::memory_order_relaxed);
  if (o.exposition_error) exposition_errors_.fetch_add(1, std::memory_order_relaxed);
  switch (o.exceeded) {
    case LimitExceeded::kSampleLimit:
      exceeded_sample_limit_.fetch_add(1, std::memory_order_relaxed);
      break;
    case LimitExceeded::kLabelLimits:
      exceeded_label_limits_.fetch_add(1, std::memory_order_relaxed);
      break;
    case LimitExceeded::kBodySizeLimit:
      exceeded_body_size_limit_.fetch_add(1, std::memory_order_relaxed);
      break;
    case LimitExceeded::kNone:
      break;
  }
  duplicate_samples_.fetch_add(o.duplicates, std::memory_order_relaxed);
  out_of_bounds_.fetch_add(o.out_of_bounds, std::memory_order_relaxed);
  store_rejected_.fetch_add(o.rejected, std::memory_order_relaxed);
  MutexLock lock(status_mu_);
  TargetStatus& s = status_[run->id];
  s.health = o.up ? TargetHealth::kUp : TargetHealth::kDown;
  s.last_scrape_ms = slot;
  s.last_duration_s = duration_s;
  s.last_error = o.error.ok() ? std::string() : o.error.message();
  ++s.scrapes;
  if (!o.up) ++s.failures;
  if (o.exposition_error) ++s.exposition_errors;
  s.last_samples = o.samples;
  s.store_rejected += o.rejected;
  s.duplicate_samples += o.duplicates;
  if (!o.store_error.ok()) s.last_store_error = o.store_error.message();
}

void ScrapeManager::Impl::NoteInFlight(int delta) {
  if (delta < 0) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  const std::uint64_t now = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
  std::uint64_t max = max_in_flight_.load(std::memory_order_relaxed);
  while (now > max && !max_in_flight_.compare_exchange_weak(max, now)) {
  }
}

// ---- snapshots ----

std::vector<TargetStatus> ScrapeManager::Impl::Targets() const {
  std::vector<TargetStatus> out;
  {
    MutexLock lock(status_mu_);
    out.reserve(status_.size());
    for (const auto& [id, s] : status_) out.push_back(s);
  }
  const auto label_less = [](const model::Label& a, const model::Label& b) {
    return std::tie(a.name, a.value) < std::tie(b.name, b.value);
  };
  std::sort(out.begin(), out.end(), [&](const TargetStatus& a, const TargetStatus& b) {
    if (a.job != b.job) return a.job < b.job;
    if (a.url != b.url) return a.url < b.url;
    return std::lexicographical_compare(a.labels.begin(), a.labels.end(), b.labels.begin(),
                                        b.labels.end(), label_less);
  });
  return out;
}

std::vector<MetricMetadata> ScrapeManager::Impl::Metadata() const {
  std::vector<MetricMetadata> out;
  {
    MutexLock lock(status_mu_);
    for (const auto& [id, ingester] : ingesters_) {
      if (auto m = ingester->metadata()) out.insert(out.end(), m->begin(), m->end());
    }
  }
  const auto key = [](const MetricMetadata& m) {
    return std::tie(m.family, m.type, m.help, m.unit);
  };
  std::sort(out.begin(), out.end(),
            [&](const MetricMetadata& a, const MetricMetadata& b) { return key(a) < key(b); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<Discovery::SourceStatus> ScrapeManager::Impl::DiscoverySources() const {
  std::shared_ptr<Discovery> d = discovery();
  return d == nullptr ? std::vector<Discovery::SourceStatus>() : d->Sources();
}

ScrapeManager::Stats ScrapeManager::Impl::stats() const {
  Stats s;
  s.scrapes = scrapes_.load(std::memory_order_relaxed);
  s.failures = failures_.load(std::memory_order_relaxed);
  s.timeouts = timeouts_.load(std::memory_order_relaxed);
  s.exposition_errors = exposition_errors_.load(std::memory_order_relaxed);
  s.skipped_slots = skipped_.load(std::memory_order_relaxed);
  s.samples = samples_.load(std::memory_order_relaxed);
  s.stale_markers = stale_.load(std::memory_order_relaxed);
  s.exceeded_sample_limit = exceeded_sample_limit_.load(std::memory_order_relaxed);
  s.exceeded_label_limits = exceeded_label_limits_.load(std::memory_order_relaxed);
  s.exceeded_body_size_limit = exceeded_body_size_limit_.load(std::memory_order_relaxed);
  s.duplicate_samples = duplicate_samples_.load(std::memory_order_relaxed);
  s.out_of_bounds_samples = out_of_bounds_.load(std::memory_order_relaxed);
  s.store_rejected = store_rejected_.load(std::memory_order_relaxed);
  s.in_flight = in_flight_.load(std::memory_order_relaxed);
  s.max_in_flight = max_in_flight_.load(std::memory_order_relaxed);
  s.ingest_cpu_seconds = static_cast<double>(ingest_cpu_ns_.load(std::memory_order_relaxed)) * 1e-9;
  {
    MutexLock lock(io_cpu_mu_);
    clockid_t clock{};
    if (io_joined_) {
      s.io_cpu_seconds = io_cpu_at_exit_.load(std::memory_order_relaxed);
    } else if (pthread_getcpuclockid(io_handle_, &clock) == 0) {
      s.io_cpu_seconds = ThreadCpuSeconds(clock);
    }
  }
  MutexLock lock(status_mu_);
  s.targets = status_.size();
  return s;
}

ScrapeManager::ScrapeManager(store::Appendable& store, Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(store, clock, std::move(options))) {}
ScrapeManager::~ScrapeManager() = default;
Status ScrapeManager::ApplyConfig(const ScrapeConfig& config) { return impl_->ApplyConfig(config); }
Status ScrapeManager::Start() { return impl_->Start(); }
void ScrapeManager::Stop() { impl_->Stop(); }
Status ScrapeManager::ReloadDiscovery() { return impl_->ReloadDiscovery(); }
void ScrapeManager::SetFast(const std::string& key, TargetMatcher matcher) {
  impl_->SetFast(key, std::move(matcher));
}
void ScrapeManager::ClearFast(const std::string& key) { impl_->ClearFast(key); }
std::vector<TargetStatus> ScrapeManager::Targets() const { return impl_->Targets(); }
std::shared_ptr<const std::vector<std::string>> ScrapeManager::Instances() const {
  return impl_->Instances();
}
std::vector<Discovery::SourceStatus> ScrapeManager::DiscoverySources() const {
  return impl_->DiscoverySources();
}
std::vector<MetricMetadata> ScrapeManager::Metadata() const { return impl_->Metadata(); }
ScrapeManager::Stats ScrapeManager::stats() const { return impl_->stats(); }

}  // namespace gpucanary::scrape
