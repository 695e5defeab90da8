#include "store/wal_record.h"

#include "store/record_log.h"

namespace gpucanary::store {

void AppendSeriesRecord(std::string& out, SeriesRef ref, const model::Labels& labels) {
  std::string payload;
  PutVarint(payload, 1);
  PutVarint(payload, ref);
  PutLabels(payload, labels);
  AppendRecord(out, kSeriesRecord, payload);
}

void EncodeSamples(std::span<const PendingSample* const> samples, std::string& payload) {
  PutVarint(payload, samples.size());
  std::int64_t prev_ref = 0;
  std::int64_t prev_t = 0;
  for (const PendingSample* p : samples) {
    PutZVarint(payload, WrapSub(static_cast<std::int64_t>(p->ref), prev_ref));
    PutZVarint(payload, WrapSub(p->t, prev_t));
    PutFixed64(payload, p->bits);
    prev_ref = static_cast<std::int64_t>(p->ref);
    prev_t = p->t;
  }
}

void CheckpointBuilder::Add(SeriesRef ref, const model::Labels& labels, const OpenChunk& open) {
  payload_.clear();
  PutVarint(payload_, ref);
  PutLabels(payload_, labels);
  if (open.empty()) {
    payload_.push_back(0);
  } else {
    payload_.push_back(1);
    samples_.clear();
    open.Decode(samples_);
    EncodeChunk(samples_, payload_);
  }
  AppendRecord(out_, kCheckpointSeriesRecord, payload_);
}

bool DecodeCheckpointSeries(std::string_view payload, CheckpointSeries& out) {
  std::size_t pos = 0;
  std::uint64_t ref = 0;
  if (!GetVarint(payload, pos, ref) || !GetLabels(payload, pos, out.labels) ||
      pos >= payload.size()) {
    return false;
  }
  out.ref = static_cast<SeriesRef>(ref);
  out.has_chunk = payload[pos++] == 1;
  out.chunk = payload.substr(pos);
  return true;
}

}  // namespace gpucanary::store
