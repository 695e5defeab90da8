#include "importers/csv_line.h"

#include <algorithm>

namespace gpucanary::importers {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

size_t SkipBlanks(std::string_view line, size_t pos) {
  while (pos < line.size() && IsBlank(line[pos])) ++pos;
  return pos;
}

// The quoted cell that opens at line[open], appended to *cells; *pos ends
// after it and the blanks that follow (at the comma, or past the end).
// Errors as SplitCsvLine's.
std::optional<CsvSplitError> ReadQuotedCell(std::string_view line, size_t open,
                                            const CsvSplitOptions& options,
                                            std::vector<CsvCell>* cells, std::string* scratch,
                                            size_t* pos) {
  const size_t scratch_start = scratch->size();
  bool escaped = false;
  size_t run_start = open + 1;
  size_t quote = open;
  while (true) {
    quote = line.find('"', quote + 1);
    if (quote == std::string_view::npos) {
      if (!options.lenient_quotes) return CsvSplitError{open, "unterminated quoted cell"};
      quote = line.size();  // the end of the line closes the cell
      break;
    }
    if (quote + 1 >= line.size() || line[quote + 1] != '"') break;
    escaped = true;
    scratch->append(line.substr(run_start, quote + 1 - run_start));
    ++quote;
    run_start = quote + 1;
  }
  std::string_view text;
  if (escaped) {
    scratch->append(line.substr(run_start, quote - run_start));
    text = std::string_view(*scratch).substr(scratch_start);
  } else {
    text = line.substr(open + 1, quote - open - 1);
  }
  cells->push_back(CsvCell{text, open});
  *pos = SkipBlanks(line, quote + 1);
  if (*pos >= line.size() || line[*pos] == ',') return std::nullopt;
  if (!options.lenient_quotes) {
    return CsvSplitError{*pos, "unexpected text after a closing quote"};
  }
  // The text up to the next comma, blanks trimmed, joins the cell.
  const size_t comma = std::min(line.find(',', *pos), line.size());
  size_t end = comma;
  while (end > *pos && IsBlank(line[end - 1])) --end;
  if (!escaped) scratch->append(text);
  scratch->append(line.substr(*pos, end - *pos));
  cells->back().text = std::string_view(*scratch).substr(scratch_start);
  *pos = comma;
  return std::nullopt;
}

}  // namespace

std::optional<CsvSplitError> SplitCsvLine(std::string_view line, std::vector<CsvCell>* cells,
                                          std::string* scratch, const CsvSplitOptions& options) {
  cells->clear();
  scratch->clear();
  // Unquoted text is never longer than the line: no reallocation, views stay valid.
  scratch->reserve(line.size());
  size_t pos = 0;
  while (true) {
    pos = SkipBlanks(line, pos);
    if (pos < line.size() && line[pos] == '"') {
      if (auto error = ReadQuotedCell(line, pos, options, cells, scratch, &pos)) return error;
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
