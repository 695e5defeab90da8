#include "remote/write_request.h"

#include <google/protobuf/arena.h>
#include <snappy.h>

#include <climits>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "model/names.h"
#include "model/utf8.h"
#include "net/http_message.h"
#include "remote/remote_write.pb.h"

namespace gpucanary::remote {
namespace {

namespace pb = ::gpucanary::remote::prompb;

constexpr std::string_view kProtobufMediaType = "application/x-protobuf";
constexpr std::string_view kWriteRequestV1 = "prometheus.WriteRequest";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The next ';'-separated part of a header value, trimmed; consumes it.
std::string_view NextParam(std::string_view& rest) {
  const std::size_t semi = rest.find(';');
  const std::string_view part = rest.substr(0, semi);
  rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
  return Trim(part);
}

tl::unexpected<Status> Fail(WriteError why, WriteError* reason, StatusCode code,
                            std::string message) {
  if (reason != nullptr) *reason = why;
  return Error(code, std::move(message));
}

// The worst case of snappy's block format is a 3-byte copy element (tag and
// 2-byte offset) producing 64 bytes, so a body of n bytes decompresses to at
// most 64/3 n bytes; a length header claiming more is a lie, refused before
// the claimed size is allocated.
constexpr std::size_t kMaxSnappyExpansion = 22;

Result<std::string> Uncompress(std::string_view body, const DecodeLimits& limits,
                               WriteError* reason) {
  std::size_t length = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &length) ||
      length / kMaxSnappyExpansion > body.size()) {
    return Fail(WriteError::kBadSnappy, reason, StatusCode::kParseError, "snappy: corrupt input");
  }
  if (length > limits.max_decompressed_bytes) {
    return Fail(WriteError::kBodyTooLarge, reason, StatusCode::kOutOfRange,
                "decompressed body of " + std::to_string(length) + " bytes (snappy header) over " +
                    "the limit of " + std::to_string(limits.max_decompressed_bytes) + " bytes");
  }
  std::string out(length, '\0');
  if (!snappy::RawUncompress(body.data(), body.size(), out.data())) {
    return Fail(WriteError::kBadSnappy, reason, StatusCode::kParseError, "snappy: corrupt input");
  }
  return out;
}

void CopyLabels(const google::protobuf::RepeatedPtrField<pb::Label>& from, model::Labels& to) {
  to.reserve(static_cast<std::size_t>(from.size()));
  for (const pb::Label& l : from) to.push_back(model::Label{l.name(), l.value()});
}

WriteRequest FromProto(const pb::WriteRequest& message) {
  WriteRequest request;
  request.metadata = static_cast<std::size_t>(message.metadata_size());
  request.timeseries.resize(static_cast<std::size_t>(message.timeseries_size()));
  for (int i = 0; i < message.timeseries_size(); ++i) {
    const pb::TimeSeries& from = message.timeseries(i);
    TimeSeries& to = request.timeseries[static_cast<std::size_t>(i)];
    CopyLabels(from.labels(), to.labels);
    to.samples.reserve(static_cast<std::size_t>(from.samples_size()));
    for (const pb::Sample& s : from.samples()) to.samples.push_back({s.timestamp(), s.value()});
    to.exemplars = static_cast<std::size_t>(from.exemplars_size());
    to.histograms = static_cast<std::size_t>(from.histograms_size());
  }
  return request;
}

Status LabelError(std::size_t series, std::size_t label, const model::Label& l,
                  std::string_view what) {
  return Status(StatusCode::kInvalidArgument, "timeseries[" + std::to_string(series) + "].labels[" +
                                                  std::to_string(label) + "] '" + l.name +
                                                  "': " + std::string(what));
}

}  // namespace

