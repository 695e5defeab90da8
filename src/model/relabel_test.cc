// Cases ported from Prometheus's model/relabel/relabel_test.go (TestRelabel,
// TestRelabelValidate, TestTargetLabelLegacyValidity) at commit
// d15adb9ad7e5d9fbde3a9a8f30200593a5a14d86 (github.com/prometheus/prometheus),
// in its order. As there, TestRelabel's rules use UTF-8 name validation.
#include "model/relabel.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

// The cases are RelabelConfigs with designated initializers naming only the
// fields Prometheus's cases set; GCC 12 warns about the omitted ones.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace gpucanary::model {
namespace {

using A = RelabelAction;
using C = RelabelConfig;

Labels FromMap(const std::map<std::string, std::string>& m) {
  Labels out;
  for (const auto& [n, v] : m) out.push_back({n, v});
  return out;  // std::map iterates sorted
}

struct Case {
  Labels input;
  std::vector<C> relabel;
  Labels output;
  bool drop = false;
};

std::vector<Case> PrometheusCases() {
  const Labels abc = FromMap({{"a", "foo"}, {"b", "bar"}, {"c", "baz"}});
  const Labels ports = FromMap({{"__tmp_port", "1234"}, {"__port1", "1234"}, {"__port2", "5678"}});
  const Labels lines = FromMap({{"a", "line1\nline2"}, {"b", "bar"}, {"c", "baz"}});
  return {
      {abc,
       {{.source_labels = {"a"},
         .regex = "f(.*)",
         .target_label = "d",
         .replacement = "ch${1}-ch${1}"}},
       FromMap({{"a", "foo"}, {"b", "bar"}, {"c", "baz"}, {"d", "choo-choo"}})},
      {abc,
       {{.source_labels = {"a", "b"},
         .regex = "f(.*);(.*)r",
         .target_label = "a",
         .replacement = "b${1}${2}m"},
        {.source_labels = {"c", "a"},
         .regex = "(b).*b(.*)ba(.*)",
         .target_label = "d",
         .replacement = "$1$2$2$3"}},
       FromMap({{"a", "boobam"}, {"b", "bar"}, {"c", "baz"}, {"d", "boooom"}})},
      {FromMap({{"a", "foo"}}),
       {{.source_labels = {"a"}, .regex = ".*o.*", .action = A::kDrop},
        {.source_labels = {"a"},
         .regex = "f(.*)",
         .target_label = "d",
         .replacement = "ch$1-ch$1"}},
       {},
       true},
      {FromMap({{"a", "foo"}, {"b", "bar"}}),
       {{.source_labels = {"a"}, .regex = ".*o.*", .action = A::kDrop}},
       {},
       true},
      {FromMap({{"a", "abc"}}),
       {{.source_labels = {"a"}, .regex = ".*(b).*", .target_label = "d", .replacement = "$1"}},
       FromMap({{"a", "abc"}, {"d", "b"}})},
      {FromMap({{"a", "foo"}}),
       {{.source_labels = {"a"}, .regex = "no-match", .action = A::kDrop}},
       FromMap({{"a", "foo"}})},
      {FromMap({{"a", "foo"}}),
       {{.source_labels = {"a"}, .regex = "f|o", .action = A::kDrop}},
       FromMap({{"a", "foo"}})},
      {FromMap({{"a", "foo"}}),
       {{.source_labels = {"a"}, .regex = "no-match", .action = A::kKeep}},
       {},
       true},
      {FromMap({{"a", "foo"}}),
       {{.source_labels = {"a"}, .regex = "f.*", .action = A::kKeep}},
       FromMap({{"a", "foo"}})},
      // No replacement must be applied if there is no match.
      {FromMap({{"a", "boo"}}),
       {{.source_labels = {"a"}, .regex = "f", .target_label = "b", .replacement = "bar"}},
       FromMap({{"a", "boo"}})},
      // Blank replacement should delete the label.
      {FromMap({{"a", "foo"}, {"f", "baz"}}),
       {{.source_labels = {"a"}, .regex = "(f).*", .target_label = "$1", .replacement = "$2"}},
       FromMap({{"a", "foo"}})},
      {abc,
       {{.source_labels = {"c"}, .modulus = 1000, .target_label = "d", .action = A::kHashMod}},
       FromMap({{"a", "foo"}, {"b", "bar"}, {"c", "baz"}, {"d", "976"}})},
      {FromMap({{"a", "foo\nbar"}}),
       {{.source_labels = {"a"}, .modulus = 1000, .target_label = "b", .action = A::kHashMod}},
       FromMap({{"a", "foo\nbar"}, {"b", "734"}})},
      {FromMap({{"a", "foo"}, {"b1", "bar"}, {"b2", "baz"}}),
       {{.regex = "(b.*)", .replacement = "bar_${1}", .action = A::kLabelMap}},
       FromMap({{"a", "foo"}, {"b1", "bar"}, {"b2", "baz"}, {"bar_b1", "bar"}, {"bar_b2", "baz"}})},
      {FromMap({{"a", "foo"},
                {"__meta_my_bar", "aaa"},
                {"__meta_my_baz", "bbb"},
                {"__meta_other", "ccc"}}),
       {{.regex = "__meta_(my.*)", .replacement = "${1}", .action = A::kLabelMap}},
       FromMap({{"a", "foo"},
                {"__meta_my_bar", "aaa"},
                {"__meta_my_baz", "bbb"},
                {"__meta_other", "ccc"},
                {"my_bar", "aaa"},
                {"my_baz", "bbb"}})},
      // valid case
      {FromMap({{"a", "some-name-value"}}),
       {{.source_labels = {"a"},
         .regex = "some-([^-]+)-([^,]+)",
         .target_label = "${1}",
         .replacement = "${2}"}},
       FromMap({{"a", "some-name-value"}, {"name", "value"}})},
      // invalid replacement ""
      {FromMap({{"a", "some-name-value"}}),
       {{.source_labels = {"a"},
         .regex = "some-([^-]+)-([^,]+)",
         .target_label = "${1}",
         .replacement = "${3}"}},
       FromMap({{"a", "some-name-value"}})},
      // invalid target_labels
      {FromMap({{"a", "some-name-0"}}),
       {{.source_labels = {"a"},
         .regex = "some-([^-]+)-([^,]+)",
         .target_label = "${3}",
         .replacement = "${1}"},
        {.source_labels = {"a"},
         .regex = "some-([^-]+)-([^,]+)",
         .target_label = "${3}",
         .replacement = "${1}"},
        {.source_labels = {"a"},
         .regex = "some-([^-]+)(-[^,]+)",
         .target_label = "${3}",
         .replacement = "${1}"}},
       FromMap({{"a", "some-name-0"}})},
      // more complex real-life like usecase
      {FromMap({{"__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar"}}),
       {{.source_labels = {"__meta_sd_tags"},
         .regex = "(?:.+,|^)path:(/[^,]+).*",
         .target_label = "__metrics_path__",
         .replacement = "${1}"},
        {.source_labels = {"__meta_sd_tags"},
         .regex = "(?:.+,|^)job:([^,]+).*",
         .target_label = "job",
         .replacement = "${1}"},
        {.source_labels = {"__meta_sd_tags"},
         .regex = "(?:.+,|^)label:([^=]+)=([^,]+).*",
         .target_label = "${1}",
         .replacement = "${2}"}},
       FromMap({{"__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar"},
                {"__metrics_path__", "/secret"},
                {"job", "some-job"},
                {"foo", "bar"}})},
      // From https://github.com/prometheus/prometheus/issues/12283
      {FromMap({{"__meta_kubernetes_pod_container_port_name", "foo"},
                {"__meta_kubernetes_pod_annotation_XXX_metrics_port", "9091"}}),
       {{.regex = "^__meta_kubernetes_pod_container_port_name$", .action = A::kLabelDrop},
        {.source_labels = {"__meta_kubernetes_pod_annotation_XXX_metrics_port"},
         .regex = "(.+)",
         .target_label = "__meta_kubernetes_pod_container_port_name",
         .replacement = "metrics"},
        {.source_labels = {"__meta_kubernetes_pod_container_port_name"},
         .regex = "^metrics$",
         .action = A::kKeep}},
       FromMap({{"__meta_kubernetes_pod_annotation_XXX_metrics_port", "9091"},
                {"__meta_kubernetes_pod_container_port_name", "metrics"}})},
      {FromMap({{"a", "foo"}, {"b1", "bar"}, {"b2", "baz"}}),
       {{.regex = "(b.*)", .action = A::kLabelKeep}},
       FromMap({{"b1", "bar"}, {"b2", "baz"}})},
      {FromMap({{"a", "foo"}, {"b1", "bar"}, {"b2", "baz"}}),
       {{.regex = "(b.*)", .action = A::kLabelDrop}},
       FromMap({{"a", "foo"}})},
      {FromMap({{"foo", "bAr123Foo"}}),
       {{.source_labels = {"foo"}, .target_label = "foo_uppercase", .action = A::kUppercase},
        {.source_labels = {"foo"}, .target_label = "foo_lowercase", .action = A::kLowercase}},
       FromMap(
           {{"foo", "bAr123Foo"}, {"foo_lowercase", "bar123foo"}, {"foo_uppercase", "BAR123FOO"}})},
      {ports,
       {{.source_labels = {"__tmp_port"}, .target_label = "__port1", .action = A::kKeepEqual}},
       ports},
      {ports,
       {{.source_labels = {"__tmp_port"}, .target_label = "__port1", .action = A::kDropEqual}},
       {},
       true},
      {ports,
       {{.source_labels = {"__tmp_port"}, .target_label = "__port2", .action = A::kDropEqual}},
       ports},
      {ports,
       {{.source_labels = {"__tmp_port"}, .target_label = "__port2", .action = A::kKeepEqual}},
       {},
       true},
      {lines,
       {{.source_labels = {"a"},
         .regex = "line1.*line2",
         .target_label = "d",
         .replacement = "match${1}"}},
       FromMap({{"a", "line1\nline2"}, {"b", "bar"}, {"c", "baz"}, {"d", "match"}})},
      // Replace on source label with UTF-8 characters.
      {FromMap({{"utf-8.label", "line1\nline2"}, {"b", "bar"}, {"c", "baz"}}),
       {{.source_labels = {"utf-8.label"},
         .regex = "line1.*line2",
         .target_label = "d",
         .replacement = "match${1}"}},
       FromMap({{"utf-8.label", "line1\nline2"}, {"b", "bar"}, {"c", "baz"}, {"d", "match"}})},
      // Replace targetLabel with UTF-8 characters.
      {lines,
       {{.source_labels = {"a"},
         .regex = "line1.*line2",
         .target_label = "utf-8.label",
         .replacement = "match${1}"}},
       FromMap({{"a", "line1\nline2"}, {"b", "bar"}, {"c", "baz"}, {"utf-8.label", "match"}})},
      // Replace targetLabel with UTF-8 characters and $variable.
      {lines,
       {{.source_labels = {"a"},
         .regex = "line1.*line2",
         .target_label = "utf-8.label${1}",
         .replacement = "match${1}"}},
       FromMap({{"a", "line1\nline2"}, {"b", "bar"}, {"c", "baz"}, {"utf-8.label", "match"}})},
      // Replace targetLabel with UTF-8 characters and various $var styles.
      {lines,
       {{.source_labels = {"a"},
         .regex = "(line1).*(?<second>line2)",
         .target_label = "label1_${1}",
         .replacement = "val_${second}"},
        {.source_labels = {"a"},
         .regex = "(line1).*(?<second>line2)",
         .target_label = "label2_$1",
         .replacement = "val_$second"}},
       FromMap({{"a", "line1\nline2"},
                {"b", "bar"},
                {"c", "baz"},
                {"label1_line1", "val_line2"},
                {"label2_line1", "val_line2"}})},
      {FromMap({{"__name__", "http_requests_total"}}),
       {{.source_labels = {"__name__"},
         .regex = ".*_total$",
         .target_label = "__type__",
         .replacement = "counter"}},
       FromMap({{"__name__", "http_requests_total"}, {"__type__", "counter"}})},
      {FromMap({{"__name__", "disk_usage_bytes"}}),
       {{.source_labels = {"__name__"},
         .regex = ".*_bytes$",
         .target_label = "__unit__",
         .replacement = "bytes"}},
       FromMap({{"__name__", "disk_usage_bytes"}, {"__unit__", "bytes"}})},
  };
}

TEST(RelabelTest, PrometheusTestRelabel) {
  const std::vector<Case> cases = PrometheusCases();
  ASSERT_EQ(cases.size(), 34u);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    std::vector<RelabelRule> rules;
    for (C c : cases[i].relabel) {
      c.validation = NameValidation::kUtf8;
      Result<RelabelRule> r = RelabelRule::Compile(std::move(c));
      ASSERT_TRUE(r.has_value()) << r.error().message();
      rules.push_back(std::move(*r));
    }
    Labels labels = cases[i].input;
    const bool keep = Relabel(rules, labels);
    ASSERT_EQ(keep, !cases[i].drop);
    if (keep) {
      EXPECT_EQ(labels, cases[i].output);
    }
  }
}

