#pragma once
// A local server that answers as the Kubernetes API does for core/v1 pods,
// nodes, endpoints and services (kubernetes.io/docs/reference/kubernetes-api/,
// "list" and "watch" of each; api-concepts "Efficient detection of changes"),
// on net::HttpServer: LIST with limit/continue pages and the list's
// metadata.resourceVersion, WATCH from a resourceVersion as newline-separated
// events {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}, an
// ERROR event with a 410 Status for a resourceVersion too old, and Status
// answers for failures. net::HttpServer sends whole responses, so a watch
// is held open until events come (or about a second passes) and then ends
// with them, as an API server ends a watch at its timeoutSeconds; the client
// watches again from the last resourceVersion. Field and label selectors are
// recorded, not applied. Test code only.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "net/http_server.h"
#include "net/url.h"

namespace gpucanary::scrape::test {

class FakeKubernetesApi {
 public:
  using Json = nlohmann::json;

  struct Request {
    std::string target;         // path and query as received
    std::string authorization;  // the Authorization header
    bool watch = false;
  };

  // Listens on 127.0.0.1:`port` (0: any), over TLS when `tls` is given.
  explicit FakeKubernetesApi(std::uint16_t port = 0, const net::TlsServerOptions* tls = nullptr)
      : server_(Options()) {
    auto handler = [this](const net::HttpRequest& req, net::HttpResponse& res) {
      Handle(req, res);
    };
    auto p = tls != nullptr ? server_.ListenTls("127.0.0.1", port, *tls, handler)
                            : server_.Listen("127.0.0.1", port, handler);
    EXPECT_TRUE(p.has_value()) << p.error().ToString();
    port_ = p.value_or(0);
    EXPECT_TRUE(server_.Start().ok());
  }
  ~FakeKubernetesApi() { Shutdown(); }
  FakeKubernetesApi(const FakeKubernetesApi&) = delete;
  FakeKubernetesApi& operator=(const FakeKubernetesApi&) = delete;

  std::uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Ends held watches and stops the server (the API going away).
  void Shutdown() {
    {
      MutexLock lock(mu_);
      shutdown_ = true;
    }
    changed_.NotifyAll();
    server_.Stop();
  }

  // `plural` is "pods", "nodes", "endpoints" or "services"; objects are
  // stored as the API stores them (metadata.resourceVersion set) and each
  // change is a watch event.
  void Add(const std::string& plural, Json object) { Change(plural, "ADDED", std::move(object)); }
  void Modify(const std::string& plural, Json object) {
    Change(plural, "MODIFIED", std::move(object));
  }
  void Delete(const std::string& plural, const std::string& ns, const std::string& name) {
    MutexLock lock(mu_);
    auto& store = objects_[plural];
    const auto it = store.find(ns + "/" + name);
    if (it == store.end()) return;
    Json object = std::move(it->second);
    store.erase(it);
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    events_.push_back({rv_, plural, ns, "DELETED", std::move(object)});
    changed_.NotifyAll();
  }
  // A change the watches never see (the events were compacted away):
  // together with Expire, what a client that fell behind must re-list for.
  void ChangeSilently(const std::string& plural, Json object) {
    MutexLock lock(mu_);
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    const std::string key = Key(object);
    objects_[plural][key] = std::move(object);
  }
  void DeleteSilently(const std::string& plural, const std::string& ns, const std::string& name) {
    MutexLock lock(mu_);
    objects_[plural].erase(ns + "/" + name);
    ++rv_;
  }
  // Watches from a resourceVersion before now get an ERROR event with a
  // 410 Status ("too old resource version"); held ones end now.
  void Expire() {
    MutexLock lock(mu_);
    expired_before_ = ++rv_;
    changed_.NotifyAll();
  }
  // A BOOKMARK event for `plural` at a new resourceVersion.
  void Bookmark(const std::string& plural) {
    MutexLock lock(mu_);
    ++rv_;
    events_.push_back({rv_, plural, "", "BOOKMARK",
                       Json{{"kind", KindOf(plural)},
                            {"apiVersion", "v1"},
                            {"metadata", {{"resourceVersion", std::to_string(rv_)}}}}});
    changed_.NotifyAll();
  }
  // Every request is answered `status` with a Status carrying `message`
  // (0: answer normally again).
  void FailWith(int status, std::string message) {
    MutexLock lock(mu_);
    fail_status_ = status;
    fail_message_ = std::move(message);
  }
  // LIST requests are answered 200 with this body ("": normally).
  void AnswerListsWith(std::string body) {
    MutexLock lock(mu_);
    list_body_ = std::move(body);
  }

  std::vector<Request> requests() const {
    MutexLock lock(mu_);
    return requests_;
  }
  int Count(std::string_view path, bool watch) const {
    MutexLock lock(mu_);
    int n = 0;
    for (const Request& r : requests_) {
      n += r.watch == watch && r.target.substr(0, r.target.find('?')) == path ? 1 : 0;
    }
    return n;
  }

 private:
  struct Event {
    std::int64_t rv;
    std::string plural;
    std::string ns;
    std::string type;
    Json object;
  };

  static net::HttpServer::Options Options() {
    net::HttpServer::Options o;
    o.handler_threads = 16;  // each held watch holds one
    return o;
  }
  static std::string Key(const Json& object) {
    const Json& m = object["metadata"];
    return (m.contains("namespace") ? m["namespace"].get<std::string>() : "") + "/" +
           m["name"].get<std::string>();
  }
  static std::string KindOf(const std::string& plural) {
    if (plural == "pods") return "Pod";
    if (plural == "nodes") return "Node";
    if (plural == "services") return "Service";
    return "Endpoints";
  }

