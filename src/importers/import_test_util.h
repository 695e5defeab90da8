#pragma once
// Helpers for the importer tests only: temporary files, and reading back a
// recorded file (plain or gzip) line by line without holding it in memory.

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "importers/csv_importer.h"
#include "importers/import_report.h"
#include "model/escaping.h"
#include "recording/recording_writer.h"

namespace gpucanary::importers::testing {

inline std::filesystem::path TempPath(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("importers_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

inline std::filesystem::path WriteTempFile(const std::string& name, std::string_view text) {
  const std::filesystem::path path = TempPath(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return path;
}

inline std::filesystem::path WriteTempGzip(const std::string& name, std::string_view text) {
  const std::filesystem::path path = TempPath(name);
  gzFile gz = gzopen(path.c_str(), "wb");
  EXPECT_NE(gz, nullptr);
  EXPECT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  EXPECT_EQ(gzclose(gz), Z_OK);
  return path;
}

// Calls `visit` with each line of `path` (gzip or plain), without its newline.
inline void ForEachLine(const std::filesystem::path& path,
                        const std::function<void(std::string_view)>& visit) {
  gzFile gz = gzopen(path.c_str(), "rb");
  ASSERT_NE(gz, nullptr) << path;
  std::array<char, 4096> buffer{};
  std::string line;
  while (gzgets(gz, buffer.data(), static_cast<int>(buffer.size())) != nullptr) {
    line += buffer.data();
    if (line.empty() || line.back() != '\n') continue;  // a longer line: keep reading
    line.pop_back();
    visit(line);
    line.clear();
  }
  if (!line.empty()) visit(line);
  gzclose(gz);
}

inline std::vector<std::string> ReadLines(const std::filesystem::path& path) {
  std::vector<std::string> lines;
  ForEachLine(path, [&](std::string_view line) { lines.emplace_back(line); });
  return lines;
}

inline std::string ReadAll(const std::filesystem::path& path) {
  std::string text;
  ForEachLine(path, [&](std::string_view line) {
    text += line;
    text += '\n';
  });
  return text;
}

// "# HELP <name> <text>" as the importers write it; the text comes from the DCGM
// catalog, whose wording is not what these tests check.
inline std::string HelpLine(std::string_view name) {
  std::string line = "# HELP " + std::string(name) + " ";
  model::AppendEscaped(line, HelpOf(*FindValueField(name)));
  return line;
}

// Runs `import` (ImportNvidiaSmiCsv or ImportDcgmCsv) from `input` into
// `output` and closes the writer.
template <typename ImportFn>
Result<ImportReport> ImportInto(ImportFn import, const std::string& input,
                                const std::filesystem::path& output, const ImportOptions& options) {
  auto writer = recording::RecordingWriter::Open(output.string());
  if (!writer) return Error(writer.error());
  auto report = import(input, options, **writer);
  if (!report) return report;
  if (Status status = (*writer)->Close(); !status.ok()) return Error(status);
  return report;
}

}  // namespace gpucanary::importers::testing
