#pragma once
// Release annotations (docs/contracts.md §5): what a CI/CD pipeline says about a
// release, as one JSON object (an HTTP body) or one object per line (a JSONL
// file):
//
//   {"id": "llama3-70b-2026-12-02.1", "service": "chat-api", "version": "2026.12.02-1",
//    "git_sha": "9f1c2e7", "model": "llama-3-70b-instruct", "checkpoint": "ckpt-18000",
//    "quantization": "fp8", "cuda_version": "12.4", "framework": "vllm",
//    "framework_version": "0.6.3", "environment": "prod", "started_at": 1764680000.0,
//    "targets": ["node-4", "node-5"], "selector": "{Hostname=~\"node-[45]\"}",
//    "previous": "llama3-70b-2026-11-28.2"}
//
// Rules (docs/http-api.md, "Release annotations"):
// - a JSON object; `id` (a non-empty string, at most 256 bytes, no control
//   characters) and `started_at` (Unix seconds, a JSON number, 0 to 1e11) are
//   required;
// - the other known fields are strings when present; `targets` is an array of
//   non-empty hostname strings; `selector` is a PromQL vector selector
//   (model::ParseSelector's grammar, e.g. `{Hostname=~"node-[45]"}`);
// - unknown fields are kept (they stay in `annotation`, the text as received);
// - a field given twice is an error (JSON leaves that undefined).
//
// All functions are pure and thread-safe.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace gpucanary::releases {

struct Release {
  std::string id;
  double started_at = 0;  // Unix seconds
  std::string service;
  std::string version;
  std::string git_sha;
  std::string model;
  std::string checkpoint;
  std::string quantization;
  std::string cuda_version;
  std::string framework;
  std::string framework_version;
  std::string environment;
  std::string previous;
  std::vector<std::string> targets;
  std::string selector;  // "" when absent
  // The JSON object as received, surrounding whitespace removed: unknown
  // fields and the sender's number formatting included.
  std::string annotation;
};

// The string fields above, in the order the outputs list them ("id" first),
// each with a pointer to its member.
struct StringField {
  std::string_view name;
  std::string Release::*member;
};
const std::vector<StringField>& StringFields();

// Parses one annotation (an HTTP body). Errors, kParseError:
//   "3:14: syntax error while parsing object - unexpected '}'; expected string literal"
//   (line:column of a JSON syntax error, 1-based, counted in bytes), or
//   "field 'started_at': expected a number (Unix seconds), got a string".
Result<Release> ParseRelease(std::string_view json_text);

// Parses a JSONL file's text: one annotation per line, blank lines skipped.
// Errors, kParseError, name the file, the line and the column of the value
// at fault: "releases.jsonl:3:40: field 'started_at': expected a number
// (Unix seconds), got a string"; an id seen on an earlier line is an error too.
Result<std::vector<Release>> ParseReleasesJsonl(std::string_view text, std::string_view file_name);

// Reads and parses a JSONL file. Errors: kNotFound / kIoError for the file,
// then as ParseReleasesJsonl.
Result<std::vector<Release>> LoadReleasesJsonl(const std::string& path);

// 1-based line and column (in bytes) of byte `offset` of `text`; an offset
// past the end is the position just after the last byte.
struct TextPosition {
  std::size_t line = 1;
  std::size_t column = 1;
};
TextPosition PositionOf(std::string_view text, std::size_t offset);

}  // namespace gpucanary::releases
