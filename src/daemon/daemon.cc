#include "daemon/daemon.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "core/mutex.h"
#include "core/time_format.h"
#include "daemon/api_format.h"
#include "daemon/auth.h"
#include "daemon/canary_service.h"
#include "daemon/correlate_api.h"
#include "daemon/process_metrics.h"
#include "daemon/query_api.h"
#include "daemon/release_api.h"
#include "daemon/remote_write_guard.h"
#include "daemon/vocabulary_api.h"
#include "dashboard/dashboard.h"
#include "model/family_writer.h"
#include "net/http_server.h"
#include "nvml/source.h"
#include "releases/publisher.h"
#include "releases/release.h"
#include "remote/receiver.h"
#include "remote/sender.h"
#include "scrape/ingester.h"
#include "scrape/scrape_manager.h"
#include "store/meta_db.h"
#include "store/store.h"
#include "vocab/vocab.h"

namespace gpucanary::daemon {
namespace {

// A family of one unlabelled sample.
void AppendMetric(model::FamilyWriter& metrics, std::string_view name, model::MetricType type,
                  std::string_view help, double value) {
  metrics.Family(name, type, help);
  std::string text;
  AppendPromValue(text, value);
  metrics.Sample({}, text);
}

}  // namespace

class Daemon::Impl {
 public:
  Impl(const ServeConfig& config, Clock& clock, DaemonOptions options)
      : config_(config), clock_(clock), options_(std::move(options)) {}
  ~Impl() { Stop(); }

  Status Start();
  void Stop();
  std::uint16_t port() const { return port_; }

 private:
  void Log(const std::string& line) const {
    if (options_.log) options_.log(line);
  }
  void Handle(const net::HttpRequest& request, net::HttpResponse& response);
  std::string Metrics() const;
  // The `instance` values of the targets the daemon scrapes and of its NVML
  // node: the only sources that choose and feed canaries, and what
  // remote_write may not write.
  // Sorted, unique; one snapshot until the targets change (no copy per
  // remote_write request or canary).
  std::shared_ptr<const std::vector<std::string>> OwnInstances() const;
  // meta.sqlite copied to meta.sqlite.bak (at start, at every store
  // checkpoint, every retention pass and at stop), so that a lost or damaged
  // database can be restored.
  void BackupMetadata();
  std::string TargetsJson() const;
  void RetentionLoop();
  void AppendSenderMetrics(model::FamilyWriter& metrics) const;

