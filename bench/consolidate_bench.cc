// Consolidation benchmark (not a test): a gpt2 (124M) sharded checkpoint as 4 FULL_SHARD ranks
// save it, consolidated into one model.safetensors, with the seconds, MB/s and peak RSS set
// against the largest tensor. Also times the sharded save and a resharded load (4 -> 2 ranks).
//
// Each phase runs in its own process (fork) so getrusage's peak RSS belongs to that phase
// alone: the synthetic training state of the save never counts against the consolidation.
// The files are on the local disk and were just written, so reads come from the page cache.
//
//   accel_bench_consolidate [--preset gpt2] [--world 4] [--dtype fp32|bf16|fp16] [--dir DIR]
//   [--keep]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "engine/base/env.h"
#include "engine/checkpoint/consolidate.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/model/gpt2_config.h"
#include "engine/model/param_specs.h"

namespace accel {
namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

// Synthetic state: a cheap hash of the flat index, different per section, exact in f32.
float Value(int64_t i, int section) {
  uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + section * 0x632BE59BD9B4E019ull;
  x ^= x >> 29;
  return static_cast<float>(static_cast<int64_t>(x % 2000003) - 1000001) * 1e-6f;
}

Ranges ShardRanges(const model::ModelLayout& layout, int world, int rank) {
  Ranges out;
  for (int u = 0; u < layout.num_units(); ++u) {
    const model::UnitRange& unit = layout.unit(u);
    const int64_t shard = (unit.numel + world - 1) / world;
    const int64_t b = std::min(unit.numel, rank * shard), e = std::min(unit.numel, b + shard);
    if (b < e) out.emplace_back(unit.offset + b, unit.offset + e);
  }
  return out;
}

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // KiB on Linux
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::_Exit(1);
  }
}

// Runs fn in a child process and waits for it; exits if the child fails.
template <typename Fn>
void InChild(Fn fn) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    fn();
    std::fflush(stdout);
    std::_Exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "child phase failed\n");
    std::exit(1);
  }
}

void Save(Env* env, const std::string& dir, const model::ModelLayout& layout, int world) {
  int64_t write_micros = 0;
  std::vector<Ranges> by_rank;
  uint64_t bytes = 0;
  for (int r = 0; r < world; ++r) {
    by_rank.push_back(ShardRanges(layout, world, r));
    int64_t n = 0;
    for (const auto& [b, e] : by_rank[r]) n += e - b;
    std::vector<float> data(3 * n);  // one rank's shards: params, exp_avg, exp_avg_sq
    std::vector<checkpoint::SaveRange> ranges;
    int64_t at = 0;
    for (const auto& [b, e] : by_rank[r]) {
      const int64_t len = e - b;
      float* p = data.data() + 3 * at;
      for (int64_t i = 0; i < len; ++i) {
        p[i] = Value(b + i, 0);
        p[len + i] = Value(b + i, 1);
        p[2 * len + i] = Value(b + i, 2);
      }
      ranges.push_back({b, e, p, p + len, p + 2 * len});
      at += len;
    }
    const int64_t start = env->NowMicros();
    Check(checkpoint::WriteRankFile(env, dir, 1000, r, ranges), "WriteRankFile");
    write_micros += env->NowMicros() - start;
    bytes += 12 * n;
  }
  checkpoint::CheckpointMeta meta;
  meta.step = 1000;
  meta.world_size = world;
  meta.strategy = "full_shard";
  meta.ranges_by_rank = by_rank;
  const int64_t commit_start = env->NowMicros();
  Check(checkpoint::WriteMetadataAndCommit(env, dir, meta, layout, 0), "commit");
  const double commit = (env->NowMicros() - commit_start) / 1e6;
  const double s = write_micros / 1e6;
  std::printf(
      "save     : %d rank files (written one after another), %.1f MB in %.2f s "
      "(%.0f MB/s, with fsync); commit %.3f s; peak RSS %.0f MiB\n",
      world, bytes / 1e6, s, bytes / 1e6 / s, commit, PeakRssMiB());
}

void Load(Env* env, const std::string& step_dir, const model::ModelLayout& layout, int world) {
  const Ranges mine = ShardRanges(layout, world, 0);
  int64_t n = 0;
  for (const auto& [b, e] : mine) n += e - b;
  std::vector<float> data(3 * n);
  std::vector<checkpoint::LoadRange> ranges;
  int64_t at = 0;
  for (const auto& [b, e] : mine) {
    float* p = data.data() + 3 * at;
    ranges.push_back({b, e, p, p + (e - b), p + 2 * (e - b)});
    at += e - b;
  }
  const int64_t start = env->NowMicros();
  Check(checkpoint::LoadRanges(env, step_dir, layout, ranges), "LoadRanges");
  const double s = (env->NowMicros() - start) / 1e6;
  int64_t wrong = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    const auto& r = ranges[i];
    for (int64_t k = 0; k < r.flat_end - r.flat_begin; k += 997) {
      wrong += r.params[k] != Value(r.flat_begin + k, 0) ||
               r.exp_avg_sq[k] != Value(r.flat_begin + k, 2);
    }
  }
  std::printf(
      "load     : rank 0 of %d (resharded from the saved layout), %.1f MB in %.2f s "
      "(%.0f MB/s); peak RSS %.0f MiB; %s\n",
      world, 12.0 * n / 1e6, s, 12.0 * n / 1e6 / s, PeakRssMiB(),
      wrong == 0 ? "values check" : "VALUES WRONG");
  if (wrong != 0) std::_Exit(1);
}

