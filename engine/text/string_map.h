// StringMap<V>: a flat_hash_map keyed by std::string that std::string_view can look up without
// a copy. Abseil 20220623 as Debian builds it has its own absl::string_view, so its
// heterogeneous lookup does not take std::string_view; these functors do.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace accel::text {

struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return absl::Hash<absl::string_view>{}(absl::string_view(s.data(), s.size()));
  }
};

struct StringViewEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

template <typename V>
using StringMap = absl::flat_hash_map<std::string, V, StringViewHash, StringViewEq>;

}  // namespace accel::text
