#pragma once
// gzip content-coding for HTTP bodies (RFC 9110 §8.4.1.3, RFC 1952), with
// zlib. Used by the server to compress large responses and by the client to
// undo it. Thread-safe (no shared state).

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace gpucanary::net {

// Compresses `data` into one gzip member at zlib `level` (1 fastest .. 9
// smallest). Each thread keeps one zlib deflate state (about 270 KB) for
// reuse. Errors: kInvalidArgument for a level outside 1..9 or input of 2 GiB
// or more; kInternal when zlib fails (out of memory).
Result<std::string> GzipCompress(std::string_view data, int level);

// Decompresses a gzip stream; several concatenated members are accepted.
// Errors: kParseError for data that is not gzip, corrupt or truncated;
// kOutOfRange when the output would exceed `max_bytes` (a gzip bomb).
Result<std::string> GzipDecompress(std::string_view data, std::size_t max_bytes);

// Whether a content coding names gzip: "gzip" or its alias "x-gzip" (RFC 9110
// §8.4.1.3), in any case.
bool IsGzipCoding(std::string_view coding);

// Whether an Accept-Encoding value allows gzip (RFC 9110 §12.5.3): "gzip" or
// "x-gzip" listed with a non-zero q, or, when neither is listed, "*" with a
// non-zero q. "" (no header) does not. Examples: "gzip" yes, "gzip;q=0" no,
// "br, *;q=0.1" yes, "identity" no.
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace gpucanary::net