TEST(RelabelTest, PrometheusTestRelabelValidate) {
  struct V {
    C config;
    std::string expected;  // "" for no error
  };
  const auto utf8 = NameValidation::kUtf8;
  const auto legacy = NameValidation::kLegacy;
  // Go's zero Config has an empty separator and replacement, and no action.
  const std::vector<V> cases = {
      {C{.separator = "", .replacement = "", .action = A::kUnset, .validation = utf8},
       "relabel action cannot be empty"},
      {C{.separator = "", .replacement = "", .action = A::kReplace, .validation = utf8},
       "requires 'target_label' value"},
      {C{.separator = "", .replacement = "", .action = A::kLowercase, .validation = utf8},
       "requires 'target_label' value"},
      // With UTF-8 naming, this is now a legal relabel rule.
      {C{.separator = "", .target_label = "${3}", .action = A::kLowercase, .validation = utf8}, ""},
      {C{.separator = "", .target_label = "${3}", .action = A::kLowercase, .validation = legacy},
       "\"${3}\" is invalid 'target_label' for lowercase action"},
      {C{.source_labels = {"a"},
         .separator = "",
         .regex = "some-([^-]+)-([^,]+)",
         .target_label = "${3}",
         .replacement = "${1}",
         .validation = utf8},
       ""},
      // With UTF-8 naming this targets a valid label.
      {C{.source_labels = {"a"},
         .separator = "",
         .regex = "some-([^-]+)-([^,]+)",
         .target_label = "0${3}",
         .replacement = "${1}",
         .validation = utf8},
       ""},
      {C{.source_labels = {"a"},
         .separator = "",
         .regex = "some-([^-]+)-([^,]+)",
         .target_label = "-${3}",
         .replacement = "${1}",
         .validation = utf8},
       ""},
      {C{.separator = "",
         .regex = "__meta_kubernetes_pod_label_(strimzi_io_.+)",
         .replacement = "$1",
         .action = A::kLabelMap,
         .validation = legacy},
       ""},
      {C{.separator = "",
         .regex = "__meta_(.+)",
         .replacement = "${1}",
         .action = A::kLabelMap,
         .validation = legacy},
       ""},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const Status s = ValidateRelabelConfig(cases[i].config);
    if (cases[i].expected.empty()) {
      EXPECT_TRUE(s.ok()) << s.message();
    } else {
      EXPECT_NE(s.message().find(cases[i].expected), std::string::npos) << s.message();
    }
  }
}

