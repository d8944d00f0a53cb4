#include "engine/comm/gloo_store_adapter.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gloo/common/error.h"

namespace accel::comm {
namespace {

// gloo's connectFullMesh publishes "rank_<r>" (host name) and "<r>" (pair addresses) per rank.
bool RankOfKey(const std::string& key, int* rank) {
  absl::string_view digits = key;
  if (absl::StartsWith(digits, "rank_")) digits.remove_prefix(5);
  return !digits.empty() && absl::SimpleAtoi(digits, rank);
}

}  // namespace

GlooStoreAdapter::GlooStoreAdapter(comm::Store* store, absl::Duration timeout)
    : store_(store), timeout_(timeout) {}

void GlooStoreAdapter::Fail(absl::Status status, const std::vector<std::string>& keys) {
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    std::vector<int> ranks;
    for (const std::string& key : keys) {
      int rank = 0;
      if (RankOfKey(key, &rank)) ranks.push_back(rank);
    }
    if (!ranks.empty()) {
      status = absl::DeadlineExceededError(absl::StrCat("rank", ranks.size() > 1 ? "s " : " ",
                                                        absl::StrJoin(ranks, ", "),
                                                        " did not join (", status.message(), ")"));
    }
  }
  if (first_error_.ok()) first_error_ = status;
  throw gloo::IoException(std::string(status.message()));
}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  absl::Status st = store_->Set(key, std::string(data.begin(), data.end()));
  if (!st.ok()) Fail(st, {});
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  absl::StatusOr<std::string> value = store_->Get(key, timeout_);
  if (!value.ok()) Fail(value.status(), {key});
  return std::vector<char>(value->begin(), value->end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) {
  absl::Status st = store_->Wait(keys, timeout_);
  if (!st.ok()) Fail(st, keys);
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  absl::Status st = store_->Wait(keys, absl::Milliseconds(timeout.count()));
  if (!st.ok()) Fail(st, keys);
}

}  // namespace accel::comm
