#include "daemon/router.h"

#include <gtest/gtest.h>

#include <string>

namespace gpucanary::daemon {
namespace {

net::HttpRequest Request(std::string method, std::string path) {
  net::HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.target = r.path;
  return r;
}

// A router whose handlers answer "<route>:<arg>".
Router Table() {
  Router router;
  auto answer = [](std::string route) {
    return [route](const net::HttpRequest&, std::string_view arg, net::HttpResponse& response) {
      response.body = route + ":" + std::string(arg);
    };
  };
  router.Add("GET, HEAD", "/items", answer("list"));
  router.Add("POST", "/items", answer("post"));
  router.Add("GET", "/items/{id}", answer("item"));
  router.Add("GET", "/label/{name...}/values", answer("values"));
  return router;
}

std::string Answer(const Router& router, const std::string& method, const std::string& path) {
  net::HttpResponse response;
  if (!router.Handle(Request(method, path), response)) return "unhandled";
  if (response.status == 405) return "405 " + std::string(response.Header("allow"));
  return response.body;
}

TEST(RouterTest, LiteralPathsAndMethods) {
  const Router router = Table();
  EXPECT_EQ(Answer(router, "GET", "/items"), "list:");
  EXPECT_EQ(Answer(router, "HEAD", "/items"), "list:");
  EXPECT_EQ(Answer(router, "POST", "/items"), "post:");
  EXPECT_EQ(Answer(router, "GET", "/itemsx"), "unhandled");
  EXPECT_EQ(Answer(router, "GET", "/other"), "unhandled");
}

TEST(RouterTest, MethodNotAllowedListsEveryMatchingRoutesMethods) {
  const Router router = Table();
  net::HttpResponse response;
  ASSERT_TRUE(router.Handle(Request("PUT", "/items"), response));
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.Header("allow"), "GET, HEAD, POST");
  EXPECT_EQ(response.content_type, "text/plain");
  EXPECT_EQ(response.body, "method not allowed\n");
  EXPECT_EQ(Answer(router, "DELETE", "/items/7"), "405 GET");
}

TEST(RouterTest, ASegmentIsOneNonEmptyPathSegmentAsWritten) {
  const Router router = Table();
  EXPECT_EQ(Answer(router, "GET", "/items/a%2Fb"), "item:a%2Fb");
  EXPECT_EQ(Answer(router, "GET", "/items/"), "unhandled");
  EXPECT_EQ(Answer(router, "GET", "/items/a/b"), "unhandled");
  EXPECT_EQ(Answer(router, "DELETE", "/items/a/b"), "unhandled");
}

TEST(RouterTest, ARestMatchesAnyTextBetweenPrefixAndSuffix) {
  const Router router = Table();
  EXPECT_EQ(Answer(router, "GET", "/label/gpu/values"), "values:gpu");
  EXPECT_EQ(Answer(router, "GET", "/label/a/b/values"), "values:a/b");
  EXPECT_EQ(Answer(router, "GET", "/label//values"), "values:");
  EXPECT_EQ(Answer(router, "GET", "/label/gpu"), "unhandled");
  EXPECT_EQ(Answer(router, "GET", "/label/gpu/values/"), "unhandled");
  // Prefix and suffix overlap: the text after the prefix.
  EXPECT_EQ(Answer(router, "GET", "/label/values"), "values:values");
}

TEST(RouterTest, TheFirstMatchingRouteAnswers) {
  Router router;
  router.Add("GET", "/a/{x}", [](const net::HttpRequest&, std::string_view, net::HttpResponse& r) {
    r.body = "first";
  });
  router.Add("GET", "/a/b", [](const net::HttpRequest&, std::string_view, net::HttpResponse& r) {
    r.body = "second";
  });
  EXPECT_EQ(Answer(router, "GET", "/a/b"), "first");
}

}  // namespace
}  // namespace gpucanary::daemon
