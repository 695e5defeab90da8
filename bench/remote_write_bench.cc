// Cost of the remote_write receiver (see docs/remote-write.md).
//
//   cmake --preset release && cmake --build build/release --target remote_write_bench
//   build/release/bench/remote_write_bench
//
// Input: a request of 2,000 samples (Prometheus 3.x's max_samples_per_send),
// shaped as Prometheus sends one scrape of dcgm-exporter: 2,000 series of 8
// labels with 1 sample each (arg 1), or 100 series with 20 samples each (arg
// 20). BM_Decode: snappy + protobuf + copy into plain values. BM_Handle: the
// whole handler (headers, decode, label checks, order checks, Appender calls)
// into an Appendable that keeps nothing, so the store's cost is not counted.
// Counters: items_per_second is samples/s; bytes_per_second the compressed
// body.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>

#include "remote/receiver.h"
#include "remote/write_request.h"
#include "store/appender.h"

namespace gpucanary::remote {
namespace {

constexpr int kSamples = 2000;

WriteRequest MakeRequest(int samples_per_series) {
  WriteRequest r;
  const int series = kSamples / samples_per_series;
  for (int i = 0; i < series; ++i) {
    const int gpu = i % 8;
    const std::string host = "node-" + std::to_string(i / 8 % 100);
    TimeSeries ts;
    ts.labels = {{"Hostname", host},
                 {"UUID", "GPU-4f6c1e2a-" + std::to_string(i)},
                 {"__name__", "DCGM_FI_FIELD_" + std::to_string(i / 800)},
                 {"device", "nvidia" + std::to_string(gpu)},
                 {"gpu", std::to_string(gpu)},
                 {"instance", host + ":9400"},
                 {"job", "dcgm"},
                 {"modelName", "NVIDIA H100 80GB HBM3"}};
    for (int j = 0; j < samples_per_series; ++j) {
      ts.samples.push_back({1700000000000 + j * 1000, 300.709 + j});
    }
    r.timeseries.push_back(std::move(ts));
  }
  return r;
}

class NullAppender : public store::Appender {
 public:
  Result<store::SeriesRef> Series(const model::Labels& labels) override {
    return model::LabelsHash(labels);
  }
  Status Append(store::SeriesRef, std::int64_t, double) override {
    ++pending_;
    return Status::Ok();
  }
  Result<store::CommitResult> Commit() override {
    store::CommitResult r;
    r.appended = pending_;
    pending_ = 0;
    return r;
  }
  void Rollback() override { pending_ = 0; }

 private:
  std::size_t pending_ = 0;
};

class NullAppendable : public store::Appendable {
 public:
  std::unique_ptr<store::Appender> NewAppender() override {
    return std::make_unique<NullAppender>();
  }
};

void BM_Decode(benchmark::State& state) {
  const std::string body = EncodeWriteRequest(MakeRequest(static_cast<int>(state.range(0))));
  for (auto _ : state) {
    Result<WriteRequest> r = DecodeWriteRequest(body, "snappy", "application/x-protobuf");
    if (!r) state.SkipWithError(r.error().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * kSamples);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_Decode)->Arg(1)->Arg(20);

void BM_Handle(benchmark::State& state) {
  NullAppendable store;
  Receiver receiver(store);
  net::HttpRequest request;
  request.method = "POST";
  request.headers = {{"content-encoding", "snappy"}, {"content-type", "application/x-protobuf"}};
  request.body = EncodeWriteRequest(MakeRequest(static_cast<int>(state.range(0))));
  for (auto _ : state) {
    const net::HttpResponse response = receiver.Handle(request);
    if (response.status != 204) state.SkipWithError(response.body.c_str());
  }
  state.SetItemsProcessed(state.iterations() * kSamples);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(request.body.size()));
}
BENCHMARK(BM_Handle)->Arg(1)->Arg(20);

void BM_Encode(benchmark::State& state) {
  const WriteRequest request = MakeRequest(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(EncodeWriteRequest(request));
  state.SetItemsProcessed(state.iterations() * kSamples);
}
BENCHMARK(BM_Encode)->Arg(1)->Arg(20);

}  // namespace
}  // namespace gpucanary::remote

BENCHMARK_MAIN();
