// Test helpers for the sharded checkpoint tests: a small model, deterministic training state,
// FSDP-style partitions, a whole save, and an Env that counts the bytes read.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/model/gpt2_config.h"
#include "engine/model/param_specs.h"

namespace accel::checkpoint::testing {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

// 2 layers, C = 8: 2016 parameters, units of 272, 872 and 872 elements.
inline model::ModelLayout SmallLayout() {
  model::Gpt2Config c;
  c.name = "ckpt-test";
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  c.vocab_size = 20;
  c.n_positions = 12;
  return *model::ModelLayout::Create(c);
}

// The full training state of a model at some "step", distinct per section and per seed.
struct State {
  std::vector<float> params, exp_avg, exp_avg_sq;
  State() = default;
  State(int64_t n, uint32_t seed) : params(n), exp_avg(n), exp_avg_sq(n) {
    uint32_t x = seed * 2654435761u + 1u;
    auto next = [&x] {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      return static_cast<float>(static_cast<int32_t>(x)) * 0x1.0p-31f;
    };
    for (int64_t i = 0; i < n; ++i) {
      params[i] = next();
      exp_avg[i] = next() * 0.1f;
      exp_avg_sq[i] = next() * next() * 1e-3f;
    }
  }
  bool operator==(const State&) const = default;
};

// FSDP's partition: each unit padded to a multiple of `world`, rank r owns slice r of each
// (the real part; empty slices skipped). world 1 = every unit whole.
inline Ranges ShardRanges(const model::ModelLayout& layout, int world, int rank) {
  Ranges out;
  for (int u = 0; u < layout.num_units(); ++u) {
    const model::UnitRange& unit = layout.unit(u);
    const int64_t shard = (unit.numel + world - 1) / world;
    const int64_t b = std::min(unit.numel, rank * shard), e = std::min(unit.numel, b + shard);
    if (b < e) out.emplace_back(unit.offset + b, unit.offset + e);
  }
  return out;
}

inline std::vector<SaveRange> SaveRangesOf(const State& s, const Ranges& ranges) {
  std::vector<SaveRange> out;
  for (const auto& [b, e] : ranges) {
    out.push_back({b, e, s.params.data() + b, s.exp_avg.data() + b, s.exp_avg_sq.data() + b});
  }
  return out;
}

inline std::vector<LoadRange> LoadRangesOf(State* s, const Ranges& ranges) {
  std::vector<LoadRange> out;
  for (const auto& [b, e] : ranges) {
    out.push_back({b, e, s->params.data() + b, s->exp_avg.data() + b, s->exp_avg_sq.data() + b});
  }
  return out;
}

inline CheckpointMeta MetaFor(const model::ModelLayout& layout, int64_t step, int world,
                              const std::vector<Ranges>& by_rank) {
  CheckpointMeta meta;
  meta.step = step;
  meta.data_position = step * 3;
  meta.optimizer_step = step;
  meta.world_size = world;
  meta.strategy = "full_shard";
  meta.model_config_json = model::ModelConfigToJson(layout.config());
  meta.train_config_json = R"({"lr": 0.0006, "seed": 1337})";
  meta.ranges_by_rank = by_rank;
  return meta;
}

// The whole protocol as `world` ranks in turn (FSDP partition), then rank 0's commit.
inline absl::Status SaveAll(Env* env, const std::string& dir, const model::ModelLayout& layout,
                            const State& state, int64_t step, int world, int keep_last = 0,
                            const RankFileOptions& options = {}) {
  std::vector<Ranges> by_rank;
  for (int r = 0; r < world; ++r) {
    by_rank.push_back(ShardRanges(layout, world, r));
    ACCEL_RETURN_IF_ERROR(
        WriteRankFile(env, dir, step, r, SaveRangesOf(state, by_rank.back()), options));
  }
  return WriteMetadataAndCommit(env, dir, MetaFor(layout, step, world, by_rank), layout, keep_last);
}

// SaveAll as `owner` (dir_owner.h).
inline absl::Status SaveAs(Env* env, const std::string& dir, const model::ModelLayout& layout,
                           const State& state, int64_t step, int world, int keep_last,
                           const CheckpointOwner& owner) {
  std::vector<Ranges> by_rank;
  for (int r = 0; r < world; ++r) {
    by_rank.push_back(ShardRanges(layout, world, r));
    ACCEL_RETURN_IF_ERROR(WriteRankFile(env, dir, step, r, SaveRangesOf(state, by_rank.back())));
  }
  CheckpointMeta meta = MetaFor(layout, step, world, by_rank);
  meta.owner = owner;
  return WriteMetadataAndCommit(env, dir, meta, layout, keep_last);
}

// Everything in a step directory, as one rank with the whole model would load it.
inline absl::StatusOr<State> LoadAll(Env* env, const std::string& step_dir,
                                     const model::ModelLayout& layout) {
  State s(layout.num_params(), 0);
  ACCEL_RETURN_IF_ERROR(
      LoadRanges(env, step_dir, layout, LoadRangesOf(&s, {{0, layout.num_params()}})));
  return s;
}

// Forwards to another Env, counting the bytes and calls of RandomAccessFile::Read.
class CountingEnv final : public Env {
 public:
  explicit CountingEnv(Env* base) : base_(base) {}
  int64_t bytes_read() const { return bytes_.load(); }
  int64_t reads() const { return reads_.load(); }
  int64_t max_read() const { return max_.load(); }
  void Reset() { bytes_ = reads_ = max_ = 0; }

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, base_->NewRandomAccessFile(path));
    return std::unique_ptr<RandomAccessFile>(new File(this, std::move(f)));
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    return base_->NewWritableFile(p);
  }
  bool FileExists(const std::string& p) override { return base_->FileExists(p); }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& p) override {
    return base_->GetFileSize(p);
  }
  absl::Status CreateDirs(const std::string& p) override { return base_->CreateDirs(p); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& p) override {
    return base_->ListDir(p);
  }
  absl::Status DeleteFile(const std::string& p) override { return base_->DeleteFile(p); }
  absl::Status DeleteRecursively(const std::string& p) override {
    return base_->DeleteRecursively(p);
  }
  absl::Status RenameFile(const std::string& a, const std::string& b) override {
    return base_->RenameFile(a, b);
  }
  absl::Status SyncDir(const std::string& p) override { return base_->SyncDir(p); }
  int64_t NowMicros() override { return base_->NowMicros(); }
  void SleepForMicros(int64_t m) override { base_->SleepForMicros(m); }

 private:
  class File final : public RandomAccessFile {
   public:
    File(CountingEnv* env, std::unique_ptr<RandomAccessFile> f) : env_(env), f_(std::move(f)) {}
    absl::Status Read(uint64_t offset, size_t n, char* dst) const override {
      env_->bytes_ += static_cast<int64_t>(n);
      env_->reads_ += 1;
      int64_t prev = env_->max_.load();
      while (static_cast<int64_t>(n) > prev && !env_->max_.compare_exchange_weak(prev, n)) {
      }
      return f_->Read(offset, n, dst);
    }
    uint64_t Size() const override { return f_->Size(); }
    const std::string& Path() const override { return f_->Path(); }

   private:
    CountingEnv* env_;
    std::unique_ptr<RandomAccessFile> f_;
  };
  Env* base_;
  std::atomic<int64_t> bytes_{0}, reads_{0}, max_{0};
};

// Overwrites a file with `bytes`, durably (for corrupting files in tests).
inline absl::Status OverwriteFile(Env* env, const std::string& path, const std::string& bytes) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, env->NewWritableFile(path));
  ACCEL_RETURN_IF_ERROR(f->Append(bytes));
  ACCEL_RETURN_IF_ERROR(f->Sync());
  return f->Close();
}

}  // namespace accel::checkpoint::testing
