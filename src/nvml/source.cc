#include "nvml/source.h"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <utility>

#include "core/mutex.h"
#include "nvml/collector.h"
#include "nvml/sampler.h"
#include "scrape/ingester.h"

namespace gpucanary::nvml {

std::string DefaultHostname() {
  // Read at start-up, before any thread that could change the environment.
  const char* node = std::getenv("NODE_NAME");  // NOLINT(concurrency-mt-unsafe)
  if (node != nullptr && *node != '\0') return node;
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) == 0 && buf[0] != '\0') return buf.data();
  return "localhost";
}

class Source::Impl {
 public:
  Impl(Clock& clock, std::string hostname) : clock_(clock), hostname_(std::move(hostname)) {}

  Clock& clock_;
  std::string hostname_;
  std::unique_ptr<Library> library_;
  std::unique_ptr<Collector> collector_;
  std::unique_ptr<scrape::Ingester> ingester_;  // the sampling thread's, until Stop
  std::unique_ptr<Sampler> sampler_;
  Mutex mu_;
  bool stopped_ GUARDED_BY(mu_) = false;
};

Result<std::unique_ptr<Source>> Source::Start(store::Appendable& store, Clock& clock,
                                              const SourceConfig& config,
                                              const std::function<void(std::string_view)>& log) {
  auto impl =
      std::make_unique<Impl>(clock, config.hostname.empty() ? DefaultHostname() : config.hostname);
  auto library = Library::Open(config.library);
  if (!library) return Error(library.error());
  impl->library_ = std::move(*library);
  CollectorOptions co;
  co.hostname = impl->hostname_;
  co.gpm = config.gpm;
  co.xid_events = config.xid_events;
  co.log = [log](std::string_view line) {
    if (log) log("nvml: " + std::string(line));
  };
  auto collector = Collector::Start(*impl->library_, co);
  if (!collector) return Error(collector.error());
  impl->collector_ = std::move(*collector);

  model::Labels target{{"instance", impl->hostname_}, {"job", config.job}};
  impl->ingester_ =
      std::make_unique<scrape::Ingester>(store, std::move(target), scrape::IngestOptions{});
  Sampler::Options so;
  so.interval_ms = config.interval_ms;
  so.render.lowercase_hostname = config.lowercase_hostname;
  scrape::Ingester* ingester = impl->ingester_.get();
  so.on_sample = [ingester, log](const Snapshot& snapshot, std::string_view text,
                                 double duration_s) {
    const scrape::ScrapeOutcome o =
        ingester->Ingest(text, expfmt::Format::kPrometheusText, snapshot.time_ms, duration_s);
    if (!o.up && log) log("nvml: a sample was not stored: " + o.error.message());
  };
  impl->sampler_ = std::make_unique<Sampler>(*impl->collector_, clock, so);
  if (Status s = impl->sampler_->Start(); !s.ok()) return Error(s);
  if (log) {
    log("nvml: sampling " + std::to_string(impl->collector_->gpu_count()) + " GPU(s) of " +
        impl->hostname_ + " every " + std::to_string(config.interval_ms) + " ms through " +
        config.library + " (driver " + impl->collector_->driver_version() + ")");
  }
  return std::unique_ptr<Source>(new Source(std::move(impl)));
}

Source::Source(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Source::~Source() { Stop(); }

void Source::Stop() {
  {
    const MutexLock lock(impl_->mu_);
    if (impl_->stopped_) return;
    impl_->stopped_ = true;
  }
  impl_->sampler_->Stop();
  impl_->ingester_->EndOfRun(impl_->clock_.NowMs());
}

std::size_t Source::gpu_count() const { return impl_->collector_->gpu_count(); }
std::uint64_t Source::samples() const { return impl_->sampler_->samples(); }
const std::string& Source::hostname() const { return impl_->hostname_; }

}  // namespace gpucanary::nvml