void Consolidate(Env* env, const std::string& step_dir, const std::string& out,
                 const model::ModelLayout& layout, DType dtype) {
  const double rss_before = PeakRssMiB();
  const int64_t start = env->NowMicros();
  checkpoint::ConsolidateOptions options;
  options.dtype = dtype;
  auto stats = checkpoint::ConsolidateToSafetensors(env, step_dir, out, options);
  Check(stats.status(), "consolidate");
  const double s = (env->NowMicros() - start) / 1e6;
  const double peak = PeakRssMiB();
  const double largest = stats->largest_tensor_elements * 4 / 1048576.0;
  std::printf(
      "consolidate: %lld tensors, %.1f MB written (%s) from %.1f MB of f32 params in "
      "%.2f s: %.0f MB/s written, %.0f MB/s of params read\n",
      static_cast<long long>(stats->tensors), stats->bytes_written / 1e6,
      std::string(DTypeName(dtype)).c_str(), stats->params * 4 / 1e6, s,
      stats->bytes_written / 1e6 / s, stats->params * 4 / 1e6 / s);
  std::printf(
      "           peak RSS %.1f MiB (%.1f MiB before the call); largest tensor %.1f MiB "
      "(f32); bound largest + 64 MiB = %.1f MiB: %s\n",
      peak, rss_before, largest, largest + 64, peak <= largest + 64 ? "within" : "EXCEEDED");

  // Spot-check the output against the synthetic values, a tensor at a time (after measuring).
  auto reader = checkpoint::SafetensorsReader::Open(env, out);
  Check(reader.status(), "open output");
  int64_t wrong = 0;
  std::vector<float> buf(4096);
  for (const LayoutEntry& e : layout.flat().entries()) {
    const int64_t n = std::min<int64_t>(e.numel, buf.size());
    Check((*reader)->ReadRange(e.name, e.numel - n, n, buf.data()), "read output");
    for (int64_t i = 0; i < n; ++i) {
      float want = Value(e.offset + e.numel - n + i, 0);
      if (dtype == DType::kBF16) want = Bf16ToFloat(FloatToBf16(want));
      if (dtype == DType::kF16) want = F16ToFloat(FloatToF16(want));
      wrong += buf[i] != want;
    }
  }
  std::printf("           output check: %s\n",
              wrong == 0 ? "tensors equal the saved params" : "MISMATCH");
  if (wrong != 0) std::_Exit(1);
}

}  // namespace
}  // namespace accel

int main(int argc, char** argv) {
  using namespace accel;
  CLI::App app{"consolidation benchmark"};
  std::string preset = "gpt2", dtype_name = "fp32";
  std::string dir = "/tmp/accel_consolidate_bench_" + std::to_string(getpid());
  int world = 4;
  bool keep = false;
  app.add_option("--preset", preset, "model preset")->capture_default_str();
  app.add_option("--world", world, "ranks that save")->capture_default_str();
  app.add_option("--dtype", dtype_name, "output dtype: fp32 | bf16 | fp16")->capture_default_str();
  app.add_option("--dir", dir, "scratch directory (deleted afterwards unless --keep)");
  app.add_flag("--keep", keep, "keep the checkpoint and the output");
  CLI11_PARSE(app, argc, argv);

  auto config = model::Gpt2Preset(preset);
  Check(config.status(), "preset");
  auto layout = model::ModelLayout::Create(*config);
  Check(layout.status(), "layout");
  auto dtype = ParseDType(dtype_name);
  Check(dtype.status(), "dtype");
  Env* env = Env::Default();
  const std::string ckpt = JoinPath(dir, "ckpt");
  const std::string out = JoinPath(dir, "out/model.safetensors");
  Check(env->CreateDirs(JoinPath(dir, "out")), "mkdir");
  std::printf("model %s: %lld parameters, %d units; checkpoint saved by %d ranks in %s\n",
              preset.c_str(), static_cast<long long>(layout->num_params()), layout->num_units(),
              world, ckpt.c_str());

  InChild([&] { Save(env, ckpt, *layout, world); });
  const std::string step_dir = checkpoint::StepDir(ckpt, 1000);
  InChild([&] { Load(env, step_dir, *layout, std::max(1, world / 2)); });
  InChild([&] { Consolidate(env, step_dir, out, *layout, *dtype); });

  if (!keep) Check(env->DeleteRecursively(dir), "cleanup");
  return 0;
}
