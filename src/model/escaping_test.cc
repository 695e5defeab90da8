#include "model/escaping.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace gpucanary::model {
namespace {

std::string Escaped(std::string_view text) {
  std::string out;
  AppendEscaped(out, text);
  return out;
}

// The reader's side of the three escapes (what expfmt's parser and PromQL's
// string literals undo), to check that escaping loses nothing.
std::string Unescaped(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      ++i;
      out += text[i] == 'n' ? '\n' : text[i];
    } else {
      out += text[i];
    }
  }
  return out;
}

TEST(EscapingTest, EscapesBackslashQuoteAndLineFeed) {
  EXPECT_EQ(Escaped("plain"), "plain");
  EXPECT_EQ(Escaped(""), "");
  EXPECT_EQ(Escaped("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(Escaped("\n"), "\\n");
  EXPECT_EQ(Escaped("\\n"), "\\\\n");
  EXPECT_EQ(Escaped("tab\tstays"), "tab\tstays");
  EXPECT_EQ(Escaped("cr\rstays"), "cr\rstays");
  EXPECT_EQ(Escaped("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(EscapingTest, AppendsToWhatIsThere) {
  std::string out = "x=\"";
  AppendEscaped(out, "a\"b");
  EXPECT_EQ(out, "x=\"a\\\"b");
}

TEST(EscapingTest, RoundTrips) {
  for (std::string_view text :
       {"", "plain", "\\", "\"", "\n", "\\\\n", "a\\b\"c\nd", "\n\n\"\"\\\\", "end\\"}) {
    const std::string escaped = Escaped(text);
    EXPECT_EQ(escaped.find('\n'), std::string::npos) << text;
    EXPECT_EQ(Unescaped(escaped), text);
  }
}

}  // namespace
}  // namespace gpucanary::model
