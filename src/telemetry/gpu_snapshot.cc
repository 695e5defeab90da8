#include "telemetry/gpu_snapshot.h"

namespace gpucanary::telemetry {

std::optional<double> GpuState::Get(std::string_view metric) const {
  auto it = latest.find(metric);
  if (it == latest.end()) return std::nullopt;
  return it->second;
}

std::string_view HostOf(const expfmt::SampleView& sample) {
  if (auto h = sample.Label("hostname"); h && !h->empty()) return *h;
  if (auto h = sample.Label("Hostname"); h && !h->empty()) return *h;
  return "-";
}

void GpuSnapshot::Add(const expfmt::SampleView& sample) {
  GpuKey key{std::string(HostOf(sample)), std::string(sample.Label("gpu").value_or(""))};
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
  // The later sample wins: readers validate that each series is in time order.
  if (sample.has_timestamp() && sample.timestamp_ms > g.last_timestamp_ms) {
    g.last_timestamp_ms = sample.timestamp_ms;
  }
  g.latest.insert_or_assign(std::string(sample.name), sample.value);
  ++g.samples;
}

}  // namespace gpucanary::telemetry