  ServeConfig config_;
  Clock& clock_;
  DaemonOptions options_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::MetaDb> meta_;
  std::unique_ptr<QueryApi> query_;
  std::unique_ptr<CorrelateApi> correlate_;
  VocabularyApi vocabulary_;
  std::unique_ptr<BearerAuth> auth_;
  std::unique_ptr<ReleaseApi> releases_;
  std::unique_ptr<RemoteWriteGuard> write_guard_;  // between receiver_ and store_
  std::unique_ptr<remote::Receiver> receiver_;
  // remote_write out, one per receiver; made before the store opens (their
  // positions say which WAL segments it must keep) and destroyed after it.
  std::vector<std::unique_ptr<remote::Sender>> senders_;
  std::unique_ptr<scrape::ScrapeManager> scraper_;
  std::unique_ptr<nvml::Source> nvml_;  // this node's GPUs, when `nvml:` enables it
  std::unique_ptr<CanaryService> canaries_;
  std::unique_ptr<net::HttpServer> http_;
  std::uint16_t port_ = 0;

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread retention_;
  // Set once Start has built every member Handle reads (release): until
  // then, while the store recovers, Handle reads none of them (acquire) and
  // answers only /-/healthy.
  std::atomic<bool> ready_{false};
  std::atomic<bool> checkpointed_{false};  // a store checkpoint since the last backup
  // OwnInstances()'s merge with the NVML node, and the scraper's snapshot it
  // was made from.
  mutable Mutex own_mu_;
  mutable std::shared_ptr<const std::vector<std::string>> own_ GUARDED_BY(own_mu_);
  mutable std::shared_ptr<const std::vector<std::string>> own_from_ GUARDED_BY(own_mu_);
};

Status Daemon::Impl::Start() {
  // Listening first: recovering a large store takes a while, and the
  // liveness probe (/-/healthy) must be answered meanwhile; /-/ready and the
  // API say 503 until Start is done.
  net::HttpServer::Options ho;
  ho.threads = options_.http_threads;
  ho.max_body_bytes = config_.max_body_bytes;
  ho.handler_threads = config_.http.handler_threads;
  ho.max_connections = config_.http.max_connections;
  ho.max_connections_per_client = config_.http.max_connections_per_client;
  ho.idle_timeout_s = config_.http.idle_timeout_s;
  ho.log = [this](const std::string& line) { Log("serve: " + line); };
  http_ = std::make_unique<net::HttpServer>(ho);
  net::Handler handler = [this](const net::HttpRequest& req, net::HttpResponse& resp) {
    Handle(req, resp);
  };
  // The probes on the io thread, never queued behind slow handlers (a
  // query, a correlation): on these two paths Handle only matches routes
  // (no lock, no I/O) before it answers.
  net::FastHandler probes = [this](const net::HttpRequest& req, net::HttpResponse& resp) {
    if (req.path != "/-/healthy" && req.path != "/-/ready") return false;
    Handle(req, resp);
    return true;
  };
  auto port = config_.tls_server
                  ? http_->ListenTls(config_.listen_host, config_.listen_port, *config_.tls_server,
                                     std::move(handler), std::move(probes))
                  : http_->Listen(config_.listen_host, config_.listen_port, std::move(handler),
                                  std::move(probes));
  if (!port) return port.error();
  port_ = *port;
  if (Status s = http_->Start(); !s.ok()) return s;
  Log("serve: answering /-/healthy on " + config_.listen_host + ":" + std::to_string(port_) +
      " while the store in " + config_.data_dir + " recovers");
  if (!config_.auth.enabled() && !IsLoopbackHost(config_.listen_host)) {
    Log("serve: WARNING: listening on " + config_.listen_host + ":" + std::to_string(port_) +
        " with no auth token: anyone who can reach this port can post releases, write "
        "telemetry, answer Flagger's webhooks and stop canaries; set auth.tokens "
        "(docs/configuration.md) or listen on 127.0.0.1");
  }

  // Metadata (releases, canaries, verdicts, actions) must not vanish
  // silently: a data directory that holds telemetry but no meta.sqlite
  // lost it. Checked before the store creates its folders.
  const std::filesystem::path data_dir(config_.data_dir);
  const std::filesystem::path meta_path = data_dir / "meta.sqlite";
  std::error_code exists_ec;
  const bool had_telemetry = std::filesystem::exists(data_dir / "wal", exists_ec) ||
                             std::filesystem::exists(data_dir / "chunks", exists_ec);
  const bool had_meta = std::filesystem::exists(meta_path, exists_ec);

  store::StoreOptions so;
  for (const remote::SenderConfig& c : config_.remote_write_out) {
    auto sender = remote::Sender::Create(
        c, data_dir / "wal", data_dir / "remote_write" / c.name, options_.log, [this] {
          std::vector<remote::FamilyMetadata> out;
          if (!scraper_) return out;
          for (scrape::MetricMetadata& m : scraper_->Metadata()) {
            out.push_back({std::move(m.family), m.type, std::move(m.help), std::move(m.unit)});
          }
          return out;
        });
    if (!sender) return sender.error();
    senders_.push_back(std::move(*sender));
    so.wal_keep_max_bytes = std::max(so.wal_keep_max_bytes, c.queue.max_backlog_bytes);
  }
  if (!senders_.empty()) {
    // The WAL is the senders' queue: a checkpoint keeps what one has yet to send.
    so.wal_keep_from = [this] {
      std::uint32_t keep = UINT32_MAX;
      for (const auto& sender : senders_) keep = std::min(keep, sender->KeepFrom());
      return keep;
    };
  }
  so.retention_ms = config_.retention_ms;
  so.retention_bytes = config_.retention_bytes;
  so.max_series = config_.max_series;
  so.log = options_.log;
  if (options_.store_checkpoint_after_bytes > 0) {
    so.checkpoint_after_bytes = options_.store_checkpoint_after_bytes;
  }
  // Metadata is backed up at every store checkpoint (and each retention
  // pass): the background loop does it, woken here. A wake-up lost between
  // its check and its wait only delays the backup to the next pass.
  so.on_checkpoint = [this] {
    checkpointed_.store(true, std::memory_order_release);
    cv_.NotifyAll();
  };
  auto store = store::Store::Open(config_.data_dir, so);
  if (!store) return store.error();
  store_ = std::move(*store);
  if (had_telemetry && !had_meta && !options_.empty_metadata) {
    return Error(StatusCode::kFailedPrecondition,
                 meta_path.string() + " is missing, but " + config_.data_dir +
                     " holds telemetry: its releases, canaries, verdicts and actions would be "
                     "gone. Restore it (copy meta.sqlite.bak, which the daemon writes every "
                     "minute, to meta.sqlite), or start with --empty-metadata");
  }
  Result<std::unique_ptr<store::MetaDb>> meta = store::MetaDb::Open(meta_path);
  if (meta) {
    if (Status check = (*meta)->Check(); !check.ok()) {
      meta = Error(StatusCode::kIoError, meta_path.string() + ": damaged: " + check.message());
    }
  }
  if (!meta) {
    if (!options_.empty_metadata) {
      return Error(StatusCode::kFailedPrecondition,
                   meta.error().message() +
                       ". Restore it (copy meta.sqlite.bak, which the daemon writes every "
                       "minute, to meta.sqlite), or start with --empty-metadata (which keeps "
                       "this file aside)");
    }
    const std::string aside = meta_path.string() + ".damaged-" + std::to_string(clock_.NowMs());
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::error_code ec;
      std::filesystem::rename(meta_path.string() + suffix, aside + suffix, ec);
    }
    Log("serve: " + meta.error().message() + "; kept aside as " + aside +
        ", starting with empty metadata (--empty-metadata)");
    meta = store::MetaDb::Open(meta_path);
    if (!meta) return meta.error();
  } else if (had_telemetry && !had_meta) {
    Log("serve: " + meta_path.string() +
        " was missing: starting with empty metadata (--empty-metadata)");
  }
  meta_ = std::move(*meta);
  BackupMetadata();

