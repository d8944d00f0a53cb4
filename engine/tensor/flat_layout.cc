#include "engine/tensor/flat_layout.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accel {

std::string ShapeToString(std::span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape.begin(), shape.end(), ", "), "]");
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::Status FlatLayout::Add(std::string name, std::vector<int64_t> shape) {
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", name, " has a negative dimension: ", ShapeToString(shape)));
    }
  }
  if (index_.contains(name)) {
    return absl::InvalidArgumentError(absl::StrCat("duplicate tensor name ", name));
  }
  LayoutEntry e;
  e.numel = NumElements(shape);
  e.offset = total_;
  e.name = std::move(name);
  e.shape = std::move(shape);
  total_ += e.numel;
  index_.emplace(e.name, entries_.size());
  entries_.push_back(std::move(e));
  return absl::OkStatus();
}

const LayoutEntry* FlatLayout::Find(std::string_view name) const {
  auto it = index_.find(absl::string_view(name.data(), name.size()));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

absl::StatusOr<const LayoutEntry*> FlatLayout::Get(std::string_view name) const {
  const LayoutEntry* e = Find(name);
  if (e == nullptr) {
    return absl::NotFoundError(absl::StrCat("no tensor named ", std::string(name)));
  }
  return e;
}

}  // namespace accel
