// FakeApiServer: a Kubernetes API server for tests, in the test process (httplib::Server, or
// SSLServer, on 127.0.0.1). It stores what is POSTed under <collection>/<metadata.name>
// (409 when it exists), GETs objects and collections back (with a "k=v" labelSelector),
// DELETEs them (404 when absent), serves canned pod logs, records every request, and answers
// chosen requests with an error status or after a delay.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace accel::server {

struct Request {
  std::string method, path, query, body, auth;
};

class FakeApiServer {
 public:
  using json = nlohmann::json;

  // HTTPS with `cert` and `key` (PEM files), else plain HTTP.
  explicit FakeApiServer(const std::string& cert = "", const std::string& key = "")
      : tls_(!cert.empty()),
        server_(tls_ ? std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str())
                     : std::make_unique<httplib::Server>()) {
    auto handle = [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); };
    server_->Get(".*", handle);
    server_->Post(".*", handle);
    server_->Delete(".*", handle);
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
    server_->stop();
    thread_.join();
  }
  std::string url() const {
    return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_);
  }

  // Answers requests of `method` whose path contains `path_part` with `code` (0: stop), or
  // sleeps `delay` first.
  void Fail(const std::string& method, const std::string& path_part, int code,
            std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
    std::lock_guard<std::mutex> l(mu_);
    failures_.push_back({method, path_part, code, delay});
  }
  void ClearFailures() {
    std::lock_guard<std::mutex> l(mu_);
    failures_.clear();
  }
  void Put(const std::string& path, json object) {
    std::lock_guard<std::mutex> l(mu_);
    objects_[path] = std::move(object);
  }
  std::optional<json> Object(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = objects_.find(path);
    return it == objects_.end() ? std::nullopt : std::optional<json>(it->second);
  }
  size_t NumObjects() {
    std::lock_guard<std::mutex> l(mu_);
    return objects_.size();
  }
  void SetLog(const std::string& pod, const std::string& text) {
    std::lock_guard<std::mutex> l(mu_);
    logs_[pod] = text;
  }
  std::vector<Request> Requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  std::vector<std::string> Calls(const std::string& method) {
    std::vector<std::string> out;
    for (const Request& r : Requests()) {
      if (r.method == method) out.push_back(r.path);
    }
    return out;
  }
  void ClearRequests() {
    std::lock_guard<std::mutex> l(mu_);
    requests_.clear();
  }

 private:
  struct Failure {
    std::string method, path_part;
    int code;
    std::chrono::milliseconds delay;
  };

  static void Status(httplib::Response& res, int code, const std::string& message) {
    res.status = code;
    res.set_content(json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                         {"message", message}, {"code", code}}.dump(),
                    "application/json");
  }

  void Serve(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock<std::mutex> l(mu_);
    std::string query;
    for (const auto& [k, v] : req.params) query += (query.empty() ? "" : "&") + k + "=" + v;
    requests_.push_back({req.method, req.path, query, req.body,
                         req.get_header_value("Authorization")});
    for (const Failure& f : failures_) {
      if (f.method != req.method || req.path.find(f.path_part) == std::string::npos) continue;
      if (f.delay.count() > 0) {
        l.unlock();
        std::this_thread::sleep_for(f.delay);
        l.lock();
      }
      if (f.code != 0) return Status(res, f.code, "injected failure for " + req.path);
    }
    if (req.method == "POST") {
      json body = json::parse(req.body);
      const std::string path = req.path + "/" + body["metadata"]["name"].get<std::string>();
      if (objects_.count(path) != 0) return Status(res, 409, path + " already exists");
      objects_[path] = body;
      res.status = 201;
      return res.set_content(body.dump(), "application/json");
    }
    if (req.method == "DELETE") {
      if (objects_.erase(req.path) == 0) return Status(res, 404, req.path + " not found");
      return res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
    }
    if (req.path.size() > 4 && req.path.substr(req.path.size() - 4) == "/log") {
      const std::string pod = std::vector<std::string>(absl::StrSplit(req.path, '/')).end()[-2];
      return res.set_content(logs_[pod], "text/plain");
    }
    if (auto it = objects_.find(req.path); it != objects_.end()) {
      return res.set_content(it->second.dump(), "application/json");
    }
    // A collection: the objects below the path that match the label selector.
    json items = json::array();
    const std::string selector = req.get_param_value("labelSelector");
    const std::vector<std::string> kv = absl::StrSplit(selector, '=');
    for (const auto& [path, o] : objects_) {
      if (path.rfind(req.path + "/", 0) != 0) continue;
      const json& labels = o["metadata"]["labels"];
      if (!selector.empty() && (!labels.is_object() || labels.value(kv[0], "") != kv[1])) {
        continue;
      }
      items.push_back(o);
    }
    if (items.empty() && selector.empty()) return Status(res, 404, req.path + " not found");
    res.set_content(json{{"kind", "List"}, {"items", items}}.dump(), "application/json");
  }

  const bool tls_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, json> objects_;
  std::map<std::string, std::string> logs_;
  std::vector<Request> requests_;
  std::vector<Failure> failures_;
};

}  // namespace accel::server
