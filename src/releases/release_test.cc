#include "releases/release.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpucanary::releases {
namespace {

// docs/contracts.md §5's example, verbatim.
constexpr std::string_view kDesignExample =
    R"({"id": "llama3-70b-2026-12-02.1", "service": "chat-api", "version": "2026.12.02-1",
 "git_sha": "9f1c2e7", "model": "llama-3-70b-instruct", "checkpoint": "ckpt-18000",
 "quantization": "fp8", "cuda_version": "12.4", "framework": "vllm", "framework_version": "0.6.3",
 "environment": "prod", "started_at": 1764680000.0,
 "targets": ["node-4", "node-5"], "selector": "{Hostname=~\"node-[45]\"}",
 "previous": "llama3-70b-2026-11-28.2"})";

std::string ErrorOf(std::string_view text) {
  auto r = ParseRelease(text);
  if (r) return "(parsed)";
  EXPECT_EQ(r.error().code(), StatusCode::kParseError);
  return r.error().message();
}

TEST(ReleaseTest, ParsesTheDesignExample) {
  auto r = ParseRelease(kDesignExample);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->id, "llama3-70b-2026-12-02.1");
  EXPECT_EQ(r->service, "chat-api");
  EXPECT_EQ(r->version, "2026.12.02-1");
  EXPECT_EQ(r->git_sha, "9f1c2e7");
  EXPECT_EQ(r->model, "llama-3-70b-instruct");
  EXPECT_EQ(r->checkpoint, "ckpt-18000");
  EXPECT_EQ(r->quantization, "fp8");
  EXPECT_EQ(r->cuda_version, "12.4");
  EXPECT_EQ(r->framework, "vllm");
  EXPECT_EQ(r->framework_version, "0.6.3");
  EXPECT_EQ(r->environment, "prod");
  EXPECT_EQ(r->started_at, 1764680000.0);
  EXPECT_EQ(r->targets, (std::vector<std::string>{"node-4", "node-5"}));
  EXPECT_EQ(r->selector, R"({Hostname=~"node-[45]"})");
  EXPECT_EQ(r->previous, "llama3-70b-2026-11-28.2");
  EXPECT_EQ(r->annotation, kDesignExample);
}

TEST(ReleaseTest, KeepsUnknownFieldsAndTheTextAsReceived) {
  const std::string text =
      "  "
      "\n{\"id\":\"r1\",\"started_at\":1764680000,\"ticket\":{\"jira\":\"OPS-1\"},\"x\":[1,2]}\n\n";
  auto r = ParseRelease(text);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->annotation,
            R"({"id":"r1","started_at":1764680000,"ticket":{"jira":"OPS-1"},"x":[1,2]})");
  EXPECT_EQ(r->started_at, 1764680000.0);
  EXPECT_TRUE(r->service.empty());
  EXPECT_TRUE(r->targets.empty());
}

TEST(ReleaseTest, FieldErrorsNameTheField) {
  EXPECT_EQ(ErrorOf(R"({"id":"r1","started_at":"2026-12-02T13:00:00Z"})"),
            "field 'started_at': expected a number (Unix seconds), got a string");
  EXPECT_EQ(ErrorOf(R"({"id":"r1"})"), "field 'started_at': required (Unix seconds)");
  EXPECT_EQ(ErrorOf(R"({"started_at":1})"), "field 'id': required");
  EXPECT_EQ(ErrorOf(R"({"id":7,"started_at":1})"), "field 'id': expected a string, got a number");
  EXPECT_EQ(ErrorOf(R"({"id":"","started_at":1})"), "field 'id': must not be empty");
  EXPECT_EQ(ErrorOf("{\"id\":\"a\\nb\",\"started_at\":1}"),
            "field 'id': must not hold control characters");
  EXPECT_EQ(ErrorOf(R"({"id":")" + std::string(257, 'x') + R"(","started_at":1})"),
            "field 'id': longer than 256 bytes");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1764680000000})"),
            "field 'started_at': expected Unix seconds, got 1764680000000 (milliseconds?)");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":-1})"),
            "field 'started_at': expected Unix seconds >= 0, got -1");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1,"version":2})"),
            "field 'version': expected a string, got a number");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1,"previous":null})"),
            "field 'previous': expected a string, got null");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1,"targets":"node-4"})"),
            "field 'targets': expected an array of hostnames, got a string");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1,"targets":["node-4",5]})"),
            "field 'targets[1]': expected a hostname string, got a number");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1,"targets":[""]})"),
            "field 'targets[0]': must not be empty");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1,"selector":"{Hostname=\"node-4\""})"),
            "field 'selector': bad selector: 1:19: expected ',' or '}'");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1,"selector":["a"]})"),
            "field 'selector': expected a string, got an array");
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1,"id":"s"})"), "field 'id': given twice");
  // A key spelled with an escape is the same key.
  EXPECT_EQ(ErrorOf(R"({"id":"r","started_at":1,"\u0069d":"s"})"), "field 'id': given twice");
  EXPECT_EQ(ErrorOf(R"(["id"])"), "expected a JSON object, got an array");
}

