// The bf16-or-fp32 matmul decision (matmul_bf16_choice.h) and its per-host cache.
#include "engine/kernels/cpu/matmul_bf16_choice.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/threading.h"
#include "engine/tensor/dtype.h"

namespace accel::kernels {
namespace internal {
namespace {

// The cache entry: "<key>\n<speedup>\n". The key is stored whole, so a file-name collision or a
// stale file reads as a miss, never as another host's figure.
std::string CachePath(const Bf16ChoiceInputs& in) {
  return absl::StrFormat("%s/bf16_matmul_%016x.txt", in.cache_dir,
                         std::hash<std::string>{}(in.host_key));
}

std::optional<double> ReadCached(const Bf16ChoiceInputs& in) {
  if (in.cache_dir.empty() || in.env == nullptr) return std::nullopt;
  absl::StatusOr<std::string> text = ReadFileToString(in.env, CachePath(in));
  if (!text.ok()) return std::nullopt;
  std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  double speedup = 0;
  if (lines.size() < 2 || lines[0] != in.host_key || !absl::SimpleAtod(lines[1], &speedup) ||
      !(speedup > 0)) {
    return std::nullopt;
  }
  return speedup;
}

void WriteCached(const Bf16ChoiceInputs& in, double speedup) {
  if (in.cache_dir.empty() || in.env == nullptr) return;
  // Best effort: a host whose cache cannot be written measures again next time.
  if (!in.env->CreateDirs(in.cache_dir).ok()) return;
  (void)WriteFileAtomic(in.env, CachePath(in), absl::StrCat(in.host_key, "\n", speedup, "\n"));
}

std::string Speedup(double x) { return absl::StrFormat("%.2fx", x); }

}  // namespace

Bf16MatmulChoice ChooseBf16Matmul(const Bf16ChoiceInputs& in) {
  if (in.override_value == "1") {
    return {.native = true, .reason = "bf16 (forced: ACCEL_BF16_MATMUL=1)"};
  }
  if (!in.override_value.empty()) {
    return {.native = false, .reason = "fp32 copies (forced: ACCEL_BF16_MATMUL=" +
                                           in.override_value + ")"};
  }
  if (!in.bf16_isa) {
    return {.native = false,
            .reason = absl::StrCat("fp32 copies (", in.isa_name,
                                   ": no bf16 dot products, oneDNN has no bf16 kernel)")};
  }
  std::optional<double> speedup = ReadCached(in);
  const char* how = "cached";
  if (!speedup.has_value()) {
    absl::StatusOr<double> measured = in.measure ? in.measure() : absl::UnavailableError("none");
    if (!measured.ok()) {
      return {.native = false,
              .reason = absl::StrCat("fp32 copies (", in.isa_name, ": the bf16 GEMM could not be ",
                                     "timed: ", measured.status().message(), ")")};
    }
    speedup = *measured;
    how = "measured";
    WriteCached(in, *speedup);
  }
  const bool native = *speedup >= kMinSpeedup;
  return {.native = native,
          .measured_speedup = *speedup,
          .reason = absl::StrCat(native ? "bf16" : "fp32 copies", " (oneDNN ", in.isa_name, ": ",
                                 Speedup(*speedup), " the fp32 GEMM here, ", how,
                                 native ? "" : absl::StrCat("; below ", Speedup(kMinSpeedup)),
                                 ")")};
}

namespace {

// "model name" and "flags" of the first processor in /proc/cpuinfo.
std::string CpuIdentity() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(cpuinfo, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
  }
  return absl::StrCat(model, "|", std::hash<std::string>{}(flags));
}

std::string IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2: return "avx2";
    default: return "isa " + std::to_string(static_cast<int>(isa));
  }
}

std::string CacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/accel/cpu");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/accel/cpu");
  }
  return "";
}

// Best of `runs` timings of f, in seconds.
double BestOf(int runs, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                              .count());
  }
  return best;
}

}  // namespace

Bf16ChoiceInputs ThisHostsBf16ChoiceInputs() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  const dnnl_version_t* v = dnnl_version();
  Bf16ChoiceInputs in;
  if (const char* env = std::getenv("ACCEL_BF16_MATMUL"); env != nullptr) in.override_value = env;
  in.bf16_isa = isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  in.isa_name = IsaName(isa);
  in.host_key = absl::StrCat(CpuIdentity(), "|onednn ", v->major, ".", v->minor, ".", v->patch,
                             "|threads ", NumThreads());
  in.cache_dir = CacheDir();
  in.env = Env::Default();
  in.measure = MeasureBf16OverFp32;
  return in;
}

absl::StatusOr<double> MeasureBf16OverFp32() {
  constexpr int64_t kRows = 256, kWidth = 768;  // GPT-2 124M's attention projection, B*T = 256
  std::vector<float> a(kRows * kWidth), b(kWidth * kWidth), c(kRows * kWidth),
      dw(kWidth * kWidth);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 13) * 0.01f - 0.06f;
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  FloatToBf16(a.data(), a16.data(), a.size());
  FloatToBf16(b.data(), b16.data(), b.size());
  // Forward: C (rows, width) = A · B; a weight gradient's shape: dW (width, width) = Aᵀ · A
  // (the output gradient stands in as A itself: same shape, same FLOPs).
  auto fp32 = [&] {
    Gemm(false, false, kRows, kWidth, kWidth, 1.0f, a.data(), kWidth, b.data(), kWidth, 0.0f,
         c.data(), kWidth);
    Gemm(true, false, kWidth, kWidth, kRows, 1.0f, a.data(), kWidth, a.data(), kWidth, 0.0f,
         dw.data(), kWidth);
  };
  auto bf16 = [&] {
    GemmBf16(false, false, kRows, kWidth, kWidth, a16.data(), kWidth, b16.data(), kWidth, 0.0f,
             c.data(), kWidth);
    GemmBf16(true, false, kWidth, kWidth, kRows, a16.data(), kWidth, a16.data(), kWidth, 0.0f,
             dw.data(), kWidth);
  };
  fp32();  // first calls: oneDNN builds its kernels, pages are touched
  bf16();
  const double fp32_s = BestOf(5, fp32);
  const double bf16_s = BestOf(5, bf16);
  if (!(bf16_s > 0) || !(fp32_s > 0)) return absl::InternalError("a GEMM timed at zero");
  return fp32_s / bf16_s;
}

}  // namespace internal

const Bf16MatmulChoice& ChosenBf16Matmul() {
  static const Bf16MatmulChoice choice =
      internal::ChooseBf16Matmul(internal::ThisHostsBf16ChoiceInputs());
  return choice;
}

bool Bf16MatmulIsNative() { return ChosenBf16Matmul().native; }

}  // namespace accel::kernels
