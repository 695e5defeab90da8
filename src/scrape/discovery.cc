#include "scrape/discovery.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "core/mutex.h"
#include "net/http_client.h"
#include "scrape/file_sd.h"
#include "scrape/prometheus_sd.h"

namespace gpucanary::scrape {

struct Discovery::Job {
  struct File {
    std::unique_ptr<FileSd> sd;
    std::int64_t due_ms = 0;
    std::int64_t last_ms = 0;
  };
  struct Prometheus {
    PrometheusSdConfig config;
    std::vector<TargetGroup> groups;  // the last good answer
    std::vector<Status> errors;       // of the last refresh
    std::int64_t due_ms = 0;
    std::int64_t last_ms = 0;
  };

  struct Kubernetes {
    std::unique_ptr<KubernetesSd> sd;
    std::vector<TargetGroup> groups;  // as of `generation`
    std::uint64_t generation = 0;
    std::uint64_t failures_reported = 0;  // state().failures already handed to on_error
  };

  JobConfig config;
  std::vector<TargetGroup> static_groups;
  std::vector<File> files;
  std::vector<Prometheus> prometheus;
  std::vector<Kubernetes> kubernetes;
};

namespace {

std::size_t CountTargets(const std::vector<TargetGroup>& groups) {
  std::size_t n = 0;
  for (const TargetGroup& g : groups) n += g.targets.size();
  return n;
}

std::string JoinPatterns(const std::vector<std::string>& files) {
  std::string out;
  for (const std::string& f : files) {
    if (!out.empty()) out += ", ";
    out += f;
  }
  return out;
}

std::string JoinErrors(const std::vector<Status>& errors) {
  std::string out;
  for (const Status& e : errors) {
    if (!out.empty()) out += "\n";
    out += e.message();
  }
  return out;
}

// Fetches and parses the active targets of `config.url`. Blocks up to
// `timeout_ms`. Errors: kUnavailable when Prometheus cannot be reached or
// answers with a non-200 status; else as ParsePrometheusTargets.
Result<std::vector<TargetGroup>> FetchPrometheusTargets(const PrometheusSdConfig& config,
                                                        int timeout_ms,
                                                        std::vector<Status>* skipped) {
  net::FetchOptions options;
  options.timeout_ms = timeout_ms;
  options.headers.emplace_back("Accept", "application/json");
  options.tls = config.tls;
  Result<net::HttpResponse> r = net::Fetch(config.url + "/api/v1/targets?state=active", options);
  if (!r) return Error(r.error());
  if (r->status != 200) {
    return Error(StatusCode::kUnavailable,
                 config.url + "/api/v1/targets: HTTP status " + std::to_string(r->status));
  }
  return ParsePrometheusTargets(r->body, config.job, config.url, skipped);
}

}  // namespace

Discovery::Discovery(const ScrapeConfig& config, Clock& clock, Update on_update, Options options)
    : clock_(clock), on_update_(std::move(on_update)), options_(std::move(options)) {
  for (const JobConfig& jc : config.jobs) {
    auto job = std::make_unique<Job>();
    job->config = jc;
    for (std::size_t i = 0; i < jc.static_configs.size(); ++i) {
      TargetGroup g;
      g.targets = jc.static_configs[i].targets;
      g.labels = jc.static_configs[i].labels;
      g.source = jc.job_name + " static_configs[" + std::to_string(i) + "]";
      job->static_groups.push_back(std::move(g));
    }
    for (const FileSdConfig& f : jc.file_sd_configs) {
      job->files.push_back({std::make_unique<FileSd>(f), 0, 0});
    }
    for (const PrometheusSdConfig& p : jc.prometheus_sd_configs) {
      job->prometheus.push_back({p, {}, {}, 0, 0});
    }
    for (std::size_t i = 0; i < jc.kubernetes_sd_configs.size(); ++i) {
      KubernetesSd::Options k = options_.kubernetes;
      k.on_change = [this] { OnKubernetesChange(); };
      job->kubernetes.push_back(
          {std::make_unique<KubernetesSd>(
               jc.kubernetes_sd_configs[i],
               jc.job_name + " kubernetes_sd_configs[" + std::to_string(i) + "]", clock_,
               std::move(k)),
           {},
           0,
           0});
    }
    jobs_.push_back(std::move(job));
  }
}

Discovery::~Discovery() { Stop(); }

std::vector<Status> Discovery::Refresh(bool force) {
  MutexLock refresh_lock(refresh_mu_);
  bool stopping = false;
  {
    MutexLock lock(mu_);
    stopping = stop_;
  }
  const bool first = !refreshed_once_;
  refreshed_once_ = true;
  std::vector<Status> all_errors;
  std::vector<SourceStatus> status;
  std::int64_t next_due = std::numeric_limits<std::int64_t>::max();
  for (const std::unique_ptr<Job>& job : jobs_) {
    bool changed = first;
    const JobConfig& jc = job->config;
    for (const TargetGroup& g : job->static_groups) {
      status.push_back({jc.job_name, "static", g.source, clock_.NowMs(), g.targets.size(), ""});
    }
    for (Job::File& f : job->files) {
      const std::int64_t now = clock_.NowMs();
      std::vector<Status> errors;
      if (force || now >= f.due_ms) {
        changed = f.sd->Refresh(force, &errors) || changed;
        f.due_ms = now + f.sd->config().refresh_interval_ms;
        f.last_ms = now;
      }
      next_due = std::min(next_due, f.due_ms);
      const std::vector<TargetGroup> groups = f.sd->Groups();
      status.push_back({jc.job_name, "file", JoinPatterns(f.sd->config().files), f.last_ms,
                        CountTargets(groups), JoinErrors(f.sd->CurrentErrors())});
      all_errors.insert(all_errors.end(), errors.begin(), errors.end());
    }
    for (Job::Prometheus& p : job->prometheus) {
      const std::int64_t now = clock_.NowMs();
      std::vector<Status>& errors = p.errors;
      const bool due = force || now >= p.due_ms;
      if (due) {
        errors.clear();
        const int timeout = static_cast<int>(
            std::min<std::int64_t>(options_.prometheus_timeout_ms,
                                   std::max<std::int64_t>(p.config.refresh_interval_ms, 1)));
        Result<std::vector<TargetGroup>> groups =
            FetchPrometheusTargets(p.config, timeout, &errors);
        if (groups) {
          changed = true;  // cheap to recompute; the scraper diffs by target
          p.groups = std::move(*groups);
        } else {
          errors.push_back(groups.error());
        }
        p.due_ms = now + p.config.refresh_interval_ms;
        p.last_ms = now;
      }
      next_due = std::min(next_due, p.due_ms);
      status.push_back({jc.job_name, "prometheus", p.config.url, p.last_ms, CountTargets(p.groups),
                        JoinErrors(errors)});
      if (due) all_errors.insert(all_errors.end(), errors.begin(), errors.end());
    }
    for (Job::Kubernetes& k : job->kubernetes) {
      if (!stopping) {
        k.sd->Start();  // once; it then watches on its own thread
        if (force) {
          (void)k.sd->WaitFirstSync(std::chrono::milliseconds(options_.kubernetes_sync_timeout_ms));
        }
      }
      KubernetesSd::State s = k.sd->state();
      if (s.generation != k.generation) {
        changed = true;
        k.groups = std::move(s.groups);
        k.generation = s.generation;
      }
      status.push_back({jc.job_name, "kubernetes", k.sd->Describe(), s.last_update_ms,
                        CountTargets(k.groups), s.error});
      // Each new failure once to on_error; every current one to RefreshNow.
      const bool new_failure = s.failures != k.failures_reported;
      k.failures_reported = s.failures;
      if (!s.error.empty() && (force || new_failure)) {
        all_errors.emplace_back(StatusCode::kUnavailable, s.error);
      }
    }
    if (!changed) continue;
    std::vector<TargetGroup> groups = job->static_groups;
    for (const Job::File& f : job->files) {
      std::vector<TargetGroup> g = f.sd->Groups();
      groups.insert(groups.end(), g.begin(), g.end());
    }
    for (const Job::Prometheus& p : job->prometheus) {
      groups.insert(groups.end(), p.groups.begin(), p.groups.end());
    }
    for (const Job::Kubernetes& k : job->kubernetes) {
      groups.insert(groups.end(), k.groups.begin(), k.groups.end());
    }
    std::vector<Status> target_errors;
    std::vector<Target> targets = MakeTargets(jc, groups, &target_errors);
    all_errors.insert(all_errors.end(), target_errors.begin(), target_errors.end());
    on_update_(jc, std::move(targets));
  }
  {
    MutexLock lock(mu_);
    status_ = std::move(status);
    next_due_ms_ = next_due;
  }
  return all_errors;
}

Status Discovery::RefreshNow() {
  std::vector<Status> errors = Refresh(/*force=*/true);
  if (errors.empty()) return Status::Ok();
  const StatusCode code = errors.front().code();
  return Status(code, JoinErrors(errors));
}

void Discovery::Start() {
  {
    MutexLock lock(mu_);
    if (thread_.joinable() || stop_) return;
  }
  bool need_first = false;
  {
    MutexLock refresh_lock(refresh_mu_);
    need_first = !refreshed_once_;
  }
  if (need_first) (void)Refresh(/*force=*/true);
  MutexLock lock(mu_);
  thread_ = std::thread([this] { Loop(); });
}

void Discovery::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  MutexLock refresh_lock(refresh_mu_);
  for (const std::unique_ptr<Job>& job : jobs_) {
    for (Job::Kubernetes& k : job->kubernetes) k.sd->Stop();
  }
}

void Discovery::OnKubernetesChange() {
  {
    MutexLock lock(mu_);
    kubernetes_changed_ = true;
  }
  wake_cv_.NotifyAll();
}

void Discovery::Loop() {
  MutexLock lock(mu_);
  while (!stop_) {
    const std::int64_t now = clock_.NowMs();
    if (now < next_due_ms_ && !kubernetes_changed_) {
      // Short real-time slices rather than one long wait: Stop() is prompt
      // and a ManualClock's moves are noticed within poll_ms.
      const std::int64_t wait = std::min<std::int64_t>(next_due_ms_ - now, options_.poll_ms);
      wake_cv_.WaitFor(mu_, std::chrono::milliseconds(wait),
                       [this]() REQUIRES(mu_) { return stop_ || kubernetes_changed_; });
      continue;
    }
    kubernetes_changed_ = false;
    lock.Unlock();
    const std::vector<Status> errors = Refresh(/*force=*/false);
    if (options_.on_error) {
      for (const Status& e : errors) options_.on_error(e);
    }
    lock.Lock();
  }
}

std::vector<Discovery::SourceStatus> Discovery::Sources() const {
  MutexLock lock(mu_);
  return status_;
}

}  // namespace gpucanary::scrape
