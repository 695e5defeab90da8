#pragma once
// Splitting one CSV line into cells, keeping where each cell starts so that
// errors can name a column.
//
// The dialect is RFC 4180 restricted to one line per record, plus the habits of
// the logs we import: blanks (spaces, tabs) around a cell are trimmed, since
// nvidia-smi separates cells with ", "; a cell may be double-quoted, with ""
// for a quote inside. Quoted newlines are not supported: no GPU log needs them.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpucanary::importers {

struct CsvCell {
  std::string_view text;  // trimmed and unquoted
  size_t offset;          // byte offset in the line of the cell's first non-blank character
};

struct CsvSplitError {
  size_t offset;  // byte offset in the line where the problem is
  std::string message;
};

struct CsvSplitOptions {
  // Forgive malformed quoting instead of returning an error, as
  // `gpucanary changepoints` always has: an unterminated quoted cell runs to
  // the end of the line (its "" still one quote), and text after a closing
  // quote, blanks around it trimmed, joins the cell ("a" b,c -> ab, c).
  bool lenient_quotes = false;
};

// Splits `line` into *cells (cleared first). Views point into `line`, or into
// *scratch for quoted cells containing "" (or, lenient, followed by text), so
// both must outlive the cells and *scratch must not be touched meanwhile. An
// empty line yields one empty cell. Returns an error for an unterminated
// quote or text after a closing quote, unless options.lenient_quotes.
std::optional<CsvSplitError> SplitCsvLine(std::string_view line, std::vector<CsvCell>* cells,
                                          std::string* scratch,
                                          const CsvSplitOptions& options = {});

// The 1-based character column of `byte_offset` in `line`, counting UTF-8 code
// points (so a multi-byte character counts once).
size_t CharacterColumn(std::string_view line, size_t byte_offset);

}  // namespace gpucanary::importers
