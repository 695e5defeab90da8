#include "nvml/sampler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "core/mutex.h"
#include "model/family_writer.h"

namespace gpucanary::nvml {
namespace {

// The label set of the health series of one GPU: the first labels of
// dcgm-exporter's GPU template, so they join with the DCGM series.
void AppendGpuLabels(const dcgm::GpuIdentity& id, const dcgm::DcgmRenderOptions& options,
                     std::string& out) {
  out += "{gpu=\"" + std::to_string(id.index) + "\",UUID=\"" + id.uuid + "\",pci_bus_id=\"" +
         id.pci_bus_id + "\",device=\"nvidia" + std::to_string(id.index) + "\",modelName=\"" +
         id.model_name + "\"," + (options.lowercase_hostname ? "hostname" : "Hostname") + "=\"" +
         id.hostname + "\"}";
}

// The GPU labels are written as the DCGM series have them (unescaped), so a
// family's series join the DCGM ones label for label.
template <typename Value>
void AppendPerGpu(std::string_view name, model::MetricType type, std::string_view help,
                  const Snapshot& s, const dcgm::DcgmRenderOptions& options, Value value,
                  std::string& out) {
  if (s.gpus.empty()) return;
  model::FamilyWriter metrics(out);
  metrics.Family(name, type, help);
  std::string labels;
  for (std::size_t i = 0; i < s.gpus.size(); ++i) {
    labels.clear();
    AppendGpuLabels(s.gpus[i], options, labels);
    metrics.SampleWithLabelText(
        labels, std::to_string(value(i < s.status.size() ? s.status[i] : GpuStatus{})));
  }
}

}  // namespace

void RenderSnapshot(const Snapshot& snapshot, const dcgm::DcgmRenderOptions& options,
                    double sample_seconds, std::string& out) {
  dcgm::RenderDcgmExposition(snapshot.gpus, snapshot.readings, options, out);
  AppendPerGpu(
      "gpucanary_nvml_gpu_lost", model::MetricType::kGauge,
      "1 when NVML reports the GPU lost (GPU_IS_LOST, e.g. after Xid 79): its DCGM series are "
      "gone until the collector restarts.",
      snapshot, options, [](const GpuStatus& s) { return s.lost ? 1 : 0; }, out);
  AppendPerGpu(
      "gpucanary_nvml_xid_events_total", model::MetricType::kCounter,
      "Xid events NVML delivered for the GPU since the collector started.", snapshot, options,
      [](const GpuStatus& s) { return s.xids; }, out);
  AppendPerGpu(
      "gpucanary_nvml_errors_total", model::MetricType::kCounter,
      "NVML calls for the GPU that failed, other than unsupported fields and a lost GPU.", snapshot,
      options, [](const GpuStatus& s) { return s.errors; }, out);
  model::FamilyWriter metrics(out);
  metrics.Family("gpucanary_nvml_sample_duration_seconds", model::MetricType::kGauge,
                 "How long the last NVML sample of every GPU took.");
  const std::string& host = snapshot.gpus.empty() ? std::string() : snapshot.gpus[0].hostname;
  std::string labels;
  if (!host.empty()) {
    labels += '{';
    labels += options.lowercase_hostname ? "hostname" : "Hostname";
    labels += "=\"" + host + "\"}";
  }
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.6f", sample_seconds);
  metrics.SampleWithLabelText(labels, buf.data());
}

Sampler::Sampler(Collector& collector, Clock& clock, Options options)
    : collector_(collector), clock_(clock), options_(std::move(options)) {}

Sampler::~Sampler() { Stop(); }

Status Sampler::Start() {
  if (options_.interval_ms < kGpmMinIntervalMs) {
    return Status(StatusCode::kInvalidArgument, "the NVML sampling interval must be at least " +
                                                    std::to_string(kGpmMinIntervalMs) +
                                                    " ms (NVML's GPM minimum), not " +
                                                    std::to_string(options_.interval_ms) + " ms");
  }
  const std::int64_t first = clock_.NowMs();
  SampleAt(first);
  // The next slot counts from the first sample, not from when the thread
  // gets to run.
  const std::int64_t next = (first / options_.interval_ms + 1) * options_.interval_ms;
  thread_ = std::thread([this, next] { Loop(next); });
  return Status::Ok();
}

void Sampler::Stop() {
  {
    const MutexLock lock(mu_);
    stop_ = true;
  }
  stop_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

std::string Sampler::Latest() const {
  const MutexLock lock(mu_);
  return latest_;
}

void Sampler::SampleAt(std::int64_t now_ms) {
  const auto start = std::chrono::steady_clock::now();
  collector_.Sample(now_ms, snapshot_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  text_.clear();
  RenderSnapshot(snapshot_, options_.render, seconds, text_);
  {
    const MutexLock lock(mu_);
    latest_ = text_;
  }
  samples_.fetch_add(1);
  if (options_.on_sample) options_.on_sample(snapshot_, text_, seconds);
}

void Sampler::Loop(std::int64_t next) {
  const std::int64_t interval = options_.interval_ms;
  for (;;) {
    // Wait for the slot in real-time steps of at most 100 ms, reading the
    // Clock again after each, so a stop or a test's ManualClock is seen.
    for (;;) {
      const std::int64_t now = clock_.NowMs();
      if (now >= next) break;
      MutexLock lock(mu_);
      if (stop_) return;
      stop_cv_.WaitFor(mu_, std::chrono::milliseconds(std::min<std::int64_t>(next - now, 100)));
      if (stop_) return;
    }
    {
      const MutexLock lock(mu_);
      if (stop_) return;
    }
    SampleAt(next);  // stamped with its slot, as the scraper stamps scrapes
    const std::int64_t now = clock_.NowMs();
    next += interval;
    if (next <= now) next = (now / interval + 1) * interval;  // skip the missed slots
  }
}

}  // namespace gpucanary::nvml
