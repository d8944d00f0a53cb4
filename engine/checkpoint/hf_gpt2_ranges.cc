#include "engine/checkpoint/hf_gpt2_ranges.h"

#include <algorithm>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::checkpoint {
namespace {

constexpr char kPrefix[] = "transformer.";

// The attention-mask buffers of older HF GPT-2 checkpoints: not parameters.
bool IsMaskBuffer(std::string_view name) {
  return name.starts_with("h.") &&
         (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HfGpt2File>> HfGpt2File::Open(Env* env, const std::string& path,
                                                             const model::Gpt2Layout* layout) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsReader> reader,
                         SafetensorsReader::Open(env, path));
  std::unique_ptr<HfGpt2File> f(new HfGpt2File(std::move(reader), layout));
  ACCEL_RETURN_IF_ERROR(f->Validate());
  return f;
}

absl::Status HfGpt2File::Validate() {
  const std::string& path = reader_->path();
  absl::flat_hash_set<std::string> used;
  for (const LayoutEntry& e : layout_->flat().entries()) {
    std::string file_name = e.name;
    if (reader_->Find(file_name) == nullptr) file_name = absl::StrCat(kPrefix, e.name);
    if (reader_->Find(file_name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor ", e.name,
                                                     " is missing (model ",
                                                     layout_->config().name, ")"));
    }
    ACCEL_RETURN_IF_ERROR(reader_->ExpectShape(file_name, e.shape));
    const TensorInfo* info = reader_->Find(file_name);
    if (!info->dtype.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor ", file_name, " has dtype ",
                                                     info->dtype_name,
                                                     "; only F32, BF16 and F16 can be loaded"));
    }
    used.insert(file_name);
    file_names_.push_back(std::move(file_name));
  }
  const LayoutEntry* wte = layout_->flat().Find("wte.weight");
  for (const TensorInfo& t : reader_->tensors()) {
    if (used.contains(t.name)) continue;
    std::string_view name = t.name;
    if (name.starts_with(kPrefix)) name.remove_prefix(sizeof(kPrefix) - 1);
    if (IsMaskBuffer(name)) continue;
    if (name == "lm_head.weight") {
      ACCEL_RETURN_IF_ERROR(reader_->ExpectShape(t.name, wte->shape));
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unexpected tensor ", t.name, " (not a GPT-2 parameter of model ",
                     layout_->config().name, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<HfGpt2File::Piece>> HfGpt2File::Map(int64_t flat_begin,
                                                               int64_t flat_end) const {
  if (flat_begin < 0 || flat_end < flat_begin || flat_end > layout_->num_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader_->path(), ": flat range [", flat_begin, ", ", flat_end,
                     ") is outside the model's ", layout_->num_params(), " parameters"));
  }
  const std::vector<LayoutEntry>& entries = layout_->flat().entries();
  // The first tensor that ends after flat_begin; entries are back to back in offset order.
  auto it = std::upper_bound(entries.begin(), entries.end(), flat_begin,
                             [](int64_t v, const LayoutEntry& e) { return v < e.offset + e.numel; });
  std::vector<Piece> pieces;
  for (int64_t at = flat_begin; at < flat_end; ++it) {
    const int64_t end = std::min(flat_end, it->offset + it->numel);
    if (end <= at) continue;  // a 0-element tensor
    pieces.push_back({file_names_[it - entries.begin()], at - it->offset, end - at,
                      at - flat_begin});
    at = end;
  }
  return pieces;
}

absl::Status HfGpt2File::ReadFlat(int64_t flat_begin, int64_t flat_end, float* dst) const {
  ACCEL_ASSIGN_OR_RETURN(std::vector<Piece> pieces, Map(flat_begin, flat_end));
  for (const Piece& p : pieces) {
    ACCEL_RETURN_IF_ERROR(reader_->ReadRange(p.file_name, p.elem_begin, p.count, dst + p.dst_offset));
  }
  return absl::OkStatus();
}

}  // namespace accel::checkpoint