TEST(ReleaseTest, SyntaxErrorsSayLineAndColumn) {
  EXPECT_EQ(ErrorOf("{\"id\": \"r\",\n \"started_at\": 1,\n}"),
            "3:1: syntax error while parsing object key - unexpected '}'; expected string literal");
  EXPECT_EQ(ErrorOf("{\"id\": \"r\""),
            "1:11: syntax error while parsing object - unexpected end of input; expected '}'");
  EXPECT_EQ(ErrorOf(""),
            "1:1: syntax error while parsing value - unexpected end of input; expected '[', "
            "'{', or a literal");
  EXPECT_EQ(ErrorOf("{\"id\":\"r\",\n\"started_at\":1e400}"),
            "2:14: number overflow parsing '1e400'");
  EXPECT_EQ(ErrorOf("{\"id\":\"r\",\"started_at\":1} {}"),
            "1:27: syntax error while parsing value - unexpected '{'; expected end of input");
}

TEST(ReleaseTest, AByteOrderMarkIsSkipped) {
  auto r = ParseRelease("\xEF\xBB\xBF{\"id\":\"r\",\"started_at\":1}");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->annotation, R"({"id":"r","started_at":1})");
  EXPECT_EQ(ErrorOf("\xEF\xBB\xBF{\"id\":\"r\",\"started_at\":\"x\"}"),
            "field 'started_at': expected a number (Unix seconds), got a string");
  auto jsonl = ParseReleasesJsonl("\xEF\xBB\xBF{\"id\":\"r\",\"started_at\":\"x\"}", "f.jsonl");
  ASSERT_FALSE(jsonl.has_value());
  EXPECT_EQ(jsonl.error().message(),
            "f.jsonl:1:27: field 'started_at': expected a number (Unix seconds), got a string");
}

TEST(ReleaseTest, ValidSelectorsAndTargets) {
  auto r = ParseRelease(
      R"({"id":"r","started_at":1.5,"selector":"DCGM_FI_DEV_SM_CLOCK{Hostname=~\"node-[0-9]+\",gpu!=\"3\"}","targets":[]})");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->started_at, 1.5);
  EXPECT_TRUE(r->targets.empty());
}

TEST(ReleaseTest, JsonlErrorsSayFileLineAndColumnOfTheValue) {
  const std::string text =
      "{\"id\":\"r1\",\"started_at\":1764680000}\n"
      "\n"
      "{\"id\":\"r2\",\"service\":\"chat\",\"started_at\":\"yesterday\"}\n";
  auto r = ParseReleasesJsonl(text, "releases.jsonl");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(),
            "releases.jsonl:3:42: field 'started_at': expected a number (Unix seconds), got a "
            "string");

  r = ParseReleasesJsonl("{\"id\":\"r1\"}\n", "f.jsonl");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "f.jsonl:1:1: field 'started_at': required (Unix seconds)");

  r = ParseReleasesJsonl("{\"id\":\"r1\",\"started_at\":1}\n  {\"id\":\"r1\",\"started_at\":2}",
                         "f.jsonl");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "f.jsonl:2:9: field 'id': release 'r1' already on line 1");

  r = ParseReleasesJsonl("{\"id\":\"r1\",\"started_at\":1}\n{\"id\":\"r2\" \"started_at\":2}\n",
                         "f.jsonl");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(),
            "f.jsonl:2:12: syntax error while parsing object - unexpected string literal; "
            "expected '}'");
}

TEST(ReleaseTest, LoadsAJsonlFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpucanary-releases-" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".jsonl");
  std::ofstream(path) << "{\"id\":\"a\",\"started_at\":10}\r\n"
                         "{\"id\":\"b\",\"started_at\":20,\"model\":\"m\"}\n";
  auto r = LoadReleasesJsonl(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->size(), 2U);
  EXPECT_EQ((*r)[0].id, "a");
  EXPECT_EQ((*r)[0].annotation, R"({"id":"a","started_at":10})");
  EXPECT_EQ((*r)[1].model, "m");
  EXPECT_EQ(LoadReleasesJsonl("/nonexistent/releases.jsonl").error().code(), StatusCode::kNotFound);
}

TEST(ReleaseTest, PositionOfCountsBytes) {
  EXPECT_EQ(PositionOf("ab\ncd", 0).line, 1U);
  EXPECT_EQ(PositionOf("ab\ncd", 4).line, 2U);
  EXPECT_EQ(PositionOf("ab\ncd", 4).column, 2U);
  EXPECT_EQ(PositionOf("ab", 99).column, 3U);
}

}  // namespace
}  // namespace gpucanary::releases
