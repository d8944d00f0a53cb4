#include "server/launchers/kubernetes_api.h"

#include <cstdlib>

#include <httplib.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/env.h"
#include "rpc/credential_files.h"

namespace accel::server {
namespace {

// A projected service-account token is a JWT of about 1 KiB; 64 KiB leaves room for any
// issuer's claims without letting a wrong path (a device, a huge file) grow acceld.
constexpr uint64_t kMaxKubeTokenFileBytes = 64 << 10;

// The bearer token in --kube-token-file: a regular file (never a FIFO or a device, which would
// block or grow acceld) under the client token's rules (rpc::ParseBearerToken) with a larger
// cap. Errors name the flag and the file, never the file's content.
absl::StatusOr<std::string> ReadKubeToken(const std::string& path) {
  absl::StatusOr<std::string> text =
      rpc::ReadCredentialFile(Env::Default(), path, "--kube-token-file", kMaxKubeTokenFileBytes);
  if (!text.ok()) return text.status();
  return rpc::ParseBearerToken(*text, path, "--kube-token-file", kMaxKubeTokenFileBytes,
                               "an HTTP header");
}

absl::Status HttpError(int code, const std::string& text) {
  switch (code) {
    case 400:
    case 422:
      return absl::InvalidArgumentError(text);
    case 401:
      return absl::UnauthenticatedError(text);
    case 403:
      return absl::PermissionDeniedError(text);
    case 404:
      return absl::NotFoundError(text);
    case 409:
      return absl::AlreadyExistsError(text);
    default:
      return absl::UnavailableError(text);
  }
}

// The API server's explanation: a Status object's message, else the body's start.
std::string ErrorMessage(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  std::string text = body.substr(0, 200);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace

std::string InClusterApiUrl() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0') return "";
  const std::string h = std::string(host).find(':') != std::string::npos
                            ? absl::StrCat("[", host, "]")
                            : std::string(host);
  return absl::StrCat("https://", h, ":", port != nullptr && *port != '\0' ? port : "443");
}

std::string UrlQueryEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, absl::StrFormat("%%%02X", c));
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<KubernetesApi>> KubernetesApi::Create(
    KubernetesApiOptions options) {
  const std::string& url = options.url;
  const bool https = url.rfind("https://", 0) == 0;
  const bool http = url.rfind("http://", 0) == 0;
  const std::string rest = url.substr(https ? 8 : http ? 7 : 0);
  if ((!https && !http) || rest.empty() || rest.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kube-api: '", url, "' is not http(s)://host[:port] (in a pod it defaults to "
        "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)"));
  }
  // Both files are the operator's, checked at start so that a wrong path fails acceld's start
  // in one line instead of every launch (docs/security.md).
  if (!options.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadKubeToken(options.token_file);
    if (!token.ok()) return token.status();
  }
  if (!options.ca_file.empty()) {
    absl::StatusOr<std::string> ca = rpc::ReadPemFile(Env::Default(), options.ca_file,
                                                      "--kube-ca-file", rpc::PemKind::kCertificate);
    if (!ca.ok()) return ca.status();
  }
  std::unique_ptr<KubernetesApi> api(new KubernetesApi(std::move(options)));
  if (!api->client_->is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat("--kube-api: cannot use '", url, "'"));
  }
  return api;
}

KubernetesApi::KubernetesApi(KubernetesApiOptions options)
    : options_(std::move(options)), client_(std::make_unique<httplib::Client>(options_.url)) {
  const auto t = options_.timeout;
  const time_t sec = absl::ToInt64Seconds(t);
  const time_t usec = absl::ToInt64Microseconds(t - absl::Seconds(sec));
  client_->set_connection_timeout(sec, usec);
  client_->set_read_timeout(sec, usec);
  client_->set_write_timeout(sec, usec);
  client_->set_keep_alive(true);
  if (options_.url.rfind("https://", 0) == 0) {
    client_->enable_server_certificate_verification(true);
    if (!options_.ca_file.empty()) client_->set_ca_cert_path(options_.ca_file);
  }
}

KubernetesApi::~KubernetesApi() = default;

absl::StatusOr<std::string> KubernetesApi::Send(const std::string& method,
                                                const std::string& path,
                                                const std::string* body, const std::string& verb,
                                                const std::string& what) {
  const std::string prefix = absl::StrCat("kubernetes: ", verb, " ", what);
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (!options_.token_file.empty()) {
    // Re-read each time: projected service-account tokens are rotated by the kubelet.
    absl::StatusOr<std::string> token = ReadKubeToken(options_.token_file);
    if (!token.ok()) {
      return absl::UnauthenticatedError(absl::StrCat(prefix, ": ", token.status().message()));
    }
    headers.emplace("Authorization", absl::StrCat("Bearer ", *token));
  }
  httplib::Result res = method == "GET"    ? client_->Get(path, headers)
                        : method == "POST" ? client_->Post(path, headers, *body,
                                                           "application/json")
                                           : client_->Delete(path, headers, *body,
                                                             "application/json");
  if (!res) {
    const httplib::Error e = res.error();
    if (e == httplib::Error::ConnectionTimeout || e == httplib::Error::Read) {
      return absl::DeadlineExceededError(
          absl::StrCat(prefix, ": no answer from ", options_.url, " within ",
                       absl::FormatDuration(options_.timeout), " (", httplib::to_string(e), ")"));
    }
    return absl::UnavailableError(absl::StrCat(prefix, ": cannot reach ", options_.url, " (",
                                               httplib::to_string(e), ")"));
  }
  if (res->status < 200 || res->status > 299) {
    return HttpError(res->status, absl::StrCat(prefix, ": HTTP ", res->status, ": ",
                                               ErrorMessage(res->body)));
  }
  return res->body;
}

absl::StatusOr<nlohmann::json> KubernetesApi::Post(const std::string& path,
                                                   const nlohmann::json& body,
                                                   const std::string& what) {
  const std::string text = body.dump();
  absl::StatusOr<std::string> out = Send("POST", path, &text, "create", what);
  if (!out.ok()) return out.status();
  nlohmann::json j = nlohmann::json::parse(*out, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::UnavailableError(
        absl::StrCat("kubernetes: create ", what, ": the answer is not JSON"));
  }
  return j;
}

absl::StatusOr<nlohmann::json> KubernetesApi::Get(const std::string& path,
                                                  const std::string& what) {
  absl::StatusOr<std::string> out = Send("GET", path, nullptr, "get", what);
  if (!out.ok()) return out.status();
  nlohmann::json j = nlohmann::json::parse(*out, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return absl::UnavailableError(
        absl::StrCat("kubernetes: get ", what, ": the answer is not a JSON object"));
  }
  return j;
}

absl::StatusOr<std::string> KubernetesApi::GetText(const std::string& path,
                                                   const std::string& what) {
  return Send("GET", path, nullptr, "get", what);
}

absl::Status KubernetesApi::Delete(const std::string& path, const nlohmann::json& options,
                                   const std::string& what) {
  const std::string text = options.dump();
  return Send("DELETE", path, &text, "delete", what).status();
}

}  // namespace accel::server
