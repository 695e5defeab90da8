// Fuzz target for the remote_write decoder and receiver: any bytes, posted as
// a remote_write 1.0 body, must be answered 204, 400 or 413 (never a crash,
// hang, sanitizer error or 5xx); a body that decodes must re-encode to one
// that decodes to the same series; and what the receiver keeps must pass the
// label checks.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/http_message.h"
#include "remote/receiver.h"
#include "remote/test_util.h"
#include "remote/write_request.h"

using gpucanary::remote::CheckSeriesLabels;
using gpucanary::remote::DecodeLimits;
using gpucanary::remote::DecodeWriteRequest;
using gpucanary::remote::EncodeWriteRequest;
using gpucanary::remote::Receiver;
using gpucanary::remote::ReceiverOptions;
using gpucanary::remote::WriteRequest;

namespace {

bool SameRequest(const WriteRequest& a, const WriteRequest& b) {
  if (a.timeseries.size() != b.timeseries.size() || a.metadata != b.metadata) return false;
  for (std::size_t i = 0; i < a.timeseries.size(); ++i) {
    const auto& x = a.timeseries[i];
    const auto& y = b.timeseries[i];
    if (x.labels != y.labels || x.samples.size() != y.samples.size() ||
        x.exemplars != y.exemplars || x.histograms != y.histograms) {
      return false;
    }
    for (std::size_t j = 0; j < x.samples.size(); ++j) {
      if (x.samples[j].timestamp_ms != y.samples[j].timestamp_ms ||
          std::bit_cast<std::uint64_t>(x.samples[j].value) !=
              std::bit_cast<std::uint64_t>(y.samples[j].value)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  DecodeLimits limits;
  limits.max_decompressed_bytes = 4U << 20;  // keep each run small

  const auto decoded = DecodeWriteRequest(body, "snappy", "application/x-protobuf", limits);
  if (decoded) {
    const auto again =
        DecodeWriteRequest(EncodeWriteRequest(*decoded), "snappy", "application/x-protobuf");
    if (!again || !SameRequest(*decoded, *again)) std::abort();
  }

  gpucanary::remote::test::CaptureAppendable store;
  ReceiverOptions options;
  options.limits = limits;
  Receiver receiver(store, options);
  gpucanary::net::HttpRequest request;
  request.method = "POST";
  request.headers = {{"content-encoding", "snappy"}, {"content-type", "application/x-protobuf"}};
  request.body = body;
  const gpucanary::net::HttpResponse response = receiver.Handle(request);
  if (response.status != 204 && response.status != 400 && response.status != 413) std::abort();
  // The receiver decodes as DecodeWriteRequest does.
  if (decoded.has_value() ? response.status == 413 : response.status == 204) std::abort();
  std::size_t index = 0;
  for (const auto& [labels, samples] : store.All()) {
    if (!CheckSeriesLabels(labels, index++).ok() || samples.empty()) std::abort();
  }
  return 0;
}