std::string_view WriteErrorName(WriteError error) {
  switch (error) {
    case WriteError::kUnsupportedMediaType:
      return "unsupported_media_type";
    case WriteError::kBodyTooLarge:
      return "body_too_large";
    case WriteError::kBadSnappy:
      return "bad_snappy";
    case WriteError::kBadProtobuf:
      return "bad_protobuf";
    case WriteError::kInvalidLabels:
      return "invalid_labels";
    case WriteError::kOutOfOrderSample:
      return "out_of_order_sample";
    case WriteError::kDuplicateSample:
      return "duplicate_sample";
    case WriteError::kSeriesLimit:
      return "series_limit";
    case WriteError::kStoreUnavailable:
      return "store_unavailable";
    case WriteError::kInternal:
      return "internal";
    case WriteError::kSampleTooFarInFuture:
      return "sample_too_far_in_future";
    case WriteError::kSampleTooFarInPast:
      return "sample_too_far_in_past";
    case WriteError::kLabelLimit:
      return "label_limit";
    case WriteError::kLabelNameLengthLimit:
      return "label_name_length_limit";
    case WriteError::kLabelValueLengthLimit:
      return "label_value_length_limit";
  }
  return "internal";
}

Status CheckContentHeaders(std::string_view content_encoding, std::string_view content_type) {
  const std::string_view coding = Trim(content_encoding);
  if (!coding.empty() && !net::EqualsIgnoreCase(coding, "snappy")) {
    return Status(StatusCode::kInvalidArgument,
                  "unsupported Content-Encoding '" + std::string(coding) +
                      "': remote_write 1.0 bodies are snappy block-compressed (snappy)");
  }
  std::string_view rest = content_type;
  const std::string_view media = NextParam(rest);
  if (media.empty() && Trim(rest).empty()) return Status::Ok();
  if (!net::EqualsIgnoreCase(media, kProtobufMediaType)) {
    return Status(StatusCode::kInvalidArgument,
                  "unsupported Content-Type '" + std::string(content_type) +
                      "': this receiver speaks remote_write 1.0 (application/x-protobuf)");
  }
  while (!rest.empty()) {
    const std::string_view param = NextParam(rest);
    const std::size_t eq = param.find('=');
    if (eq == std::string_view::npos ||
        !net::EqualsIgnoreCase(Trim(param.substr(0, eq)), "proto")) {
      continue;
    }
    std::string_view proto = Trim(param.substr(eq + 1));
    if (proto.size() >= 2 && proto.front() == '"' && proto.back() == '"') {
      proto = proto.substr(1, proto.size() - 2);
    }
    if (proto != kWriteRequestV1) {
      return Status(StatusCode::kInvalidArgument,
                    "unsupported remote_write message 'proto=" + std::string(proto) +
                        "': this receiver speaks remote_write 1.0 (proto=prometheus.WriteRequest)");
    }
  }
  return Status::Ok();
}

Result<WriteRequest> DecodeWriteRequest(std::string_view body, std::string_view content_encoding,
                                        std::string_view content_type, const DecodeLimits& limits,
                                        WriteError* reason) {
  if (Status st = CheckContentHeaders(content_encoding, content_type); !st.ok()) {
    return Fail(WriteError::kUnsupportedMediaType, reason, st.code(), st.message());
  }
  if (body.size() > limits.max_compressed_bytes) {
    return Fail(WriteError::kBodyTooLarge, reason, StatusCode::kOutOfRange,
                "body of " + std::to_string(body.size()) + " bytes over the limit of " +
                    std::to_string(limits.max_compressed_bytes) + " bytes");
  }
  Result<std::string> uncompressed = Uncompress(body, limits, reason);
  if (!uncompressed) return Error(uncompressed.error());
  const std::string& raw = *uncompressed;
  if (raw.size() > static_cast<std::size_t>(INT_MAX)) {
    return Fail(WriteError::kBodyTooLarge, reason, StatusCode::kOutOfRange,
                "decompressed body of " + std::to_string(raw.size()) + " bytes over 2 GiB");
  }
  // Protobuf reports bad input by returning false; only allocation failure
  // throws, and it must not leave this component as an exception.
  try {
    google::protobuf::Arena arena;
    auto* message = google::protobuf::Arena::CreateMessage<pb::WriteRequest>(&arena);
    if (!message->ParseFromArray(raw.data(), static_cast<int>(raw.size()))) {
      return Fail(WriteError::kBadProtobuf, reason, StatusCode::kParseError,
                  "protobuf: the " + std::to_string(raw.size()) +
                      " decompressed bytes are not a prometheus.WriteRequest");
    }
    return FromProto(*message);
  } catch (const std::exception& e) {
    return Fail(WriteError::kInternal, reason, StatusCode::kInternal,
                std::string("protobuf: decoding failed: ") + e.what());
  }
}