  QueryApiOptions qo;
  qo.max_samples = config_.query.max_samples;
  qo.max_concurrency = config_.query.max_concurrency;
  // Waiting queries hold handler threads too: one is always left for writes
  // (release posts, remote_write, canary control).
  qo.max_queued = std::max(0, config_.http.handler_threads - config_.query.max_concurrency - 1);
  query_ = std::make_unique<QueryApi>(*store_, clock_, qo);
  correlate_ =
      std::make_unique<CorrelateApi>(*store_, *meta_, clock_, config_.canary.history_prometheus);
  auth_ = std::make_unique<BearerAuth>(config_.auth);
  releases_ =
      std::make_unique<ReleaseApi>(*meta_, clock_, config_.releases, config_.publish, options_.log);
  remote::ReceiverOptions ro;
  ro.limits.max_compressed_bytes = config_.max_body_bytes;
  ro.limits.max_decompressed_bytes = config_.max_body_bytes * 4;
  const RemoteWriteLimits& rl = config_.remote_write_limits;
  ro.creation_grace_period_ms = rl.creation_grace_period_ms;
  ro.past_grace_period_ms = rl.past_grace_period_ms;
  ro.label_limits = {.label_limit = rl.label_limit,
                     .label_name_length_limit = rl.label_name_length_limit,
                     .label_value_length_limit = rl.label_value_length_limit};
  write_guard_ = std::make_unique<RemoteWriteGuard>(
      *store_, [this] { return OwnInstances(); }, clock_,
      TenantLimits{.max_series_per_tenant = rl.max_series_per_tenant});
  receiver_ = std::make_unique<remote::Receiver>(write_guard_->For("anonymous"), clock_, ro);

  scraper_ =
      std::make_unique<scrape::ScrapeManager>(*store_, clock_, scrape::ScrapeManager::Options{});
  if (Status s = scraper_->ApplyConfig(config_.scrape); !s.ok()) {
    // Sources that failed keep being retried; say so and go on.
    Log("serve: scrape discovery: " + s.message());
  }

