#include "core/base64.h"

#include <gtest/gtest.h>

namespace gpucanary {
namespace {

TEST(Base64Test, EncodesRfc4648Vectors) {
  // RFC 4648 §10.
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("user:p\xc3\xa4ssword"), "dXNlcjpww6Rzc3dvcmQ=");
}

TEST(Base64Test, DecodesWhatItEncodes) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "flagger:t0k/en+="}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)), s) << s;
  }
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_EQ(Base64Decode(Base64Encode(all)), all);
}

TEST(Base64Test, RefusesWhatIsNotCanonical) {
  for (std::string_view bad : {"Zg", "Zg=", "Z===", "Zm9v!", "Zm9v\n", "Zh==", "Zm9=", "=Zm9",
                               "Zm=v", "Zm 9v", "Zg==Zg=="}) {
    EXPECT_EQ(Base64Decode(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace gpucanary