TEST(RelabelTest, PrometheusTestTargetLabelLegacyValidity) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"-label", false},
      {"label", true},
      {"label${1}", true},
      {"${1}label", true},
      {"${1}", true},
      {"${1}label", true},
      {"${", false},
      {"$", false},
      {"${}", false},
      {"foo${", false},
      {"$1", true},
      {"asd$2asd", true},
      {"-foo${1}bar-", false},
      {"bar.foo${1}bar", false},
      {"_${1}_", true},
      {"foo${bar}foo", true},
  };
  for (const auto& [text, valid] : cases) {
    EXPECT_EQ(IsValidLegacyTargetTemplate(text), valid) << text;
  }
}

// Beyond Prometheus's cases: the Go template rules and the YAML-level rules
// (explicit fields) that Validate enforces.
TEST(RelabelTest, ExpandFollowsGoTemplates) {
  const auto apply = [](C c, Labels in) {
    Result<RelabelRule> r = RelabelRule::Compile(std::move(c));
    EXPECT_TRUE(r.has_value()) << r.error().message();
    r->Apply(in);
    return std::string(LabelValue(in, "t"));
  };
  const Labels a = FromMap({{"a", "xy"}});
  EXPECT_EQ(
      apply(
          {.source_labels = {"a"}, .regex = "(x)(y)", .target_label = "t", .replacement = "$1x-$2"},
          a),
      "-y");  // "$1x" names group "1x": none
  EXPECT_EQ(apply({.source_labels = {"a"},
                   .regex = "(x)(y)",
                   .target_label = "t",
                   .replacement = "$$1 ${1}x $ {"},
                  a),
            "$1 xx $ {");
  EXPECT_EQ(
      apply(
          {.source_labels = {"a"}, .regex = "(x)(y)", .target_label = "t", .replacement = "$0|$01"},
          a),
      "xy|");  // $0 the whole match; leading zeros name no group
  EXPECT_EQ(apply({.source_labels = {"a"},
                   .regex = "(?P<first>x)(y)",
                   .target_label = "t",
                   .replacement = "${first}$first"},
                  a),
            "xx");
  // Anchored: a partial match is no match.
  EXPECT_EQ(
      apply({.source_labels = {"a"}, .regex = "x", .target_label = "t", .replacement = "hit"}, a),
      "");
  // Absent source labels join as "".
  EXPECT_EQ(apply({.source_labels = {"a", "nope", "a"}, .separator = "/", .target_label = "t"}, a),
            "xy//xy");
}