  CanaryServiceOptions co;
  co.canary = config_.canary;
  co.actions = config_.actions;
  co.log = options_.log;
  // A canary that ends is a region on Grafana's dashboards: its window, its
  // verdict and causes (publish.grafana).
  co.on_end = [this](const canary::CanaryView& view) {
    releases::CanaryOutcome o;
    o.canary_id = view.id;
    o.release_id = view.release_id;
    o.started_at = view.started_at;
    o.ended_at = view.ended_at.value_or(view.started_at);
    o.state = std::string(vocab::Name(view.state));
    o.verdict = std::string(vocab::Name(view.report.verdict));
    for (const analysis::Cause& c : view.report.causes) {
      o.causes.push_back(std::string(vocab::Name(c.kind)) + " (" +
                         std::string(vocab::Name(c.scope)) + "): " + c.summary);
    }
    std::optional<releases::Release> release;
    if (auto stored = meta_->GetRelease(view.release_id); stored && stored->has_value()) {
      if (auto parsed = releases::ParseRelease((*stored)->annotation)) release = std::move(*parsed);
    }
    o.release = release ? &*release : nullptr;
    releases_->publisher().PublishCanary(o);
  };
  if (config_.nvml.enabled) {
    // Asked for in the configuration: without NVML the daemon does not start,
    // rather than run without the GPUs it was told to watch.
    auto source = nvml::Source::Start(*store_, clock_, config_.nvml, options_.log);
    if (!source) return source.error();
    nvml_ = std::move(*source);
  }
  // Hosts and telemetry for canaries come from the daemon's own targets and
  // NVML node only (docs/canaries.md#which-hosts), unless told otherwise.
  if (!config_.canary.trust_remote_write) {
    co.trusted_instances = [this] {
      const auto own = OwnInstances();
      return own ? *own : std::vector<std::string>{};
    };
  }
  canaries_ = std::make_unique<CanaryService>(*store_, *meta_, clock_, scraper_.get(), co);
  if (Status s = canaries_->Start(); !s.ok()) return s;
  releases_->SetOnRelease(
      [this](const releases::Release& release) { return canaries_->OnRelease(release); });

  if (Status s = scraper_->Start(); !s.ok()) return s;
  for (auto& sender : senders_) {
    if (Status s = sender->Start(); !s.ok()) return s;
  }
  retention_ = std::thread([this] { RetentionLoop(); });
  ready_.store(true, std::memory_order_release);
  return Status::Ok();
}

void Daemon::Impl::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (retention_.joinable()) retention_.join();
  if (http_) http_->Stop();
  if (canaries_) canaries_->Stop();  // finishes running actions
  if (scraper_) scraper_->Stop();
  if (nvml_) nvml_->Stop();
  // Together: each may wait for a request in flight (up to its remote_timeout).
  for (auto& sender : senders_) sender->RequestStop();
  for (auto& sender : senders_) sender->Stop();  // positions saved; kept until the store is closed
  http_.reset();
  nvml_.reset();
  canaries_.reset();
  scraper_.reset();
  receiver_.reset();
  write_guard_.reset();
  releases_.reset();  // stops publishing
  correlate_.reset();
  query_.reset();
  BackupMetadata();
  meta_.reset();
  store_.reset();  // syncs the WAL
  senders_.clear();
}

void Daemon::Impl::BackupMetadata() {
  if (!meta_) return;
  const std::filesystem::path bak = std::filesystem::path(config_.data_dir) / "meta.sqlite.bak";
  if (Status s = meta_->Backup(bak); !s.ok()) Log("serve: metadata backup: " + s.message());
}

