#include "model/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace gpucanary::model {
namespace {

TEST(Utf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(IsValidUtf8("plain ascii that is longer than eight bytes"));
  EXPECT_TRUE(
      IsValidUtf8("\xc2\xb0"
                  "C"));  // degree sign
  EXPECT_TRUE(IsValidUtf8("\xe2\x98\x83 snowman"));
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x94\xa5"));  // U+1F525
}

TEST(Utf8Test, AcceptsTheBoundaryCodePoints) {
  EXPECT_TRUE(IsValidUtf8(std::string("\x00", 1)));  // U+0000
  EXPECT_TRUE(IsValidUtf8("\x7f"));                  // U+007F
  EXPECT_TRUE(IsValidUtf8("\xc2\x80"));              // U+0080, shortest two-byte
  EXPECT_TRUE(IsValidUtf8("\xdf\xbf"));              // U+07FF
  EXPECT_TRUE(IsValidUtf8("\xe0\xa0\x80"));          // U+0800, shortest three-byte
  EXPECT_TRUE(IsValidUtf8("\xed\x9f\xbf"));          // U+D7FF, just below the surrogates
  EXPECT_TRUE(IsValidUtf8("\xee\x80\x80"));          // U+E000, just above them
  EXPECT_TRUE(IsValidUtf8("\xef\xbf\xbf"));          // U+FFFF
  EXPECT_TRUE(IsValidUtf8("\xf0\x90\x80\x80"));      // U+10000, shortest four-byte
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));      // U+10FFFF, the last code point
}

TEST(Utf8Test, RejectsOverlongForms) {
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // '/' in two bytes
  EXPECT_FALSE(IsValidUtf8("\xc1\xbf"));          // U+007F in two bytes
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // '/' in three bytes
  EXPECT_FALSE(IsValidUtf8("\xe0\x9f\xbf"));      // U+07FF in three bytes
  EXPECT_FALSE(IsValidUtf8("\xf0\x80\x80\xaf"));  // '/' in four bytes
  EXPECT_FALSE(IsValidUtf8("\xf0\x8f\xbf\xbf"));  // U+FFFF in four bytes
}

TEST(Utf8Test, RejectsSurrogates) {
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));  // U+D800
  EXPECT_FALSE(IsValidUtf8("\xed\xbf\xbf"));  // U+DFFF
  // A CESU-8 pair (U+D83D U+DD25) is not UTF-8 either.
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\xbd\xed\xb4\xa5"));
}

TEST(Utf8Test, RejectsTruncatedSequences) {
  EXPECT_FALSE(IsValidUtf8("\xc2"));
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));
  EXPECT_FALSE(IsValidUtf8("abc\xe2\x98"));
  EXPECT_FALSE(IsValidUtf8("\xf0\x9f\x94"));
  EXPECT_FALSE(IsValidUtf8("\xe2\x82x"));  // continuation replaced by ASCII
  // Truncation right after a run of ASCII long enough for the eight-byte skip.
  EXPECT_FALSE(IsValidUtf8("0123456789abcdef\xf0\x9f"));
}

TEST(Utf8Test, RejectsCodePointsAboveU10FFFF) {
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));      // U+110000
  EXPECT_FALSE(IsValidUtf8("\xf7\xbf\xbf\xbf"));      // U+1FFFFF
  EXPECT_FALSE(IsValidUtf8("\xf8\x88\x80\x80\x80"));  // five-byte form
}

TEST(Utf8Test, RejectsStrayBytes) {
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xfe"));
  EXPECT_FALSE(IsValidUtf8("\x80"));             // lone continuation byte
  EXPECT_FALSE(IsValidUtf8("a\xbf"));            // continuation after ASCII
  EXPECT_FALSE(IsValidUtf8("\xc3\xa9\xa9"));     // one continuation too many
  EXPECT_FALSE(IsValidUtf8("01234567\x80xyz"));  // after an eight-byte ASCII run
}

}  // namespace
}  // namespace gpucanary::model