TEST(RelabelTest, CaseMappingIsUnicode) {
  Result<RelabelRule> r =
      RelabelRule::Compile({.source_labels = {"a"}, .target_label = "t", .action = A::kUppercase});
  ASSERT_TRUE(r.has_value());
  Labels l = FromMap({{"a", "gr\xc3\xbc\xc3\x9f-\xce\xb1\xff"}});  // grüß-α and a stray byte
  r->Apply(l);
  // Go: ToUpper("ß") is "ß" (no single-rune upper case); 0xFF becomes U+FFFD.
  EXPECT_EQ(LabelValue(l, "t"), "GR\xc3\x9c\xc3\x9f-\xce\x91\xef\xbf\xbd");
}

TEST(RelabelTest, ValidateRejectsWhatPrometheusRejects) {
  const auto msg = [](C c) { return ValidateRelabelConfig(c).message(); };
  EXPECT_EQ(msg({.modulus = 0, .target_label = "t", .action = A::kHashMod}),
            "relabel configuration for hashmod requires non-zero modulus");
  EXPECT_EQ(msg({.target_label = "t", .action = A::kKeepEqual, .validation = {}}), "");
  EXPECT_EQ(msg({.regex = "(.*)", .target_label = "t", .action = A::kKeepEqual}),
            "keepequal action requires only 'source_labels' and `target_label`, and no other "
            "fields");
  EXPECT_EQ(msg({.source_labels_set = true, .regex = "x", .action = A::kLabelDrop}),
            "labeldrop action requires only 'regex', and no other fields");
  EXPECT_EQ(msg({.target_label = "a.b"}), "\"a.b\" is invalid 'target_label' for replace action");
  EXPECT_EQ(msg({.target_label = "t", .replacement = "x", .action = A::kLowercase}),
            "'replacement' can not be set for lowercase action");
  EXPECT_EQ(msg({.regex = "(.*)", .replacement = "a-$1", .action = A::kLabelMap}),
            "\"a-$1\" is invalid 'replacement' for labelmap action");
  EXPECT_FALSE(RelabelRule::Compile({.regex = "x(", .target_label = "t"}).has_value());
  EXPECT_EQ(ParseRelabelAction("LabelMap").value(), A::kLabelMap);
  EXPECT_EQ(ParseRelabelAction("nope").error().message(), "unknown relabel action \"nope\"");
}

TEST(RelabelTest, Md5MatchesRfc1321) {
  // RFC 1321 appendix A.5 test suite.
  const auto hex = [](std::string_view s) {
    std::string out;
    for (const std::uint8_t b : Md5(s)) {
      out += "0123456789abcdef"[b >> 4];
      out += "0123456789abcdef"[b & 15];
    }
    return out;
  };
  EXPECT_EQ(hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
}

}  // namespace
}  // namespace gpucanary::model