std::shared_ptr<const std::vector<std::string>> Daemon::Impl::OwnInstances() const {
  std::shared_ptr<const std::vector<std::string>> scraped =
      scraper_ ? scraper_->Instances() : nullptr;
  if (!nvml_) return scraped;
  // The NVML node joins the scraped set: merged once per new snapshot.
  MutexLock lock(own_mu_);
  if (own_ == nullptr || own_from_ != scraped) {
    auto merged = std::make_shared<std::vector<std::string>>();
    if (scraped) *merged = *scraped;
    const std::string& host = nvml_->hostname();
    auto at = std::lower_bound(merged->begin(), merged->end(), host);
    if (at == merged->end() || *at != host) merged->insert(at, host);
    own_ = std::move(merged);
    own_from_ = std::move(scraped);
  }
  return own_;
}

void Daemon::Impl::RetentionLoop() {
  MutexLock lock(mu_);
  const auto interval = std::chrono::milliseconds(options_.retention_interval_ms);
  auto next_pass = std::chrono::steady_clock::now() + interval;
  while (!stopping_) {
    cv_.WaitFor(mu_, next_pass - std::chrono::steady_clock::now());
    if (stopping_) break;
    const bool pass = std::chrono::steady_clock::now() >= next_pass;
    const bool checkpointed = checkpointed_.exchange(false, std::memory_order_acq_rel);
    if (!pass && !checkpointed) continue;
    lock.Unlock();
    if (pass) {
      if (Status s = store_->ApplyRetention(clock_.NowMs()); !s.ok()) {
        Log("serve: retention: " + s.message());
      }
      ReturnFreedHeap();
      next_pass = std::chrono::steady_clock::now() + interval;
    }
    BackupMetadata();
    lock.Lock();
  }
}

void Daemon::Impl::Handle(const net::HttpRequest& request, net::HttpResponse& response) {
  if (!ready_.load(std::memory_order_acquire)) {
    // Starting (the store recovering): alive, not ready (Prometheus's
    // /-/healthy and /-/ready split); nothing else is built yet.
    response.content_type = "text/plain";
    if (request.path == "/-/healthy") {
      response.body = "gpucanary is starting.\n";
    } else {
      response.status = 503;
      response.headers.emplace_back("Retry-After", "1");
      response.body = "gpucanary is starting: recovering the store\n";
    }
    return;
  }
  if (!auth_->Allow(request, response)) return;
  if (releases_->Handle(request, response)) return;
  if (canaries_->Handle(request, response)) return;
  if (query_->Handle(request, response)) return;
  if (correlate_->Handle(request, response)) return;
  if (vocabulary_.Handle(request, response)) return;
  if (dashboard::Handle(request, response)) return;
  const std::string& path = request.path;
  if (path == "/api/v1/write") {
    if (!config_.remote_write) {
      response.status = 404;
      response.content_type = "text/plain";
      response.body = "remote_write receiver disabled (remote_write.enabled: false)\n";
      return;
    }
    // The tenant is the token presented (auth has checked it already).
    const TokenConfig* token = auth_->Presented(request);
    response = receiver_->Handle(request, write_guard_->For(token ? token->name : "anonymous"));
    return;
  }
  if (request.method != "GET" && request.method != "HEAD") {
    response.status = 405;
    response.headers.emplace_back("Allow", "GET, HEAD");
    response.content_type = "text/plain";
    response.body = "method not allowed\n";
    return;
  }
  if (path == "/-/ready" || path == "/-/healthy") {
    response.content_type = "text/plain";
    response.body = "gpucanary is ready.\n";
  } else if (path == "/metrics") {
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    response.body = Metrics();
  } else if (path == "/api/v1/targets") {
    response.content_type = "application/json";
    response.body = TargetsJson();
  } else {
    response.status = 404;
    response.content_type = "text/plain";
    response.body = "not found: " + path + "\n";
  }
}

