#pragma once
// Prometheus remote_write 1.0 bodies: decoding, checking and encoding.
//
// Spec: "Prometheus Remote-Write Specification", version 1.0
// (https://prometheus.io/docs/specs/prw/remote_write_spec/):
//   "The Request body MUST be compressed using Google's Snappy block format.
//    The block format MUST be used, the framed format MUST NOT be used."
//   "The remote write request in the body of the HTTP POST MUST be a
//    WriteRequest protobuf message" (prompb, remote/remote_write.proto).
//   "Label names MUST be sorted in lexicographical order." "Label names and
//    values MUST NOT be empty." "Every series MUST have a __name__ label."
//    (the spec says SHOULD; gpucanary, like its store, requires it)
//   "Senders MUST send samples for any given series in timestamp order."
//
// Protobuf and snappy stay inside the .cc: this header holds plain values.
// Every function here is pure and thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/label_limits.h"
#include "model/labels.h"

namespace gpucanary::remote {

// Why a write was refused, in whole or in part: the receiver's counters are
// kept per reason (see Receiver), and the decoder reports one.
enum class WriteError : std::uint8_t {
  kUnsupportedMediaType,   // 415: Content-Type or Content-Encoding not remote_write 1.0
  kBodyTooLarge,           // 413: compressed or decompressed size over the limit
  kBadSnappy,              // 400: not a snappy block
  kBadProtobuf,            // 400: not a WriteRequest
  kInvalidLabels,          // 400: a series' labels break the 1.0 rules
  kOutOfOrderSample,       // 400: a sample not after its series' previous one
  kDuplicateSample,        // 400: same timestamp as the stored sample, other value
  kSeriesLimit,            // 400: the store holds as many series as it may
  kStoreUnavailable,       // 503: the store could not write (retry helps)
  kInternal,               // 500: a bug or a store failure of unknown kind
  kSampleTooFarInFuture,   // 400: after now + creation_grace_period
  kSampleTooFarInPast,     // 400: before now - past_grace_period (or the earliest int64)
  kLabelLimit,             // 400: a series with more labels than label_limit
  kLabelNameLengthLimit,   // 400: a label name longer than label_name_length_limit
  kLabelValueLengthLimit,  // 400: a label value longer than label_value_length_limit
};
inline constexpr std::size_t kWriteErrorCount = 15;

// "unsupported_media_type", "body_too_large", "bad_snappy", "bad_protobuf",
// "invalid_labels", "out_of_order_sample", "duplicate_sample", "series_limit",
// "store_unavailable", "internal", "sample_too_far_in_future",
// "sample_too_far_in_past", "label_limit", "label_name_length_limit",
// "label_value_length_limit": label values for /metrics.
std::string_view WriteErrorName(WriteError error);

// What one series' labels may hold: Prometheus's scrape limits of the same
// names, applied to remote_write series (model/label_limits.h).
using LabelLimits = model::LabelLimits;

struct Sample {
  std::int64_t timestamp_ms = 0;  // milliseconds since the Unix epoch
  double value = 0;               // bit-exact as sent (stale markers included)

  friend bool operator==(const Sample&, const Sample&) = default;
};

struct TimeSeries {
  model::Labels labels;  // as sent: decoding neither sorts nor checks them
  std::vector<Sample> samples;
  // Exemplars and native-histogram samples sent with the series. Outside the
  // 1.0 spec and not stored by gpucanary: only counted. The encoder writes
  // this many empty messages (so tests can send them).
  std::size_t exemplars = 0;
  std::size_t histograms = 0;
};

struct WriteRequest {
  std::vector<TimeSeries> timeseries;
  std::size_t metadata = 0;  // MetricMetadata entries sent (not kept; encoded empty)
};

struct DecodeLimits {
  // Larger bodies are refused before anything is decompressed.
  std::size_t max_compressed_bytes = 16U << 20;
  // Checked against snappy's length header before the output is allocated.
  std::size_t max_decompressed_bytes = 64U << 20;
};

// Checks the request headers that say what the body is. Accepted:
//   Content-Type: "application/x-protobuf", optionally with
//     ";proto=prometheus.WriteRequest", or absent (Prometheus 2.42's own
//     receiver does not check it);
//   Content-Encoding: "snappy", or absent (Prometheus 2.42 does not check
//     it either; the body is always read as snappy).
// Errors: kInvalidArgument (answered 415) for remote_write 2.0
// ("proto=io.prometheus.write.v2.Request"), another media type or another
// content coding, with a message saying what was sent and what is spoken.
Status CheckContentHeaders(std::string_view content_encoding, std::string_view content_type);

// CheckContentHeaders, then snappy block decompression and protobuf parsing of
// a WriteRequest. Labels and sample order are not checked (CheckSeriesLabels,
// the receiver). Errors, each naming what was wrong:
//   kInvalidArgument  unsupported content type or encoding (415);
//   kOutOfRange       body or decompressed size over `limits` (413);
//   kParseError       "snappy: corrupt input" or a body that is not a
//                     WriteRequest (400).
// When `reason` is not null and decoding fails, *reason says why.
Result<WriteRequest> DecodeWriteRequest(std::string_view body, std::string_view content_encoding,
                                        std::string_view content_type,
                                        const DecodeLimits& limits = {},
                                        WriteError* reason = nullptr);

// Checks the labels of timeseries[`index`] against the remote_write 1.0 rules:
// names match [a-zA-Z_][a-zA-Z0-9_]*, sorted, unique; values non-empty valid
// UTF-8; a __name__ label whose value matches [a-zA-Z_:][a-zA-Z0-9_:]*.
// Errors: kInvalidArgument, "timeseries[3].labels[1] 'gpu': duplicate name"
// (the first problem found; "timeseries[3]: no __name__ label").
Status CheckSeriesLabels(const model::Labels& labels, std::size_t index);

// Checks the labels of timeseries[`index`] against `limits`, in the words of
// Prometheus's scrape errors (scrape.go verifyLabelLimits). Errors:
// kInvalidArgument, e.g. "timeseries[2]: label_limit exceeded (metric: up,
// number of labels: 31, limit: 30)"; *reason (when not null) says which
// limit (kLabelLimit, kLabelNameLengthLimit or kLabelValueLengthLimit).
Status CheckLabelLimits(const model::Labels& labels, std::size_t index, const LabelLimits& limits,
                        WriteError* reason = nullptr);

// snappy_block(protobuf(WriteRequest)), as a remote_write 1.0 sender posts it
// (with "Content-Encoding: snappy" and "Content-Type: application/x-protobuf").
// Writes whatever it is given, valid or not, so tests can send bad series.
std::string EncodeWriteRequest(const WriteRequest& request);

}  // namespace gpucanary::remote
