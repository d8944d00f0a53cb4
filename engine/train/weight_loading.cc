// Trainer::InitWeights: where the initial parameters come from, and how much host memory that
// costs each rank (docs/checkpoint_format.md, "Efficient loading"). Every temporary buffer is
// charged to the ledger as host / other, so the memory statistics show the difference:
//
//   mode                                        reads the file       peak host "other" per rank
//   default                                     every rank, whole    the full model (a seeded
//                                                                    init: one unit)
//   sync_module_states                          rank 0, whole        the full model (broadcast)
//   cpu_ram_efficient_loading (+ sync implied)  rank 0, unit by unit one unit
//   zero3_init (with --init-weights)            every rank, its own  the largest held range
//                                               byte ranges only
//
// cpu_ram_efficient_loading implies sync_module_states, as in Accelerate. zero3_init applies to
// --init-weights; a seeded init is computed unit by unit (model::InitUnit), except under
// plain sync_module_states, whose broadcast is of the whole vector.
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "engine/tensor/buffer.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/checkpoint/hf_model_file.h"
#include "engine/train/trainer.h"

namespace accel::train {
namespace {

constexpr absl::Duration kLoadTimeout = absl::Seconds(300);

int64_t LargestUnit(const model::ModelLayout& layout) {
  int64_t n = 0;
  for (int u = 0; u < layout.num_units(); ++u) n = std::max(n, layout.unit(u).numel);
  return n;
}

}  // namespace

absl::Status Trainer::LoadHeldRanges(const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<checkpoint::HfModelFile> file,
                         checkpoint::HfModelFile::Open(env_, path, layout_.get()));
  int64_t largest = 1;
  for (int u = 0; u < layout_->num_units(); ++u) {
    auto [b, e] = sharded_->HeldRange(u);
    largest = std::max(largest, e - b);
  }
  ACCEL_ASSIGN_OR_RETURN(Buffer held, AllocateFloats(static_cast<size_t>(largest),
                                                     MemoryPool::kHost, MemoryCategory::kOther,
                                                     ledger_));
  for (int u = 0; u < layout_->num_units(); ++u) {
    auto [b, e] = sharded_->HeldRange(u);
    const int64_t base = layout_->unit(u).offset;
    ACCEL_RETURN_IF_ERROR(file->ReadFlat(base + b, base + e, held.as<float>()));
    ACCEL_RETURN_IF_ERROR(sharded_->LoadUnitRange(u, held.as<float>()));
  }
  return absl::OkStatus();
}

absl::Status Trainer::InitWeights() {
  const TrainOptions& o = options_;
  const int64_t n = layout_->num_params();
  if (!o.init_weights.empty() && o.zero3_init) return LoadHeldRanges(o.init_weights);

  if (o.cpu_ram_efficient_loading) {
    // Rank 0 is the only reader; every unit goes out by broadcast with one trailing status
    // element (1: good), so a read failure on rank 0 ends every rank's load with an error
    // instead of leaving the others waiting.
    const int64_t largest = LargestUnit(*layout_);
    ACCEL_ASSIGN_OR_RETURN(Buffer unit_buf, AllocateFloats(static_cast<size_t>(largest + 1),
                                                           MemoryPool::kHost,
                                                           MemoryCategory::kOther, ledger_));
    std::unique_ptr<checkpoint::HfModelFile> file;
    absl::Status source_status;
    if (rank() == 0) {
      if (!o.init_weights.empty()) {
        absl::StatusOr<std::unique_ptr<checkpoint::HfModelFile>> f =
            checkpoint::HfModelFile::Open(env_, o.init_weights, layout_.get());
        source_status = f.status();
        if (f.ok()) file = std::move(*f);
      }
    }
    float* buf = unit_buf.as<float>();
    for (int u = 0; u < layout_->num_units(); ++u) {
      const model::UnitRange& range = layout_->unit(u);
      if (rank() == 0) {
        if (source_status.ok() && file != nullptr) {
          source_status = file->ReadFlat(range.offset, range.offset + range.numel, buf);
        } else if (source_status.ok()) {
          model::InitUnit(*layout_, o.seed, u, buf);
        }
        buf[range.numel] = source_status.ok() ? 1.0f : 0.0f;
      }
      ACCEL_RETURN_IF_ERROR(
          Annotate(host_world_->Broadcast(buf, range.numel + 1, DType::kF32, 0)->Wait(
                       kLoadTimeout),
                   absl::StrCat("receiving unit ", u, " of the initial weights from rank 0")));
      if (buf[range.numel] != 1.0f) {
        if (rank() == 0) return source_status;
        return absl::UnavailableError(
            absl::StrCat("rank 0 could not read the initial weights (",
                         o.init_weights.empty() ? "seeded init" : o.init_weights,
                         "); see rank 0's error"));
      }
      ACCEL_RETURN_IF_ERROR(sharded_->LoadUnit(u, buf));
    }
    return absl::OkStatus();
  }

  if (o.init_weights.empty() && !o.sync_module_states) {
    // A seeded init, unit by unit: every rank computes the same values, one unit at a time.
    ACCEL_ASSIGN_OR_RETURN(Buffer unit_buf,
                           AllocateFloats(static_cast<size_t>(LargestUnit(*layout_)),
                                          MemoryPool::kHost, MemoryCategory::kOther, ledger_));
    for (int u = 0; u < layout_->num_units(); ++u) {
      model::InitUnit(*layout_, o.seed, u, unit_buf.as<float>());
      ACCEL_RETURN_IF_ERROR(sharded_->LoadUnit(u, unit_buf.as<float>()));
    }
    return absl::OkStatus();
  }
  // The full initial vector exists only during setup, as "other" host memory.
  ACCEL_ASSIGN_OR_RETURN(Buffer full, AllocateFloats(static_cast<size_t>(n), MemoryPool::kHost,
                                                     MemoryCategory::kOther, ledger_));
  const bool read_here = !o.sync_module_states || rank() == 0;
  if (read_here && o.init_weights.empty()) {
    model::InitParams(*layout_, o.seed, full.as<float>());
  } else if (read_here) {
    ACCEL_RETURN_IF_ERROR(
        checkpoint::LoadHfWeights(env_, o.init_weights, *layout_, full.as<float>()));
  }
  if (o.sync_module_states) ACCEL_RETURN_IF_ERROR(sharded_->BroadcastFull(full.as<float>(), 0));
  return sharded_->LoadFull(full.as<float>());
}

}  // namespace accel::train
