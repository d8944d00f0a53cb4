// KubernetesApi: the few REST calls the kubernetes launcher makes, over cpp-httplib (HTTPS with
// OpenSSL, or plain HTTP for kubectl proxy and tests), with a bearer token and a timeout on
// every call. Every failure is a Status that names the object and the HTTP code and message:
//   "kubernetes: create Job ns/accel-job-1-a1: HTTP 403: jobs.batch is forbidden: ..."
// 400/422 -> InvalidArgument, 401 -> Unauthenticated, 403 -> PermissionDenied, 404 -> NotFound,
// 409 -> AlreadyExists, other codes and connection failures -> Unavailable, a timeout ->
// DeadlineExceeded. Not thread-safe (one control-loop thread).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace httplib {
class Client;
}

namespace accel::server {

struct KubernetesApiOptions {
  std::string url;         // scheme://host[:port], no path
  std::string token_file;  // "": no Authorization header
  std::string ca_file;     // "": the system's CA store (https only)
  absl::Duration timeout = absl::Seconds(10);
};

class KubernetesApi {
 public:
  // InvalidArgument for a URL that is not http(s)://host[:port]; reads nothing yet.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KubernetesApi>> Create(
      KubernetesApiOptions options);
  ~KubernetesApi();

  // `what` names the object in errors ("Job ns/name"). Paths are absolute API paths
  // ("/apis/batch/v1/namespaces/ns/jobs"), query included.
  [[nodiscard]] absl::StatusOr<nlohmann::json> Post(const std::string& path,
                                                    const nlohmann::json& body,
                                                    const std::string& what);
  [[nodiscard]] absl::StatusOr<nlohmann::json> Get(const std::string& path,
                                                   const std::string& what);
  // A plain-text GET (pods/log).
  [[nodiscard]] absl::StatusOr<std::string> GetText(const std::string& path,
                                                    const std::string& what);
  // DELETE with a DeleteOptions body; NotFound is returned as is (callers treat it as done).
  [[nodiscard]] absl::Status Delete(const std::string& path, const nlohmann::json& options,
                                    const std::string& what);

  const std::string& url() const { return options_.url; }

 private:
  explicit KubernetesApi(KubernetesApiOptions options);
  // One request; `body` null for GET. Returns the response body of a 2xx.
  absl::StatusOr<std::string> Send(const std::string& method, const std::string& path,
                                   const std::string* body, const std::string& verb,
                                   const std::string& what);

  KubernetesApiOptions options_;
  std::unique_ptr<httplib::Client> client_;
};

// The default API URL inside a pod: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
// (an IPv6 host in brackets); "" when the variables are unset.
std::string InClusterApiUrl();

// "a=b" -> "a%3Db": a label selector or other value for a query string.
std::string UrlQueryEscape(const std::string& s);

}  // namespace accel::server
