#include "importers/line_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "importers/import_test_util.h"

namespace gpucanary::importers {
namespace {

using testing::TempPath;
using testing::WriteTempFile;
using testing::WriteTempGzip;

std::vector<std::string> ReadLines(const std::filesystem::path& path) {
  auto reader = LineReader::Open(path.string());
  EXPECT_TRUE(reader.has_value()) << reader.error().ToString();
  std::vector<std::string> lines;
  std::string_view line;
  while (true) {
    auto more = (*reader)->Next(&line);
    EXPECT_TRUE(more.has_value()) << more.error().ToString();
    if (!more || !*more) break;
    lines.emplace_back(line);
    EXPECT_EQ((*reader)->line_number(), lines.size());
  }
  return lines;
}

TEST(LineReaderTest, PlainAndGzipReadTheSame) {
  const std::string text = "a,b\r\n\n1,2\nlast without newline";
  const std::vector<std::string> expected = {"a,b", "", "1,2", "last without newline"};
  EXPECT_EQ(ReadLines(WriteTempFile("lines.csv", text)), expected);
  EXPECT_EQ(ReadLines(WriteTempGzip("lines.csv.gz", text)), expected);
  EXPECT_TRUE(ReadLines(WriteTempFile("empty.csv", "")).empty());
}

TEST(LineReaderTest, LinesAcrossBufferBoundaries) {
  std::string text;
  std::vector<std::string> expected;
  for (int i = 0; i < 40000; ++i) {
    expected.push_back(std::string(static_cast<size_t>(i % 97), 'x') + std::to_string(i));
    text += expected.back() + "\n";
  }
  EXPECT_EQ(ReadLines(WriteTempFile("many.csv", text)), expected);
  EXPECT_EQ(ReadLines(WriteTempGzip("many.csv.gz", text)), expected);
}

TEST(LineReaderTest, AcceptsALongLineUpToTheLimit) {
  const std::string long_line(LineReader::kMaxLineBytes, 'y');
  const auto lines = ReadLines(WriteTempFile("long.csv", "a\n" + long_line + "\nb\n"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], long_line);
}

TEST(LineReaderTest, RefusesALineOverTheLimit) {
  const std::string text = "a\n" + std::string(LineReader::kMaxLineBytes + 10, 'z');
  const auto path = WriteTempFile("too_long.csv", text);
  auto reader = LineReader::Open(path.string());
  ASSERT_TRUE(reader.has_value());
  std::string_view line;
  ASSERT_TRUE(*(*reader)->Next(&line));
  auto more = (*reader)->Next(&line);
  ASSERT_FALSE(more.has_value());
  EXPECT_EQ(more.error().code(), StatusCode::kParseError);
  EXPECT_EQ(more.error().message(), path.string() + ":2:1: line longer than 1048576 bytes");
}

TEST(LineReaderTest, ReportsTruncatedGzip) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "row " + std::to_string(i * 7919) + "\n";
  const auto full = WriteTempGzip("full.csv.gz", text);
  std::string bytes(std::filesystem::file_size(full), '\0');
  std::ifstream in(full, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const auto cut = WriteTempFile("cut.csv.gz", std::string_view(bytes).substr(0, bytes.size() / 2));
  auto reader = LineReader::Open(cut.string());
  ASSERT_TRUE(reader.has_value());
  std::string_view line;
  Result<bool> more = true;
  while (more && *more) more = (*reader)->Next(&line);
  ASSERT_FALSE(more.has_value());
  EXPECT_EQ(more.error().code(), StatusCode::kIoError);
  EXPECT_NE(more.error().message().find("truncated gzip"), std::string::npos)
      << more.error().message();
}

TEST(LineReaderTest, MissingFile) {
  auto reader = LineReader::Open(TempPath("does-not-exist.csv").string());
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpucanary::importers