Status CheckSeriesLabels(const model::Labels& labels, std::size_t index) {
  bool has_name = false;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const model::Label& l = labels[i];
    if (l.name.empty()) return LabelError(index, i, l, "empty name");
    if (!model::IsValidLabelName(l.name)) return LabelError(index, i, l, "invalid name");
    if (i > 0 && labels[i - 1].name == l.name) return LabelError(index, i, l, "duplicate name");
    if (i > 0 && labels[i - 1].name > l.name) {
      return LabelError(index, i, l, "not sorted (after '" + labels[i - 1].name + "')");
    }
    if (l.value.empty()) return LabelError(index, i, l, "empty value");
    if (!model::IsValidUtf8(l.value)) return LabelError(index, i, l, "value is not UTF-8");
    if (l.name == model::kMetricNameLabel) {
      if (!model::IsValidMetricName(l.value)) {
        return LabelError(index, i, l, "invalid metric name '" + l.value + "'");
      }
      has_name = true;
    }
  }
  if (!has_name) {
    return Status(StatusCode::kInvalidArgument,
                  "timeseries[" + std::to_string(index) + "]: no __name__ label");
  }
  return Status::Ok();
}

Status CheckLabelLimits(const model::Labels& labels, std::size_t index, const LabelLimits& limits,
                        WriteError* reason) {
  const std::optional<model::LabelLimitProblem> problem = model::CheckLabelLimits(labels, limits);
  if (!problem) return Status::Ok();
  if (reason != nullptr) {
    switch (problem->limit) {
      case model::LabelLimit::kCount:
        *reason = WriteError::kLabelLimit;
        break;
      case model::LabelLimit::kNameLength:
        *reason = WriteError::kLabelNameLengthLimit;
        break;
      case model::LabelLimit::kValueLength:
        *reason = WriteError::kLabelValueLengthLimit;
        break;
    }
  }
  return Status(StatusCode::kInvalidArgument,
                "timeseries[" + std::to_string(index) + "]: " + problem->message);
}

std::string EncodeWriteRequest(const WriteRequest& request) {
  google::protobuf::Arena arena;
  auto* message = google::protobuf::Arena::CreateMessage<pb::WriteRequest>(&arena);
  message->mutable_timeseries()->Reserve(static_cast<int>(request.timeseries.size()));
  for (const TimeSeries& from : request.timeseries) {
    pb::TimeSeries* to = message->add_timeseries();
    for (const model::Label& l : from.labels) {
      pb::Label* label = to->add_labels();
      label->set_name(l.name);
      label->set_value(l.value);
    }
    to->mutable_samples()->Reserve(static_cast<int>(from.samples.size()));
    for (const Sample& s : from.samples) {
      pb::Sample* sample = to->add_samples();
      sample->set_value(s.value);
      sample->set_timestamp(s.timestamp_ms);
    }
    for (std::size_t i = 0; i < from.exemplars; ++i) to->add_exemplars();
    for (std::size_t i = 0; i < from.histograms; ++i) to->add_histograms();
  }
  for (std::size_t i = 0; i < request.metadata; ++i) message->add_metadata();
  const std::string raw = message->SerializeAsString();
  std::string compressed;
  snappy::Compress(raw.data(), raw.size(), &compressed);
  return compressed;
}

}  // namespace gpucanary::remote