std::string Daemon::Impl::Metrics() const {
  std::string out;
  model::FamilyWriter metrics(out);
  const store::StoreStats st = store_->stats();
  AppendMetric(metrics, "gpucanary_store_head_series", model::MetricType::kGauge,
               "Series in memory.", static_cast<double>(st.head_series));
  AppendMetric(metrics, "gpucanary_store_samples_appended_total", model::MetricType::kCounter,
               "Samples committed since start.", static_cast<double>(st.samples_appended));
  AppendMetric(metrics, "gpucanary_store_samples_rejected_total", model::MetricType::kCounter,
               "Samples refused (out of order, duplicate, unknown series).",
               static_cast<double>(st.samples_rejected));
  AppendMetric(metrics, "gpucanary_store_chunk_bytes_total", model::MetricType::kCounter,
               "Encoded bytes of chunks sealed since start.", static_cast<double>(st.chunk_bytes));
  AppendMetric(metrics, "gpucanary_store_chunk_samples_total", model::MetricType::kCounter,
               "Samples in chunks sealed since start.", static_cast<double>(st.chunk_samples));
  AppendMetric(metrics, "gpucanary_store_segment_bytes", model::MetricType::kGauge,
               "Chunk segment bytes on disk.", static_cast<double>(st.segment_bytes));
  AppendMetric(metrics, "gpucanary_store_wal_bytes", model::MetricType::kGauge,
               "WAL and checkpoint bytes on disk.", static_cast<double>(st.wal_bytes));
  AppendMetric(metrics, "gpucanary_store_damaged_chunks_skipped_total", model::MetricType::kCounter,
               "Chunk reads left out of answers because the chunk's record on disk failed its "
               "CRC (damage after it was written): no data there, never invented values.",
               static_cast<double>(st.damaged_chunks_skipped));
  AppendMetric(metrics, "gpucanary_store_loaded_indexes", model::MetricType::kGauge,
               "Sealed segments whose index is in memory (released when no read used it for "
               "5 minutes).",
               static_cast<double>(st.loaded_indexes));
  const net::HttpServer::Stats hs = http_->stats();
  AppendMetric(metrics, "gpucanary_http_open_connections", model::MetricType::kGauge,
               "Connections open to the API now.", static_cast<double>(hs.open_connections));
  AppendMetric(metrics, "gpucanary_http_connections_accepted_total", model::MetricType::kCounter,
               "Connections accepted.", static_cast<double>(hs.connections_accepted));
  AppendMetric(metrics, "gpucanary_http_connections_refused_total", model::MetricType::kCounter,
               "Connections refused over http.max_connections (503) or "
               "http.max_connections_per_client (429).",
               static_cast<double>(hs.connections_refused));
  const store::WriteFailures wf = store_->write_failures();
  AppendMetric(metrics, "gpucanary_store_write_failures_total", model::MetricType::kCounter,
               "Commits the store could not write (full disk, I/O error): nothing of them kept.",
               static_cast<double>(wf.count));
  AppendMetric(metrics, "gpucanary_store_last_write_failure_timestamp_seconds",
               model::MetricType::kGauge,
               "When the last write failed (Unix seconds); 0: none since start.",
               static_cast<double>(wf.last_ms) / 1000.0);
  const scrape::ScrapeManager::Stats sc = scraper_->stats();
  AppendMetric(metrics, "gpucanary_scrape_targets", model::MetricType::kGauge, "Scrape targets.",
               static_cast<double>(sc.targets));
  AppendMetric(metrics, "gpucanary_scrapes_total", model::MetricType::kCounter, "Scrapes finished.",
               static_cast<double>(sc.scrapes));
  AppendMetric(metrics, "gpucanary_scrape_failures_total", model::MetricType::kCounter,
               "Scrapes that failed (up=0).", static_cast<double>(sc.failures));
  AppendMetric(metrics, "gpucanary_scrape_samples_total", model::MetricType::kCounter,
               "Samples scraped.", static_cast<double>(sc.samples));
  AppendMetric(metrics, "gpucanary_scrape_skipped_slots_total", model::MetricType::kCounter,
               "Scrape slots missed because the previous scrape still ran.",
               static_cast<double>(sc.skipped_slots));
  metrics.Family("gpucanary_scrape_exceeded_limit_total", model::MetricType::kCounter,
                 "Scrapes failed by a limit (sample_limit, label limits, body_size_limit).");
  for (const auto& [limit, n] :
       {std::pair{scrape::LimitExceeded::kSampleLimit, sc.exceeded_sample_limit},
        std::pair{scrape::LimitExceeded::kLabelLimits, sc.exceeded_label_limits},
        std::pair{scrape::LimitExceeded::kBodySizeLimit, sc.exceeded_body_size_limit}}) {
    metrics.Sample({{"limit", scrape::LimitExceededName(limit)}}, std::to_string(n));
  }
  AppendMetric(metrics, "gpucanary_scrape_samples_duplicate_total", model::MetricType::kCounter,
               "Samples of a series already in the same scrape (the first kept).",
               static_cast<double>(sc.duplicate_samples));
  AppendMetric(metrics, "gpucanary_scrape_samples_out_of_bounds_total", model::MetricType::kCounter,
               "Samples whose own timestamp was over 10 minutes after the scrape (dropped).",
               static_cast<double>(sc.out_of_bounds_samples));
  AppendMetric(metrics, "gpucanary_scrape_samples_rejected_total", model::MetricType::kCounter,
               "Scraped samples the store refused (out of order, duplicate, series limit).",
               static_cast<double>(sc.store_rejected));
  const remote::ReceiverStats rw = receiver_->stats();
  AppendMetric(metrics, "gpucanary_remote_write_requests_total", model::MetricType::kCounter,
               "remote_write requests handled.", static_cast<double>(rw.requests));
  AppendMetric(metrics, "gpucanary_remote_write_samples_appended_total",
               model::MetricType::kCounter, "remote_write samples committed.",
               static_cast<double>(rw.samples_appended));
  metrics.Family("gpucanary_remote_write_errors_total", model::MetricType::kCounter,
                 "remote_write problems by reason.");
  for (std::size_t i = 0; i < rw.errors.size(); ++i) {
    metrics.Sample({{"reason", remote::WriteErrorName(static_cast<remote::WriteError>(i))}},
                   std::to_string(rw.errors[i]));
  }
  AppendSenderMetrics(metrics);
  releases_->AppendMetrics(out);
  canaries_->AppendMetrics(out, config_.releases.info_window_ms);
  AppendProcessMetrics(out, ReadProcessStats());
  return out;
}

