#include "scrape/kubernetes_sd_api.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "net/tls_context.h"
#include "net/url.h"

namespace gpucanary::scrape {
namespace {

using Json = nlohmann::json;

std::string_view Plural(KubernetesKind kind) {
  switch (kind) {
    case KubernetesKind::kPod:
      return "pods";
    case KubernetesKind::kEndpoints:
      return "endpoints";
    case KubernetesKind::kNode:
      return "nodes";
    case KubernetesKind::kService:
      break;
  }
  return "services";
}

// A token file's content without surrounding white space (files mounted
// from Secrets often end with a newline).
Result<std::string> ReadCredentialsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(StatusCode::kNotFound, "credentials file " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  const std::size_t begin = token.find_first_not_of(" \t\r\n");
  const std::size_t end = token.find_last_not_of(" \t\r\n");
  token = begin == std::string::npos ? "" : token.substr(begin, end - begin + 1);
  if (token.empty()) {
    return Error(StatusCode::kInvalidArgument, "credentials file " + path + ": empty");
  }
  return token;
}

std::string Getenv(const char* name) {
  // Read when the configuration is applied; nothing in gpucanary sets it.
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
  return v == nullptr ? std::string() : std::string(v);
}

// The pod's namespace, for own_namespace (kubernetes.go New).
Result<std::string> OwnNamespace(const std::string& file) {
  std::ifstream in(file);
  if (!in.is_open()) {
    return Error(StatusCode::kInvalidArgument,
                 "could not determine the pod's namespace: cannot read " + file);
  }
  std::string own;
  std::getline(in, own);
  while (!own.empty() && (own.back() == '\r' || own.back() == ' ')) own.pop_back();
  if (own.empty()) {
    return Error(StatusCode::kInvalidArgument, "could not read own namespace name (empty file)");
  }
  return own;
}

}  // namespace

Result<std::string> KubernetesApi::Authorization() const {
  std::string secret = credentials;
  if (!credentials_file.empty()) {
    Result<std::string> token = ReadCredentialsFile(credentials_file);
    if (!token) return Error(token.error());
    secret = std::move(*token);
  }
  return secret.empty() ? std::string() : authorization_type + " " + secret;
}

Result<KubernetesApi> ResolveKubernetesApi(const KubernetesSdConfig& config,
                                           const KubernetesSd::InCluster& in_cluster,
                                           std::string_view name) {
  const auto fail = [&](const std::string& why) {
    return Error(StatusCode::kInvalidArgument, std::string(name) + ": " + why);
  };
  KubernetesApi api;
  net::TlsClientOptions tls;
  std::string url = config.api_server;
  if (url.empty()) {
    const std::string host = in_cluster.service_host.empty() ? Getenv("KUBERNETES_SERVICE_HOST")
                                                             : in_cluster.service_host;
    const std::string port = in_cluster.service_port.empty() ? Getenv("KUBERNETES_SERVICE_PORT")
                                                             : in_cluster.service_port;
    if (host.empty() || port.empty()) {
      return fail(
          "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
          "KUBERNETES_SERVICE_PORT must be defined (or set api_server)");
    }
    url = "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
    // client-go logs a CA file it cannot load and goes on with the system's CAs.
    if (std::ifstream(in_cluster.ca_file).good()) tls.ca_file = in_cluster.ca_file;
    api.credentials_file = in_cluster.token_file;
  } else {
    tls = config.tls;
    api.authorization_type = config.authorization_type;
    api.credentials = config.credentials;
    api.credentials_file = config.credentials_file;
  }
  Result<net::HttpUrl> parsed = net::ParseHttpUrl(url);
  if (!parsed) return fail(parsed.error().message());
  api.url = url;
  api.host = parsed->host;
  api.port = parsed->port;
  api.origin = (parsed->https ? "https://" : "http://") + net::HostPort(api.host, api.port);
  api.prefix = parsed->target == "/" ? "" : parsed->target;
  while (api.prefix.ends_with("/")) api.prefix.pop_back();
  if (parsed->https) {
    auto context = net::NewClientTls(tls);
    if (!context) return fail(context.error().message());
    api.tls = std::move(*context);
  }
  api.namespaces = config.namespaces;
  if (config.own_namespace) {
    Result<std::string> own = OwnNamespace(in_cluster.namespace_file);
    if (!own) return fail(own.error().message());
    if (std::find(api.namespaces.begin(), api.namespaces.end(), *own) == api.namespaces.end()) {
      api.namespaces.push_back(*own);
    }
  }
  if (api.namespaces.empty() || config.role == KubernetesKind::kNode) api.namespaces = {""};
  return api;
}

std::string KubernetesResourcePath(KubernetesKind kind, const std::string& ns) {
  if (ns.empty()) return "/api/v1/" + std::string(Plural(kind));
  return "/api/v1/namespaces/" + net::UrlEncode(ns) + "/" + std::string(Plural(kind));
}

std::string KubernetesQuery(const std::map<std::string, std::string>& params) {
  std::string out;
  for (const auto& [name, value] : params) {
    out += out.empty() ? "?" : "&";
    out += name + "=" + net::UrlEncode(value);
  }
  return out;
}

std::string DescribeKubernetesStatus(int status, std::string_view body) {
  std::string out = "HTTP status " + std::to_string(status);
  const Json doc = Json::parse(body.begin(), body.end(), nullptr, false);
  if (doc.is_object()) {
    const auto message = doc.find("message");
    if (message != doc.end() && message->is_string() && !message->get<std::string>().empty()) {
      return out + ": " + message->get<std::string>();
    }
  }
  const std::string_view start = body.substr(0, 200);
  if (!start.empty()) out += ": " + std::string(start);
  return out;
}

}  // namespace gpucanary::scrape
