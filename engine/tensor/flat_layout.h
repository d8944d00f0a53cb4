// FlatLayout: named tensors packed back to back in one flat buffer (llm.c's "the memory layout
// is the design"). Each entry has a name, a shape and an element offset; offsets follow the order
// entries were added, with no gaps. Immutable once built; safe to share between threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel {

struct LayoutEntry {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;  // in elements
  int64_t numel = 0;
};

std::string ShapeToString(std::span<const int64_t> shape);
int64_t NumElements(const std::vector<int64_t>& shape);

class FlatLayout {
 public:
  FlatLayout() = default;

  // InvalidArgument on a duplicate name or a negative dimension.
  [[nodiscard]] absl::Status Add(std::string name, std::vector<int64_t> shape);

  const std::vector<LayoutEntry>& entries() const { return entries_; }
  int64_t total_elements() const { return total_; }
  // nullptr when absent.
  const LayoutEntry* Find(std::string_view name) const;
  // NotFound naming the tensor when absent.
  [[nodiscard]] absl::StatusOr<const LayoutEntry*> Get(std::string_view name) const;

 private:
  std::vector<LayoutEntry> entries_;
  absl::flat_hash_map<std::string, size_t> index_;
  int64_t total_ = 0;
};

}  // namespace accel
