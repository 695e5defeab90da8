#include "importers/csv_line.h"

#include <algorithm>

namespace gpucanary::importers {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

size_t SkipBlanks(std::string_view line, size_t pos) {
  while (pos < line.size() && IsBlank(line[pos])) ++pos;
  return pos;
}

}  // namespace

std::optional<CsvSplitError> SplitCsvLine(std::string_view line, std::vector<CsvCell>* cells,
                                          std::string* scratch) {
  cells->clear();
  scratch->clear();
  // Unquoted text is never longer than the line: no reallocation, views stay valid.
  scratch->reserve(line.size());
  size_t pos = 0;
  while (true) {
    pos = SkipBlanks(line, pos);
    if (pos < line.size() && line[pos] == '"') {
      const size_t open = pos;
      const size_t scratch_start = scratch->size();
      bool escaped = false;
      size_t run_start = pos + 1;
      ++pos;
      while (true) {
        const size_t quote = line.find('"', pos);
        if (quote == std::string_view::npos) {
          return CsvSplitError{open, "unterminated quoted cell"};
        }
        if (quote + 1 < line.size() && line[quote + 1] == '"') {
          escaped = true;
          scratch->append(line.substr(run_start, quote + 1 - run_start));
          pos = quote + 2;
          run_start = pos;
          continue;
        }
        std::string_view text;
        if (escaped) {
          scratch->append(line.substr(run_start, quote - run_start));
          text = std::string_view(*scratch).substr(scratch_start);
        } else {
          text = line.substr(open + 1, quote - open - 1);
        }
        cells->push_back(CsvCell{text, open});
        pos = SkipBlanks(line, quote + 1);
        break;
      }
      if (pos < line.size() && line[pos] != ',') {
        return CsvSplitError{pos, "unexpected text after a closing quote"};
      }
    } else {
      const size_t comma = std::min(line.find(',', pos), line.size());
      size_t end = comma;
      while (end > pos && IsBlank(line[end - 1])) --end;
      cells->push_back(CsvCell{line.substr(pos, end - pos), pos});
      pos = comma;
    }
    if (pos >= line.size()) return std::nullopt;
    ++pos;  // the comma
  }
}

size_t CharacterColumn(std::string_view line, size_t byte_offset) {
  byte_offset = std::min(byte_offset, line.size());
  size_t column = 1;
  for (size_t i = 0; i < byte_offset; ++i) {
    // Continuation bytes 10xxxxxx do not start a character.
    if ((static_cast<unsigned char>(line[i]) & 0xC0U) != 0x80U) ++column;
  }
  return column;
}

}  // namespace gpucanary::importers
