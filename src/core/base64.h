#pragma once
// RFC 4648 §4 base64 (the standard alphabet, '=' padding), for HTTP Basic
// authentication (RFC 7617) in both directions.

#include <optional>
#include <string>
#include <string_view>

namespace gpucanary {

std::string Base64Encode(std::string_view bytes);

// The bytes `text` encodes; nullopt unless it is canonical padded base64
// (length a multiple of 4, only the alphabet, '=' only as the last one or two
// characters, no bits set after the last byte).
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace gpucanary