void Daemon::Impl::AppendSenderMetrics(model::FamilyWriter& metrics) const {
  if (senders_.empty()) return;
  std::vector<remote::SenderStats> stats;
  for (const auto& sender : senders_) stats.push_back(sender->stats());
  // One family at a time, a sample per receiver (and per extra label).
  const auto family = [&](std::string_view name, model::MetricType type, std::string_view help,
                          const auto& value) {
    metrics.Family(name, type, help);
    for (std::size_t i = 0; i < senders_.size(); ++i) {
      const remote::SenderConfig& c = senders_[i]->config();
      value(stats[i], [&](std::initializer_list<model::LabelView> extra, double v) {
        std::vector<model::LabelView> labels = {{"remote_name", c.name}, {"url", c.url}};
        labels.insert(labels.end(), extra.begin(), extra.end());
        std::string text;
        AppendPromValue(text, v);
        metrics.Sample(labels, text);
      });
    }
  };
  using T = model::MetricType;
  const auto d = [](std::uint64_t n) { return static_cast<double>(n); };
  family("gpucanary_remote_write_out_samples_sent_total", T::kCounter,
         "Samples the receiver acknowledged (2xx).",
         [&](const remote::SenderStats& s, auto put) { put({}, d(s.samples_sent)); });
  family("gpucanary_remote_write_out_samples_failed_total", T::kCounter,
         "Samples in batches the receiver refused for good (4xx other than a retried 429).",
         [&](const remote::SenderStats& s, auto put) { put({}, d(s.samples_failed)); });
  family("gpucanary_remote_write_out_samples_retried_total", T::kCounter,
         "Samples in requests that failed and were sent again (5xx, 429, no answer).",
         [&](const remote::SenderStats& s, auto put) { put({}, d(s.samples_retried)); });
  family("gpucanary_remote_write_out_samples_dropped_total", T::kCounter,
         "Samples not sent, by reason.", [&](const remote::SenderStats& s, auto put) {
           put({{"reason", "relabel"}}, d(s.dropped_relabel));
           put({{"reason", "unknown_series"}}, d(s.dropped_unknown_series));
           put({{"reason", "resent_refused"}}, d(s.dropped_resent_refused));
         });
  family("gpucanary_remote_write_out_wal_lost_total", T::kCounter,
         "Stretches of WAL deleted or damaged before they were read (each is logged).",
         [&](const remote::SenderStats& s, auto put) { put({}, d(s.wal_lost)); });
  family("gpucanary_remote_write_out_samples_pending", T::kGauge,
         "Samples read from the WAL and not yet answered.",
         [&](const remote::SenderStats& s, auto put) { put({}, d(s.samples_pending)); });
  family("gpucanary_remote_write_out_wal_backlog_bytes", T::kGauge,
         "WAL bytes the sender has not read yet.",
         [&](const remote::SenderStats& s, auto put) { put({}, d(s.wal_backlog_bytes)); });
  family("gpucanary_remote_write_out_highest_sent_timestamp_seconds", T::kGauge,
         "The newest sample timestamp the receiver acknowledged.",
         [&](const remote::SenderStats& s, auto put) {
           put({}, static_cast<double>(s.highest_sent_timestamp_ms) / 1000.0);
         });
  family("gpucanary_remote_write_out_requests_total", T::kCounter, "Requests by answer.",
         [&](const remote::SenderStats& s, auto put) {
           put({{"code", "2xx"}}, d(s.requests_2xx));
           put({{"code", "4xx"}}, d(s.requests_4xx));
           put({{"code", "429"}}, d(s.requests_429));
           put({{"code", "5xx"}}, d(s.requests_5xx));
           put({{"code", "error"}}, d(s.requests_error));
         });
  family("gpucanary_remote_write_out_metadata_sent_total", T::kCounter,
         "Metric metadata entries the receiver acknowledged.",
         [&](const remote::SenderStats& s, auto put) { put({}, d(s.metadata_sent)); });
  family("gpucanary_remote_write_out_metadata_failed_total", T::kCounter,
         "Metric metadata entries not sent (tried again at the next interval).",
         [&](const remote::SenderStats& s, auto put) { put({}, d(s.metadata_failed)); });
  family("gpucanary_remote_write_out_shards", T::kGauge, "Parallel senders.",
         [&](const remote::SenderStats& s, auto put) { put({}, static_cast<double>(s.shards)); });
}

