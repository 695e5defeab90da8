#include "expfmt/parser.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpucanary::expfmt {
namespace {

TEST(ParserTest, DcgmExporterLine) {
  Parser p(
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-1\",pci_bus_id=\"00000000:53:00.0\","
      "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\"} 1980\n",
      Format::kPrometheusText);
  ASSERT_EQ(p.Next(), Entry::kSample);
  const SampleView& s = p.sample();
  EXPECT_EQ(s.name, "DCGM_FI_DEV_SM_CLOCK");
  ASSERT_EQ(s.labels.size(), 6u);
  EXPECT_EQ(s.labels[4].name, "modelName");
  EXPECT_EQ(s.labels[4].value, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.value, 1980);
  EXPECT_FALSE(s.has_timestamp());
  EXPECT_EQ(p.Next(), Entry::kEnd);
}

TEST(ParserTest, PrometheusLeniencies) {
  // Trailing comma, space after comma, tab separator, trailing blanks, blank
  // lines, no final newline: all accepted by Prometheus 2.42's scrape parser.
  Parser p("m{a=\"1\",} 1\n\nm{a=\"1\", b=\"2\"}\t2 \n  \nm 3 1700000000000",
           Format::kPrometheusText);
  ASSERT_EQ(p.Next(), Entry::kSample);
  EXPECT_EQ(p.sample().labels.size(), 1u);
  ASSERT_EQ(p.Next(), Entry::kSample);
  EXPECT_EQ(p.sample().labels[1].value, "2");
  EXPECT_EQ(p.sample().value, 2);
  ASSERT_EQ(p.Next(), Entry::kSample);
  EXPECT_EQ(p.sample().timestamp_ms, 1700000000000);
  EXPECT_EQ(p.line(), 5u);
  EXPECT_EQ(p.Next(), Entry::kEnd);
}

TEST(ParserTest, PrometheusRejectsWhatPrometheusRejects) {
  struct Case {
    const char* input;
    std::uint32_t column;
    const char* fragment;
  };
  const Case cases[] = {
      {"   m 1\n", 1, "leading whitespace"},
      {"m 1\r\n", 4, "carriage return"},
      {"m 0x1p-3\n", 3, "invalid value"},
      {"m 1_000\n", 3, "invalid value"},
      {"m 1 1796214000.5\n", 5, "integer milliseconds"},
      {"m{a=\"1\",a=\"2\"} 1\n", 9, "duplicate label name 'a'"},
      {"m{a=\"\xff\"} 1\n", 6, "UTF-8"},
      {"m{a=\"1\" 1\n", 9, "expected ',' or '}'"},
      {"m{a=1} 1\n", 5, "expected '\"'"},
      {"m{a=\"1} 1\n", 5, "missing closing"},
      {"m\n", 2, "missing value"},
      {"0m 1\n", 1, "expected metric name"},
      {"# TYPE m gaugehistogram\n", 10, "invalid metric type"},
  };
  for (const Case& c : cases) {
    Parser p(c.input, Format::kPrometheusText);
    ASSERT_EQ(p.Next(), Entry::kError) << c.input;
    EXPECT_EQ(p.error().line, 1u) << c.input;
    EXPECT_EQ(p.error().column, c.column) << c.input << ": " << p.error().message;
    EXPECT_NE(p.error().message.find(c.fragment), std::string::npos)
        << c.input << ": " << p.error().message;
  }
}

TEST(ParserTest, LabelValueNeverSpansLines) {
  // Found by libFuzzer: an unterminated value must not run into later lines,
  // even when a quote and an escape follow further down.
  Parser p("m{a=\"unterminated and long enough for the SIMD path\nb 2\nc{x=\"\\n\"} 3\n",
           Format::kPrometheusText);
  ASSERT_EQ(p.Next(), Entry::kError);
  EXPECT_EQ(p.error().line, 1u);
  EXPECT_NE(p.error().message.find("unterminated label value"), std::string::npos);
  ASSERT_EQ(p.Next(), Entry::kSample);
  EXPECT_EQ(p.sample().name, "b");
  ASSERT_EQ(p.Next(), Entry::kSample);
  EXPECT_EQ(p.sample().labels[0].value, "\n");
}

TEST(ParserTest, ContinuesAfterAnError) {
  Parser p("m{ 1\nok 2\n", Format::kPrometheusText);
  EXPECT_EQ(p.Next(), Entry::kError);
  ASSERT_EQ(p.Next(), Entry::kSample);
  EXPECT_EQ(p.sample().name, "ok");
  EXPECT_EQ(p.line(), 2u);
}

TEST(ParserTest, LabelEscapes) {
  Parser p("m{a=\"x\\\"y\\\\z\\nw\",b=\"x\\qy\",c=\"plain\"} 1\n", Format::kPrometheusText);
  ASSERT_EQ(p.Next(), Entry::kSample);
  EXPECT_EQ(p.sample().labels[0].value, "x\"y\\z\nw");
  EXPECT_EQ(p.sample().labels[1].value, "x\\qy");  // undefined escape kept
  EXPECT_EQ(p.sample().labels[2].value, "plain");
}

TEST(ParserTest, EscapedValuesStayValidAcrossManyLabels) {
  // Views of earlier escaped labels must survive the scratch space growing.
  std::string line = "m{";
  for (int i = 0; i < 40; ++i) {
    if (i) line += ",";
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "l" + to_string.
    line += 'l';
    line += std::to_string(i);
    line += "=\"v\\\\";
    line += std::to_string(i);
    line += '"';
  }
  line += "} 1\n";
  Parser p(line, Format::kPrometheusText);
  ASSERT_EQ(p.Next(), Entry::kSample);
  ASSERT_EQ(p.sample().labels.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(p.sample().labels[static_cast<std::size_t>(i)].value, "v\\" + std::to_string(i));
  }
}

TEST(ParserTest, SpecialValues) {
  Parser p("a +Inf\nb -Inf\nc NaN\nd inf\ne Infinity\nf 9223372036854775794\ng -1.5e-3\n",
           Format::kPrometheusText);
  std::vector<double> v;
  while (p.Next() == Entry::kSample) v.push_back(p.sample().value);
  ASSERT_EQ(v.size(), 7u);
  EXPECT_TRUE(std::isinf(v[0]) && v[0] > 0);
  EXPECT_TRUE(std::isinf(v[1]) && v[1] < 0);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_TRUE(std::isinf(v[3]));
  EXPECT_TRUE(std::isinf(v[4]));
  EXPECT_EQ(v[5], 9223372036854775794.0);
  EXPECT_DOUBLE_EQ(v[6], -0.0015);
}

TEST(ParserTest, MetadataPrometheus) {
  Parser p("# HELP m Some \\\\ help \\n \\\"q\\\"\n# TYPE m counter\n# random comment\n# HELP e\n",
           Format::kPrometheusText);
  ASSERT_EQ(p.Next(), Entry::kMetadata);
  EXPECT_EQ(p.metadata().kind, MetadataKind::kHelp);
  EXPECT_EQ(p.metadata().text, "Some \\ help \n \\\"q\\\"");  // \" is no escape in 0.0.4 HELP
  ASSERT_EQ(p.Next(), Entry::kMetadata);
  EXPECT_EQ(p.metadata().type, model::MetricType::kCounter);
  ASSERT_EQ(p.Next(), Entry::kMetadata);  // comment skipped; empty HELP accepted
  EXPECT_EQ(p.metadata().name, "e");
  EXPECT_EQ(p.metadata().text, "");
  EXPECT_EQ(p.Next(), Entry::kEnd);
}

TEST(ParserTest, OpenMetricsSampleWithTimestampAndExemplar) {
  Parser p("a_total{x=\"1\"} 3 1775016266.006 # {trace_id=\"abc\"} 0.5 1775016266.1\n# EOF\n",
           Format::kOpenMetrics);
  ASSERT_EQ(p.Next(), Entry::kSample);
  const SampleView& s = p.sample();
  EXPECT_EQ(s.timestamp_ms, 1775016266006);
  ASSERT_TRUE(s.has_exemplar);
  EXPECT_EQ(s.exemplar.labels[0].value, "abc");
  EXPECT_EQ(s.exemplar.value, 0.5);
  EXPECT_EQ(s.exemplar.timestamp_ms, 1775016266100);
  EXPECT_EQ(p.Next(), Entry::kEof);
  EXPECT_EQ(p.Next(), Entry::kEnd);
}

TEST(ParserTest, OpenMetricsTimestampsAreExactMilliseconds) {
  std::int64_t ms = 0;
  bool clamped = false;
  ASSERT_TRUE(ParseTimestamp("1775016266.006", Format::kOpenMetrics, ms, clamped));
  EXPECT_EQ(ms, 1775016266006);
  ASSERT_TRUE(ParseTimestamp("1.5e3", Format::kOpenMetrics, ms, clamped));
  EXPECT_EQ(ms, 1500000);
  ASSERT_TRUE(ParseTimestamp("-1.0005", Format::kOpenMetrics, ms, clamped));
  EXPECT_EQ(ms, -1001);
  ASSERT_TRUE(ParseTimestamp("12345678901234567890.1", Format::kOpenMetrics, ms, clamped));
  EXPECT_TRUE(clamped);
  EXPECT_FALSE(ParseTimestamp("NaN", Format::kOpenMetrics, ms, clamped));
  EXPECT_FALSE(ParseTimestamp("Inf", Format::kOpenMetrics, ms, clamped));
  EXPECT_FALSE(ParseTimestamp("0x1p-3", Format::kOpenMetrics, ms, clamped));
  EXPECT_FALSE(ParseTimestamp("1.1.1", Format::kOpenMetrics, ms, clamped));
}

TEST(ParserTest, OpenMetricsIsStrictAboutWhitespace) {
  const char* bad[] = {"a  1\n", "a 1 \n",          "a 1\t\n",    " a 1\n",
                       "\n",     "a{a=\"1\",} 1\n", "# random\n", "# TYPE a gauge \n"};
  for (const char* input : bad) {
    Parser p(input, Format::kOpenMetrics);
    EXPECT_EQ(p.Next(), Entry::kError) << input;
  }
}

TEST(ParserTest, TextAfterEofIsAnError) {
  Parser p("# EOF\nx 1\n", Format::kOpenMetrics);
  EXPECT_EQ(p.Next(), Entry::kEof);
  EXPECT_EQ(p.Next(), Entry::kError);
  EXPECT_EQ(p.error().line, 2u);
  EXPECT_NE(p.error().message.find("after '# EOF'"), std::string::npos);
}

}  // namespace
}  // namespace gpucanary::expfmt
