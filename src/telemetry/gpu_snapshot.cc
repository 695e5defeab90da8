#include "telemetry/gpu_snapshot.h"

#include <cmath>
#include <optional>

namespace gpucanary::telemetry {

std::optional<double> GpuState::Get(std::string_view metric) const {
  const MetricStats* st = Stats(metric);
  if (st == nullptr || st->count + st->nan == 0) return std::nullopt;
  return st->last;
}

const MetricStats* GpuState::Stats(std::string_view metric) const {
  auto it = metrics.find(metric);
  return it == metrics.end() ? nullptr : &it->second;
}

std::optional<double> GpuState::ThrottleShare(std::uint64_t bits) const {
  std::uint64_t total = 0;
  std::uint64_t hit = 0;
  for (const auto& [mask, n] : throttle_masks) {
    total += n;
    if ((mask & bits) != 0) hit += n;
  }
  if (total == 0) return std::nullopt;
  return static_cast<double>(hit) / static_cast<double>(total);
}

std::string_view HostOf(const expfmt::SampleView& sample) {
  if (auto h = sample.Label("hostname"); h && !h->empty()) return *h;
  if (auto h = sample.Label("Hostname"); h && !h->empty()) return *h;
  return "-";
}

void GpuSnapshot::Add(const expfmt::SampleView& sample) {
  const std::optional<std::string_view> gpu = sample.Label("gpu");
  if (!gpu || gpu->empty()) return;
  GpuKey key{std::string(HostOf(sample)), std::string(*gpu)};
  GpuState& g = gpus_[key];
  auto set_if = [&](std::string& field, std::string_view label) {
    if (field.empty()) {
      if (auto v = sample.Label(label); v && !v->empty()) field = std::string(*v);
    }
  };
  set_if(g.uuid, "UUID");
  set_if(g.uuid, "uuid");
  set_if(g.model, "modelName");
  set_if(g.pci_bus_id, "pci_bus_id");
  if (g.pod.empty()) {
    auto ns = sample.Label("namespace");
    auto pod = sample.Label("pod");
    if (pod && !pod->empty()) g.pod = std::string(ns.value_or("")) + "/" + std::string(*pod);
  }
  if (sample.has_timestamp()) {
    if (g.first_timestamp_ms == expfmt::kNoTimestamp ||
        sample.timestamp_ms < g.first_timestamp_ms) {
      g.first_timestamp_ms = sample.timestamp_ms;
    }
    if (sample.timestamp_ms > g.last_timestamp_ms) g.last_timestamp_ms = sample.timestamp_ms;
  }
  auto it = g.metrics.find(sample.name);
  if (it == g.metrics.end()) it = g.metrics.emplace(std::string(sample.name), MetricStats{}).first;
  MetricStats& st = it->second;
  // The later sample is the latest: readers validate each series' time order.
  st.last = sample.value;
  if (std::isnan(sample.value)) {
    ++st.nan;
  } else {
    if (st.count == 0 || sample.value < st.min) st.min = sample.value;
    if (st.count == 0 || sample.value > st.max) st.max = sample.value;
    st.sum += sample.value;
    ++st.count;
  }
  if ((sample.name == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" ||
       sample.name == "DCGM_FI_DEV_CLOCKS_EVENT_REASONS") &&
      sample.value >= 0 && sample.value < 1.8e19) {
    ++g.throttle_masks[static_cast<std::uint64_t>(sample.value)];
  }
  ++g.samples;
}

}  // namespace gpucanary::telemetry
