#include "importers/csv_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpucanary::importers {
namespace {

std::vector<std::string> Texts(const std::vector<CsvCell>& cells) {
  std::vector<std::string> texts;
  for (const CsvCell& cell : cells) texts.emplace_back(cell.text);
  return texts;
}

std::vector<size_t> Offsets(const std::vector<CsvCell>& cells) {
  std::vector<size_t> offsets;
  for (const CsvCell& cell : cells) offsets.push_back(cell.offset);
  return offsets;
}

TEST(CsvLineTest, NvidiaSmiStyleCellsAreTrimmed) {
  std::vector<CsvCell> cells;
  std::string scratch;
  const std::string line = "2023/08/24 22:18:34.203, 0 %, 35, 34.63 W";
  ASSERT_FALSE(SplitCsvLine(line, &cells, &scratch).has_value());
  EXPECT_EQ(Texts(cells),
            (std::vector<std::string>{"2023/08/24 22:18:34.203", "0 %", "35", "34.63 W"}));
  EXPECT_EQ(Offsets(cells), (std::vector<size_t>{0, 25, 30, 34}));
}

TEST(CsvLineTest, EmptyCells) {
  std::vector<CsvCell> cells;
  std::string scratch;
  ASSERT_FALSE(SplitCsvLine("a,,b,", &cells, &scratch).has_value());
  EXPECT_EQ(Texts(cells), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_EQ(Offsets(cells), (std::vector<size_t>{0, 2, 3, 5}));
  ASSERT_FALSE(SplitCsvLine("", &cells, &scratch).has_value());
  EXPECT_EQ(Texts(cells), (std::vector<std::string>{""}));
}

TEST(CsvLineTest, QuotedCells) {
  std::vector<CsvCell> cells;
  std::string scratch;
  const std::string line = R"(1,"NVIDIA H100, SXM" , "say ""hi""",x)";
  ASSERT_FALSE(SplitCsvLine(line, &cells, &scratch).has_value());
  EXPECT_EQ(Texts(cells), (std::vector<std::string>{"1", "NVIDIA H100, SXM", "say \"hi\"", "x"}));
  EXPECT_EQ(Offsets(cells), (std::vector<size_t>{0, 2, 23, 36}));
}

TEST(CsvLineTest, QuoteErrors) {
  std::vector<CsvCell> cells;
  std::string scratch;
  auto unterminated = SplitCsvLine(R"(1,"abc)", &cells, &scratch);
  ASSERT_TRUE(unterminated.has_value());
  EXPECT_EQ(unterminated->offset, 2u);
  auto trailing = SplitCsvLine(R"(1,"abc"d,2)", &cells, &scratch);
  ASSERT_TRUE(trailing.has_value());
  EXPECT_EQ(trailing->offset, 7u);
}

TEST(CsvLineTest, LenientQuotesForgiveWhatStrictRefuses) {
  std::vector<CsvCell> cells;
  std::string scratch;
  const CsvSplitOptions lenient{.lenient_quotes = true};
  // An unterminated quote runs to the end of the line, commas and "" included.
  ASSERT_FALSE(SplitCsvLine(R"(1,"a""b, c  )", &cells, &scratch, lenient).has_value());
  EXPECT_EQ(Texts(cells), (std::vector<std::string>{"1", "a\"b, c  "}));
  EXPECT_EQ(Offsets(cells), (std::vector<size_t>{0, 2}));
  // Text after a closing quote joins the cell, blanks around it trimmed.
  ASSERT_FALSE(SplitCsvLine(R"("ab" c d ,"x""y"z,"q" ,w)", &cells, &scratch, lenient).has_value());
  EXPECT_EQ(Texts(cells), (std::vector<std::string>{"abc d", "x\"yz", "q", "w"}));
  EXPECT_EQ(Offsets(cells), (std::vector<size_t>{0, 10, 18, 23}));
  ASSERT_FALSE(SplitCsvLine(R"("a"b"c",d)", &cells, &scratch, lenient).has_value());
  EXPECT_EQ(Texts(cells), (std::vector<std::string>{"ab\"c\"", "d"}));
  // Well-formed lines split as in strict mode.
  ASSERT_FALSE(SplitCsvLine(R"(1,"NVIDIA H100, SXM" , "say ""hi""",x)", &cells, &scratch, lenient)
                   .has_value());
  EXPECT_EQ(Texts(cells), (std::vector<std::string>{"1", "NVIDIA H100, SXM", "say \"hi\"", "x"}));
}

TEST(CsvLineTest, CharacterColumnCountsCodePoints) {
  EXPECT_EQ(CharacterColumn("abc", 0), 1u);
  EXPECT_EQ(CharacterColumn("abc", 2), 3u);
  EXPECT_EQ(CharacterColumn("abc", 3), 4u);  // end of line
  // "°C,x": the degree sign is two bytes but one character.
  EXPECT_EQ(CharacterColumn("\xc2\xb0"
                            "C,x",
                            4),
            4u);
}

}  // namespace
}  // namespace gpucanary::importers