std::string Daemon::Impl::TargetsJson() const {
  std::string out = R"({"status":"success","data":{"activeTargets":[)";
  bool first = true;
  for (const scrape::TargetStatus& t : scraper_->Targets()) {
    if (!first) out += ',';
    first = false;
    out += R"({"labels":{)";
    for (std::size_t i = 0; i < t.labels.size(); ++i) {
      if (i > 0) out += ',';
      AppendJsonString(out, t.labels[i].name);
      out += ':';
      AppendJsonString(out, t.labels[i].value);
    }
    out += R"(},"scrapePool":)";
    AppendJsonString(out, t.job);
    out += R"(,"scrapeUrl":)";
    AppendJsonString(out, t.url);
    out += R"(,"lastError":)";
    AppendJsonString(out, t.last_error);
    out += R"(,"lastScrape":)";
    AppendJsonString(out, t.last_scrape_ms > 0 ? FormatUtcMillis(t.last_scrape_ms) : "");
    out += R"(,"lastScrapeDuration":)";
    AppendPromValue(out, t.last_duration_s);
    out += R"(,"health":)";
    AppendJsonString(out, scrape::TargetHealthName(t.health));
    out += R"(,"scrapeInterval":)";
    AppendJsonString(out, t.interval_ms % 1000 == 0 ? std::to_string(t.interval_ms / 1000) + "s"
                                                    : std::to_string(t.interval_ms) + "ms");
    out += R"(,"fast":)";
    out += t.fast ? "true" : "false";
    out += '}';
  }
  out += R"(],"droppedTargets":[]}})";
  return out;
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() = default;

Result<std::unique_ptr<Daemon>> Daemon::Start(const ServeConfig& config, Clock& clock,
                                              DaemonOptions options) {
  auto impl = std::make_unique<Impl>(config, clock, std::move(options));
  if (Status s = impl->Start(); !s.ok()) return Error(s);
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

std::uint16_t Daemon::port() const { return impl_->port(); }
void Daemon::Stop() { impl_->Stop(); }

}  // namespace gpucanary::daemon
