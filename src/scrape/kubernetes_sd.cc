#include "scrape/kubernetes_sd.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "core/mutex.h"
#include "net/async_connection.h"
#include "net/gzip.h"
#include "scrape/kubernetes_sd_api.h"
#include "scrape/kubernetes_sd_labels.h"

namespace gpucanary::scrape {
namespace {

namespace asio = boost::asio;
using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view kUserAgent = "gpucanary/0.1";
// client-go's reflector: a watch that ends within a second without an
// event is "very short" and is followed by a re-list after the backoff;
// the backoff starts again from its first step after 2 minutes without one.
constexpr auto kShortWatch = std::chrono::seconds(1);
constexpr auto kBackoffReset = std::chrono::minutes(2);
// A failed answer's body kept to say why (a Kubernetes Status is small).
constexpr std::size_t kErrorBodyBytes = 64 << 10;

const Json* Member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string StringAt(const Json& object, const char* a, const char* b) {
  const Json* first = Member(object, a);
  const Json* v = first != nullptr ? Member(*first, b) : nullptr;
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// The store key of an object: "<namespace>/<name>", a node's name alone.
std::string KeyOf(KubernetesKind kind, const Json& object) {
  if (kind == KubernetesKind::kNode) return StringAt(object, "metadata", "name");
  return NamespacedName(object);
}

}  // namespace

class KubernetesSd::Impl {
 public:
  Impl(KubernetesSdConfig config, std::string name, Clock& clock, Options options);
  ~Impl() { Stop(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void Start();
  void Stop();
  bool WaitFirstSync(std::chrono::milliseconds timeout);
  State state() const {
    MutexLock lock(mu_);
    return state_;
  }
  std::string Describe() const { return description_; }

 private:
  struct Unit;

  // One informer: the objects of one kind in one namespace (or all), listed
  // then watched. Touched on the io thread only.
  struct Resource {
    explicit Resource(asio::io_context& ioc) : timer(ioc) {}
    KubernetesKind kind = KubernetesKind::kPod;
    Unit* unit = nullptr;
    std::string path;                              // "/api/v1/namespaces/gpu/pods"
    std::map<std::string, std::string> selectors;  // labelSelector, fieldSelector
    std::map<std::string, Json> objects;           // the store, by KeyOf
    std::map<std::string, Json> listing;           // the pages of a list under way
    std::string resource_version;                  // of the last list, event or bookmark
    std::string continue_token;                    // of the list under way
    bool listed = false;                           // a list has succeeded
    bool attempted = false;                        // the first list has finished
    std::string error;                             // of the last failure; "" once listed again
    std::shared_ptr<net::AsyncConnection> conn;
    asio::steady_timer timer;              // the backoff before a re-list
    std::chrono::milliseconds backoff{0};  // the next backoff; 0: the first step
    SteadyClock::time_point last_backoff{};
    // The watch under way.
    std::string pending;     // an event's bytes before its newline
    std::string error_body;  // a non-200 answer's body
    std::size_t events = 0;
    SteadyClock::time_point watch_start{};
    std::string stop_reason;  // why we stopped it: a bad event, an ERROR event
    bool expired = false;     // an ERROR event with code 410
  };

  // One of Prometheus's discoverers: a role in one namespace. Its targets
  // are built once all its resources have been listed.
  struct Unit {
    KubernetesKind role = KubernetesKind::kPod;
    Resource* main = nullptr;      // pods, nodes or endpoints
    Resource* pods = nullptr;      // endpoints role: the pods they point to
    Resource* services = nullptr;  // endpoints role: their services
    std::set<std::string> queue;   // keys of `main` to build again
    std::map<std::string, std::vector<TargetGroup>> groups;  // by key of `main`
  };

  void AddResource(Unit& unit, KubernetesKind kind, const std::string& ns, Resource** slot);
  std::string Url(const std::string& path_and_query) const { return api_.origin + path_and_query; }
  // Sends GET path_and_query; a watch (streamed) when `watch_timeout_s` > 0.
  void Send(Resource& r, const std::string& path_and_query, int watch_timeout_s);
  void List(Resource& r);
  void OnList(Resource& r, const std::string& url, net::FetchResult f);
  void Replace(Resource& r);
  void Watch(Resource& r);
  bool OnWatchBody(Resource& r, int status, std::string_view piece);
  bool ApplyEvent(Resource& r, std::string_view line);
  void OnWatchDone(Resource& r, const std::string& url, const net::FetchResult& f);
  void OnObject(Resource& r, const std::string& key, const Json* old, const Json* cur);
  void Fail(Resource& r, std::string error);
  void Relist(Resource& r);
  void FirstListDone(Resource& r);
  // Builds the queued objects' groups; whether any group was built or removed.
  bool Build(Unit& unit);
  // Hands the targets (when `groups_changed`) and the errors to state(),
  // `fresh` when a list or an event has just come, and tells on_change.
  void Publish(bool groups_changed, bool fresh);

  const KubernetesSdConfig config_;
  const std::string name_;
  Clock& clock_;
  const Options options_;
  std::string description_;

  // The API server, resolved at construction (or why it could not be).
  Status config_error_;
  KubernetesApi api_;

  asio::io_context ioc_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::vector<std::unique_ptr<Unit>> units_;
  std::vector<std::unique_ptr<Resource>> resources_;
  std::size_t unattempted_ = 0;  // resources whose first list has not finished
  std::minstd_rand rng_{std::random_device{}()};

  mutable Mutex mu_;
  CondVar synced_cv_;
  bool started_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  bool synced_ GUARDED_BY(mu_) = false;
  State state_ GUARDED_BY(mu_);
};

KubernetesSd::Impl::Impl(KubernetesSdConfig config, std::string name, Clock& clock, Options options)
    : config_(std::move(config)),
      name_(std::move(name)),
      clock_(clock),
      options_(std::move(options)) {
  Result<KubernetesApi> api = ResolveKubernetesApi(config_, options_.in_cluster, name_);
  if (api) {
    api_ = std::move(*api);
  } else {
    config_error_ = api.error();
  }
  description_ = (api_.url.empty() ? std::string("in-cluster") : api_.url) +
                 " role=" + std::string(KubernetesKindName(config_.role));
  if (!api_.namespaces.empty() && !api_.namespaces.front().empty()) {
    description_ += " namespaces=";
    for (std::size_t i = 0; i < api_.namespaces.size(); ++i) {
      description_ += (i > 0 ? "," : "") + api_.namespaces[i];
    }
  }
  if (!config_error_.ok()) {
    MutexLock lock(mu_);
    state_.error = config_error_.message();
    state_.failures = 1;
  }
}

void KubernetesSd::Impl::AddResource(Unit& unit, KubernetesKind kind, const std::string& ns,
                                     Resource** slot) {
  auto r = std::make_unique<Resource>(ioc_);
  r->kind = kind;
  r->unit = &unit;
  r->path = api_.prefix + KubernetesResourcePath(kind, ns);
  if (const KubernetesSelector* s = config_.SelectorFor(kind)) {
    if (!s->label.empty()) r->selectors["labelSelector"] = s->label;
    if (!s->field.empty()) r->selectors["fieldSelector"] = s->field;
  }
  *slot = r.get();
  resources_.push_back(std::move(r));
}

void KubernetesSd::Impl::Start() {
  {
    MutexLock lock(mu_);
    if (started_ || stopped_) return;
    started_ = true;
    if (!config_error_.ok()) {
      synced_ = true;  // nothing will be listed: WaitFirstSync need not wait
      return;
    }
  }
  for (const std::string& ns : api_.namespaces) {
    auto unit = std::make_unique<Unit>();
    unit->role = config_.role;
    AddResource(*unit, config_.role, ns, &unit->main);
    if (config_.role == KubernetesKind::kEndpoints) {
      AddResource(*unit, KubernetesKind::kService, ns, &unit->services);
      AddResource(*unit, KubernetesKind::kPod, ns, &unit->pods);
    }
    units_.push_back(std::move(unit));
  }
  unattempted_ = resources_.size();
  work_.emplace(asio::make_work_guard(ioc_));
  for (const auto& r : resources_) {
    asio::post(ioc_, [this, res = r.get()] { List(*res); });
  }
  thread_ = std::thread([this] { ioc_.run(); });
}

void KubernetesSd::Impl::Stop() {
  {
    MutexLock lock(mu_);
    stopped_ = true;
    synced_ = true;
  }
  synced_cv_.NotifyAll();
  work_.reset();
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
  // The io thread is gone: a fetch cut short keeps its completion (which
  // points at its resource) unrun; the connections go with ioc_.
  for (const auto& r : resources_) r->conn.reset();
}

bool KubernetesSd::Impl::WaitFirstSync(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return synced_cv_.WaitFor(mu_, timeout, [this]() REQUIRES(mu_) { return synced_; });
}

void KubernetesSd::Impl::Send(Resource& r, const std::string& path_and_query, int watch_timeout_s) {
  const bool watch = watch_timeout_s > 0;
  const std::string url = Url(path_and_query);
  auto request = std::make_shared<net::ClientRequest>();
  request->target = path_and_query;
  request->url = url;
  request->headers = {{"Accept", "application/json"}, {"User-Agent", std::string(kUserAgent)}};
  if (!watch) request->headers.emplace_back("Accept-Encoding", "gzip");
  Result<std::string> authorization = api_.Authorization();  // a rotated token included
  if (!authorization) return Fail(r, "GET " + url + ": " + authorization.error().message());
  if (!authorization->empty()) request->headers.emplace_back("Authorization", *authorization);
  request->body_limit = options_.max_list_bytes;
  if (watch) {
    request->on_body = [this, &r](int status, std::string_view piece) {
      return OnWatchBody(r, status, piece);
    };
  }
  if (!r.conn) {
    net::AsyncConnection::Options o;
    o.wording = net::AsyncConnection::Wording::kClient;
    o.tls = api_.tls;
    r.conn = net::AsyncConnection::Create(ioc_, api_.host, api_.port, std::move(o));
  }
  // A watch ends at the server's timeoutSeconds; the client gives up 30 s later.
  const std::chrono::milliseconds timeout =
      watch ? std::chrono::milliseconds((watch_timeout_s + 30) * 1000LL)
            : std::chrono::milliseconds(options_.request_timeout_ms);
  r.conn->Fetch(request, timeout, [this, &r, url, watch](net::FetchResult f) {
    if (watch) {
      OnWatchDone(r, url, f);
    } else {
      OnList(r, url, std::move(f));
    }
  });
}

void KubernetesSd::Impl::List(Resource& r) {
  std::map<std::string, std::string> query = r.selectors;
  query["limit"] = std::to_string(options_.list_page_size);
  if (!r.continue_token.empty()) query["continue"] = r.continue_token;
  Send(r, r.path + KubernetesQuery(query), /*watch_timeout_s=*/0);
}

void KubernetesSd::Impl::OnList(Resource& r, const std::string& url, net::FetchResult f) {
  if (!f.error.ok()) return Fail(r, f.error.message());
  std::string body = std::move(f.body);
  if (f.gzip && !body.empty()) {
    Result<std::string> plain = net::GzipDecompress(body, options_.max_list_bytes);
    if (!plain) return Fail(r, "GET " + url + ": " + plain.error().message());
    body = std::move(*plain);
  }
  if (f.status != 200) {
    return Fail(r, "GET " + url + ": " + DescribeKubernetesStatus(f.status, body));
  }
  const Json doc = Json::parse(body, nullptr, false);
  const Json* items = Member(doc, "items");
  const Json* metadata = Member(doc, "metadata");
  if (doc.is_discarded() || items == nullptr || !(items->is_array() || items->is_null()) ||
      metadata == nullptr || !metadata->is_object()) {
    return Fail(r, "GET " + url + ": the answer is not a Kubernetes list (" +
                       (doc.is_discarded() ? "not JSON" : "no items or metadata") +
                       "): " + body.substr(0, 200));
  }
  if (items->is_array()) {
    for (const Json& item : *items) {
      if (!item.is_object()) {
        return Fail(r, "GET " + url +
                           ": the answer is not a Kubernetes list (an item is not "
                           "an object)");
      }
      r.listing[KeyOf(r.kind, item)] = item;
    }
  }
  const std::string next = StringAt(doc, "metadata", "continue");
  if (!next.empty()) {
    r.continue_token = next;
    return List(r);
  }
  r.continue_token.clear();
  r.resource_version = StringAt(doc, "metadata", "resourceVersion");
  Replace(r);
  r.listed = true;
  r.error.clear();
  Publish(Build(*r.unit), /*fresh=*/true);
  FirstListDone(r);  // after Publish: WaitFirstSync's caller sees these targets
  Watch(r);
}

// The list replaces the store, with the events an informer's Replace
// sends: new objects added, the others updated (even when unchanged) or
// deleted.
void KubernetesSd::Impl::Replace(Resource& r) {
  std::map<std::string, Json> old = std::move(r.objects);
  r.objects = std::move(r.listing);
  r.listing.clear();
  for (const auto& [key, object] : r.objects) {
    const auto it = old.find(key);
    OnObject(r, key, it == old.end() ? nullptr : &it->second, &object);
  }
  for (const auto& [key, object] : old) {
    if (r.objects.find(key) == r.objects.end()) OnObject(r, key, &object, nullptr);
  }
}

void KubernetesSd::Impl::Watch(Resource& r) {
  std::map<std::string, std::string> query = r.selectors;
  query["allowWatchBookmarks"] = "true";
  query["resourceVersion"] = r.resource_version;
  query["watch"] = "true";
  const int min_s = std::max(options_.watch_timeout_min_s, 1);
  const int timeout_s = min_s + static_cast<int>(rng_() % static_cast<unsigned>(min_s));
  query["timeoutSeconds"] = std::to_string(timeout_s);
  r.pending.clear();
  r.error_body.clear();
  r.events = 0;
  r.stop_reason.clear();
  r.expired = false;
  r.watch_start = SteadyClock::now();
  Send(r, r.path + KubernetesQuery(query), timeout_s);
}

bool KubernetesSd::Impl::OnWatchBody(Resource& r, int status, std::string_view piece) {
  if (status != 200) {
    r.error_body.append(
        piece.substr(0, kErrorBodyBytes - std::min(kErrorBodyBytes, r.error_body.size())));
    return true;
  }
  r.pending.append(piece);
  std::size_t start = 0;
  bool go_on = true;
  const std::size_t before = r.events;
  for (std::size_t nl; go_on && (nl = r.pending.find('\n', start)) != std::string::npos;) {
    go_on = ApplyEvent(r, std::string_view(r.pending).substr(start, nl - start));
    start = nl + 1;
  }
  r.pending.erase(0, start);
  if (go_on && r.pending.size() > options_.max_event_bytes) {
    r.stop_reason = "a watch event over " + std::to_string(options_.max_event_bytes) + " bytes";
    go_on = false;
  }
  if (r.events != before) Publish(Build(*r.unit), /*fresh=*/true);
  return go_on;
}

// One line of the watch stream. False stops the watch (stop_reason or
// expired say why).
bool KubernetesSd::Impl::ApplyEvent(Resource& r, std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.empty()) return true;
  const Json event = Json::parse(line.begin(), line.end(), nullptr, false);
  const Json* type = Member(event, "type");
  const Json* object = Member(event, "object");
  if (event.is_discarded() || type == nullptr || !type->is_string() || object == nullptr ||
      !object->is_object()) {
    r.stop_reason = "bad watch event (not {\"type\":...,\"object\":{...}}): " +
                    std::string(line.substr(0, 200));
    return false;
  }
  const std::string t = type->get<std::string>();
  if (t == "ERROR") {
    // A Status: code 410 (reason Expired or Gone) when the resourceVersion
    // is too old to watch from; the informer lists again.
    const Json* code = Member(*object, "code");
    if (code != nullptr && code->is_number_integer() && code->get<int>() == 410) {
      r.expired = true;
    } else {
      r.stop_reason = "watch ERROR event: " + object->dump().substr(0, 300);
    }
    return false;
  }
  const std::string rv = StringAt(*object, "metadata", "resourceVersion");
  if (t == "BOOKMARK") {
    if (!rv.empty()) r.resource_version = rv;
    ++r.events;
    return true;
  }
  if (t != "ADDED" && t != "MODIFIED" && t != "DELETED") {
    r.stop_reason = "unknown watch event type '" + t + "'";
    return false;
  }
  const std::string key = KeyOf(r.kind, *object);
  const auto it = r.objects.find(key);
  std::optional<Json> old;
  if (it != r.objects.end()) old = std::move(it->second);
  if (t == "DELETED") {
    if (it != r.objects.end()) r.objects.erase(it);
    OnObject(r, key, old ? &*old : nullptr, nullptr);
  } else {
    Json& cur = r.objects[key];
    cur = *object;
    OnObject(r, key, old ? &*old : nullptr, &cur);
  }
  if (!rv.empty()) r.resource_version = rv;
  ++r.events;
  return true;
}

void KubernetesSd::Impl::OnWatchDone(Resource& r, const std::string& url,
                                     const net::FetchResult& f) {
  if (r.expired) return Relist(r);  // 410 in an ERROR event
  if (!r.stop_reason.empty()) return Fail(r, "GET " + url + ": " + r.stop_reason);
  if (f.status == 410) return Relist(r);
  if (f.status != 0 && f.status != 200) {
    return Fail(r, "GET " + url + ": " + DescribeKubernetesStatus(f.status, r.error_body));
  }
  if (f.status == 0) return Fail(r, f.error.message());  // no answer: connect, resolve, ...
  if (!f.error.ok() && !f.timed_out) return Relist(r);   // the stream broke midway
  // The watch ended as watches do (timeoutSeconds, or our deadline after
  // it): go on from the last resourceVersion, unless it was very short.
  if (SteadyClock::now() - r.watch_start < kShortWatch && r.events == 0) return Relist(r);
  Watch(r);
}

// The informers' event handlers (pod.go, node.go, endpoints.go NewX):
// which objects of the unit to build again.
void KubernetesSd::Impl::OnObject(Resource& r, const std::string& key, const Json* old,
                                  const Json* cur) {
  Unit& u = *r.unit;
  if (&r == u.main) {
    u.queue.insert(key);
  } else if (&r == u.services) {
    if (u.main->objects.count(key) != 0) u.queue.insert(key);
  } else if (&r == u.pods && old != nullptr && cur != nullptr &&
             StringAt(*old, "status", "phase") != StringAt(*cur, "status", "phase")) {
    // A pod's phase may change without its Endpoints changing
    // (prometheus/prometheus#11305).
    for (const auto& [eps_key, eps] : u.main->objects) {
      const std::vector<std::string> refs = EndpointsPodRefs(eps);
      if (std::find(refs.begin(), refs.end(), key) != refs.end()) u.queue.insert(eps_key);
    }
  }
}

void KubernetesSd::Impl::Fail(Resource& r, std::string error) {
  r.error = std::move(error);
  r.listing.clear();
  r.continue_token.clear();
  {
    MutexLock lock(mu_);
    ++state_.failures;
  }
  Publish(/*groups_changed=*/false, /*fresh=*/false);
  FirstListDone(r);
  Relist(r);
}

// A new list after the backoff (client-go's: 800 ms doubling to 30 s,
// reset after 2 minutes without one).
void KubernetesSd::Impl::Relist(Resource& r) {
  const auto now = SteadyClock::now();
  const std::chrono::milliseconds first(options_.backoff_initial_ms);
  if (r.backoff.count() == 0 || now - r.last_backoff > kBackoffReset) r.backoff = first;
  const std::chrono::milliseconds wait = r.backoff;
  r.backoff = std::min(r.backoff * 2, std::chrono::milliseconds(options_.backoff_max_ms));
  r.last_backoff = now;
  r.listing.clear();
  r.continue_token.clear();
  r.timer.expires_after(wait);
  r.timer.async_wait([this, &r](boost::system::error_code ec) {
    if (!ec) List(r);
  });
}

void KubernetesSd::Impl::FirstListDone(Resource& r) {
  if (r.attempted) return;
  r.attempted = true;
  if (--unattempted_ != 0) return;
  {
    MutexLock lock(mu_);
    synced_ = true;
  }
  synced_cv_.NotifyAll();
}

// pod.go / node.go / endpoints.go process: each queued key built from the
// store, or its group removed when the object is gone.
bool KubernetesSd::Impl::Build(Unit& u) {
  for (const Resource* r : {u.main, u.pods, u.services}) {
    if (r != nullptr && !r->listed) return false;  // WaitForCacheSync
  }
  const bool changed = !u.queue.empty();
  const auto lookup = [](const Resource* r) {
    return [r](const std::string& key) -> const Json* {
      const auto it = r->objects.find(key);
      return it == r->objects.end() ? nullptr : &it->second;
    };
  };
  for (const std::string& key : u.queue) {
    const auto it = u.main->objects.find(key);
    if (it == u.main->objects.end()) {
      u.groups.erase(key);
      continue;
    }
    switch (u.role) {
      case KubernetesKind::kPod:
        u.groups[key] = ToTargetGroups(PodGroup(it->second), name_);
        break;
      case KubernetesKind::kNode:
        // No address: no group sent, so the node's last one stays.
        if (std::optional<KubernetesGroup> g = NodeGroup(it->second)) {
          u.groups[key] = ToTargetGroups(*g, name_);
        }
        break;
      case KubernetesKind::kEndpoints:
      case KubernetesKind::kService:
        u.groups[key] =
            ToTargetGroups(EndpointsGroup(it->second, lookup(u.pods), lookup(u.services)), name_);
        break;
    }
  }
  u.queue.clear();
  return changed;
}

// Hands the targets and the errors to state() and tells on_change.
void KubernetesSd::Impl::Publish(bool groups_changed, bool fresh) {
  std::vector<TargetGroup> groups;
  if (groups_changed) {
    for (const auto& u : units_) {
      for (const auto& [key, g] : u->groups) groups.insert(groups.end(), g.begin(), g.end());
    }
  }
  std::string error;
  for (const auto& r : resources_) {
    if (r->error.empty()) continue;
    if (!error.empty()) error += "\n";
    error += r->error;
  }
  {
    MutexLock lock(mu_);
    if (groups_changed) {
      state_.groups = std::move(groups);
      ++state_.generation;
    }
    if (fresh) state_.last_update_ms = clock_.NowMs();
    state_.error = std::move(error);
  }
  if (options_.on_change) options_.on_change();
}

KubernetesSd::KubernetesSd(KubernetesSdConfig config, std::string name, Clock& clock,
                           Options options)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(name), clock, std::move(options))) {
}
KubernetesSd::~KubernetesSd() = default;
void KubernetesSd::Start() { impl_->Start(); }
void KubernetesSd::Stop() { impl_->Stop(); }
bool KubernetesSd::WaitFirstSync(std::chrono::milliseconds timeout) {
  return impl_->WaitFirstSync(timeout);
}
KubernetesSd::State KubernetesSd::state() const { return impl_->state(); }
std::string KubernetesSd::Describe() const { return impl_->Describe(); }

}  // namespace gpucanary::scrape