  void Change(const std::string& plural, const char* type, Json object) {
    MutexLock lock(mu_);
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    const std::string ns = object["metadata"].value("namespace", "");
    objects_[plural][Key(object)] = object;
    events_.push_back({rv_, plural, ns, type, std::move(object)});
    changed_.NotifyAll();
  }

  // "/api/v1/pods" -> ("", "pods"); "/api/v1/namespaces/gpu/pods" -> ("gpu", "pods").
  static bool ParsePath(const std::string& path, std::string* ns, std::string* plural) {
    constexpr std::string_view kCore = "/api/v1/";
    if (!path.starts_with(kCore)) return false;
    std::string rest = path.substr(kCore.size());
    if (rest.starts_with("namespaces/")) {
      rest = rest.substr(11);
      const std::size_t slash = rest.find('/');
      if (slash == std::string::npos) return false;
      *ns = rest.substr(0, slash);
      rest = rest.substr(slash + 1);
    }
    *plural = rest;
    return rest == "pods" || rest == "nodes" || rest == "endpoints" || rest == "services";
  }

  static void Status(net::HttpResponse& res, int code, const std::string& reason,
                     const std::string& message) {
    res.status = code;
    res.content_type = "application/json";
    res.body = Json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
                    {"status", "Failure"}, {"message", message}, {"reason", reason},
                    {"code", code}}
                   .dump();
  }

  void Handle(const net::HttpRequest& req, net::HttpResponse& res) {
    std::map<std::string, std::string> query;
    if (auto form = net::ParseForm(req.query)) {
      for (auto& [k, v] : *form) query[k] = v;
    }
    const bool watch = query["watch"] == "true";
    MutexLock lock(mu_);
    requests_.push_back({req.target, std::string(req.Header("authorization")), watch});
    std::string ns, plural;
    if (!ParsePath(req.path, &ns, &plural)) {
      return Status(res, 404, "NotFound", "the server could not find the requested resource");
    }
    if (fail_status_ != 0) {
      return Status(res, fail_status_, fail_status_ == 401 ? "Unauthorized" : "Forbidden",
                    fail_message_);
    }
    res.content_type = "application/json";
    if (!watch) return List(ns, plural, query, res);
    WatchLocked(
        ns, plural,
        std::stoll(query["resourceVersion"].empty() ? std::string("0") : query["resourceVersion"]),
        res);
  }

  void List(const std::string& ns, const std::string& plural,
            std::map<std::string, std::string>& query, net::HttpResponse& res) REQUIRES(mu_) {
    if (!list_body_.empty()) {
      res.body = list_body_;
      return;
    }
    std::vector<const Json*> items;
    for (const auto& [key, object] : objects_[plural]) {
      if (ns.empty() || key.starts_with(ns + "/")) items.push_back(&object);
    }
    const std::size_t limit = query["limit"].empty() ? items.size() : std::stoul(query["limit"]);
    const std::size_t from = query["continue"].empty() ? 0 : std::stoul(query["continue"]);
    Json list = {{"kind", KindOf(plural) + "List"},
                 {"apiVersion", "v1"},
                 {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                 {"items", Json::array()}};
    for (std::size_t i = from; i < items.size() && i < from + limit; ++i) {
      list["items"].push_back(*items[i]);
    }
    if (from + limit < items.size()) {
      list["metadata"]["continue"] = std::to_string(from + limit);
      list["metadata"]["remainingItemCount"] = items.size() - from - limit;
    }
    res.body = list.dump();
  }

  void WatchLocked(const std::string& ns, const std::string& plural, std::int64_t from,
                   net::HttpResponse& res) REQUIRES(mu_) {
    const auto matching = [&]() REQUIRES(mu_) {
      std::vector<const Event*> out;
      for (const Event& e : events_) {
        if (e.rv > from && e.plural == plural && (ns.empty() || e.ns.empty() || e.ns == ns)) {
          out.push_back(&e);
        }
      }
      return out;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1200);
    changed_.WaitUntil(mu_, deadline, [&]() REQUIRES(mu_) {
      return shutdown_ || from < expired_before_ || !matching().empty();
    });
    if (from < expired_before_) {
      res.body = Json{{"type", "ERROR"},
                      {"object",
                       {{"kind", "Status"},
                        {"apiVersion", "v1"},
                        {"metadata", Json::object()},
                        {"status", "Failure"},
                        {"message", "too old resource version: " + std::to_string(from) + " (" +
                                        std::to_string(expired_before_) + ")"},
                        {"reason", "Expired"},
                        {"code", 410}}}}
                     .dump() +
                 "\n";
      return;
    }
    for (const Event* e : matching()) {
      Json object = e->object;
      if (e->type != "BOOKMARK") {
        object["kind"] = KindOf(plural);
        object["apiVersion"] = "v1";
      }
      res.body += Json{{"type", e->type}, {"object", std::move(object)}}.dump() + "\n";
    }
  }

  net::HttpServer server_;
  std::uint16_t port_ = 0;
  mutable Mutex mu_;
  CondVar changed_;
  bool shutdown_ GUARDED_BY(mu_) = false;
  std::int64_t rv_ GUARDED_BY(mu_) = 100;
  std::int64_t expired_before_ GUARDED_BY(mu_) = 0;
  std::map<std::string, std::map<std::string, Json>> objects_ GUARDED_BY(mu_);
  std::vector<Event> events_ GUARDED_BY(mu_);
  std::vector<Request> requests_ GUARDED_BY(mu_);
  int fail_status_ GUARDED_BY(mu_) = 0;
  std::string fail_message_ GUARDED_BY(mu_);
  std::string list_body_ GUARDED_BY(mu_);
};

}  // namespace gpucanary::scrape::test
