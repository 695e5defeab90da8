#pragma once
// UTF-8 well-formedness, as the exposition formats, remote_write and the store
// require of label values and HELP text. The one validator every component
// uses, so that all of them accept and reject the same bytes.

#include <string_view>

namespace gpucanary::model {

// True when `text` is well-formed UTF-8 (RFC 3629): no overlong forms, no
// surrogates (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequence
// and no stray continuation byte. ASCII runs are checked eight bytes at a
// time, since the parser calls this on every label value. Pure, thread-safe.
bool IsValidUtf8(std::string_view text);

}  // namespace gpucanary::model
