#include "model/escaping.h"

namespace gpucanary::model {

void AppendEscaped(std::string& out, std::string_view text) {
  size_t run_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\\' && c != '"' && c != '\n') continue;
    out.append(text.data() + run_start, i - run_start);
    out += '\\';
    out += (c == '\n') ? 'n' : c;
    run_start = i + 1;
  }
  out.append(text.data() + run_start, text.size() - run_start);
}

}  // namespace gpucanary::model
