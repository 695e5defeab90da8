#include "dashboard/dashboard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>

namespace gpucanary::dashboard {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const fs::path kWeb = fs::path(GPUCANARY_SOURCE_DIR) / "web";

net::HttpRequest Request(std::string method, std::string path) {
  net::HttpRequest request;
  request.method = std::move(method);
  request.target = path;
  request.path = std::move(path);
  return request;
}

net::HttpResponse Serve(const net::HttpRequest& request) {
  net::HttpResponse response;
  EXPECT_TRUE(Handle(request, response)) << request.path;
  return response;
}

TEST(DashboardTest, ServesIndexHtmlAtTheRootAsBuilt) {
  const net::HttpResponse r = Serve(Request("GET", "/"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(r.body, ReadFile(kWeb / "index.html"));
  EXPECT_EQ(r.Header("etag"), FindAsset("/")->etag);
  EXPECT_EQ(r.Header("cache-control"), "no-cache");
  EXPECT_EQ(r.Header("x-content-type-options"), "nosniff");
  EXPECT_NE(r.Header("content-security-policy").find("default-src 'self'"), std::string::npos);
}

TEST(DashboardTest, EveryAssetIsTheBytesOfItsSourceFile) {
  const fs::path uplot = kWeb / "node_modules" / "uplot" / "dist";
  const std::pair<std::string, fs::path> expected[] = {
      {"/assets/app.js", kWeb / "app.js"},
      {"/assets/canary.js", kWeb / "canary.js"},
      {"/assets/common.js", kWeb / "common.js"},
      {"/assets/correlate.js", kWeb / "correlate.js"},
      {"/assets/style.css", kWeb / "style.css"},
      {"/assets/uPlot.iife.min.js", uplot / "uPlot.iife.min.js"},
      {"/assets/uPlot.min.css", uplot / "uPlot.min.css"},
  };
  for (const auto& [path, file] : expected) {
    const net::HttpResponse r = Serve(Request("GET", path));
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, ReadFile(file)) << path;
  }
  EXPECT_EQ(Assets().size(), std::size(expected) + 1);
  EXPECT_EQ(Serve(Request("GET", "/assets/app.js")).content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(Serve(Request("GET", "/assets/style.css")).content_type, "text/css; charset=utf-8");
}

// Every stylesheet and script index.html loads is one the handler serves.
TEST(DashboardTest, EveryFileTheIndexLoadsIsServed) {
  const std::string html = ReadFile(kWeb / "index.html");
  const std::regex link(R"re((?:href|src)="(assets/[^"]+)")re");
  int links = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), link); it != std::sregex_iterator();
       ++it, ++links) {
    EXPECT_NE(FindAsset("/" + (*it)[1].str()), nullptr) << (*it)[1];
  }
  EXPECT_EQ(links, 4);
}

// Every module a served script imports ("from './x.js'") is served too.
TEST(DashboardTest, EveryModuleTheScriptsImportIsServed) {
  const std::regex import(R"re(from '\./([^']+\.js)')re");
  int imports = 0;
  for (const char* script : {"app.js", "canary.js", "common.js", "correlate.js"}) {
    const std::string text = ReadFile(kWeb / script);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), import);
         it != std::sregex_iterator(); ++it, ++imports) {
      EXPECT_NE(FindAsset("/assets/" + (*it)[1].str()), nullptr) << script << ": " << (*it)[1];
    }
  }
  // app.js: canary.js, correlate.js, common.js; canary.js, correlate.js: common.js
  EXPECT_EQ(imports, 5);
}

TEST(DashboardTest, EtagsAreStrongAndDistinct) {
  std::set<std::string_view> tags;
  for (const Asset& asset : Assets()) {
    EXPECT_EQ(asset.etag.size(), 22U) << asset.etag;
    EXPECT_EQ(asset.etag.front(), '"');
    EXPECT_EQ(asset.etag.back(), '"');
    tags.insert(asset.etag);
  }
  EXPECT_EQ(tags.size(), Assets().size());
}

TEST(DashboardTest, MatchingIfNoneMatchGets304WithValidatorsAndNoBody) {
  const std::string etag(FindAsset("/assets/app.js")->etag);
  for (const std::string& header : {etag, "W/" + etag, "\"other\", " + etag,
                                    "\"a\",W/" + etag + " , \"b\"", std::string("*")}) {
    net::HttpRequest request = Request("GET", "/assets/app.js");
    request.headers.emplace_back("if-none-match", header);
    const net::HttpResponse r = Serve(request);
    EXPECT_EQ(r.status, 304) << header;
    EXPECT_TRUE(r.body.empty());
    EXPECT_EQ(r.Header("etag"), etag);
    EXPECT_EQ(r.Header("cache-control"), "no-cache");
  }
  net::HttpRequest stale = Request("GET", "/assets/app.js");
  stale.headers.emplace_back("if-none-match", std::string(FindAsset("/")->etag));
  const net::HttpResponse r = Serve(stale);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, ReadFile(kWeb / "app.js"));
}

TEST(DashboardTest, IfNoneMatchParsing) {
  EXPECT_TRUE(IfNoneMatchMatches(R"("abc")", R"("abc")"));
  EXPECT_TRUE(IfNoneMatchMatches(R"( W/"abc")", R"("abc")"));
  EXPECT_TRUE(IfNoneMatchMatches(R"("x,y", "abc")", R"("abc")"));
  EXPECT_FALSE(IfNoneMatchMatches("", R"("abc")"));
  EXPECT_FALSE(IfNoneMatchMatches(R"("abcd")", R"("abc")"));
  EXPECT_FALSE(IfNoneMatchMatches(R"(abc)", R"("abc")"));      // not a quoted tag
  EXPECT_FALSE(IfNoneMatchMatches(R"("abc)", R"("abc")"));     // unterminated
  EXPECT_FALSE(IfNoneMatchMatches(R"(w/"abc")", R"("abc")"));  // W/ is case-sensitive
}

TEST(DashboardTest, HeadGetsTheHeadersOfGet) {
  const net::HttpResponse get = Serve(Request("GET", "/assets/uPlot.min.css"));
  const net::HttpResponse head = Serve(Request("HEAD", "/assets/uPlot.min.css"));
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.content_type, get.content_type);
  EXPECT_EQ(head.headers, get.headers);
  // The server drops a HEAD response's body but keeps its Content-Length.
  EXPECT_EQ(head.body.size(), get.body.size());
}

TEST(DashboardTest, OtherMethodsGet405WithAllow) {
  for (const char* method : {"POST", "PUT", "DELETE", "get"}) {
    const net::HttpResponse r = Serve(Request(method, "/"));
    EXPECT_EQ(r.status, 405) << method;
    EXPECT_EQ(r.Header("allow"), "GET, HEAD");
    EXPECT_TRUE(r.Header("etag").empty());
  }
}

TEST(DashboardTest, OtherPathsAreLeftToTheCaller) {
  for (const char* path :
       {"/index.html", "/assets", "/assets/", "/assets/nope.js", "/assets/../app.js",
        "/assets/app.js/", "/ASSETS/app.js", "", "/api/v1/targets", "/metrics"}) {
    net::HttpResponse response;
    response.status = 418;
    EXPECT_FALSE(Handle(Request("GET", path), response)) << path;
    EXPECT_EQ(response.status, 418) << path;
  }
}

}  // namespace
}  // namespace gpucanary::dashboard
