#include "bench/machine.h"

#include "absl/strings/str_format.h"

namespace accel::bench {

Machine MeasureMachine(int threads) {
  Machine m;
  auto cpu = ReadCpuInfo();
  if (cpu.ok()) m.cpu = *std::move(cpu);
  m.peak = MeasureFmaPeak(threads);
  return m;
}

std::string MachineText(const Machine& m) {
  const FmaPeak& p = m.peak;
  return absl::StrFormat(
      "cpu: %s, %d logical CPUs\n"
      "flags: %s\n"
      "fp32 FMA peak (%s, %d-bit, %d chains/thread, best of %d): %.1f GFLOP/s on 1 core, "
      "%.1f GFLOP/s on %d threads at once (%.1f per thread)\n",
      m.cpu.model_name.empty() ? "unknown" : m.cpu.model_name, m.cpu.logical_cpus,
      KeyFlagsLine(m.cpu), p.isa, p.vector_bits, p.chains, p.tries, p.per_core_gflops,
      p.all_core_gflops, p.threads, p.all_core_gflops / p.threads);
}

nlohmann::json MachineJson(const Machine& m) {
  const FmaPeak& p = m.peak;
  return {{"cpu",
           {{"model_name", m.cpu.model_name},
            {"logical_cpus", m.cpu.logical_cpus},
            {"key_flags", PresentKeyFlags(m.cpu)},
            {"flags_line", KeyFlagsLine(m.cpu)}}},
          {"fma_peak",
           {{"isa", p.isa},
            {"vector_bits", p.vector_bits},
            {"chains_per_thread", p.chains},
            {"tries", p.tries},
            {"threads", p.threads},
            {"per_core_gflops", p.per_core_gflops},
            {"all_core_gflops", p.all_core_gflops}}}};
}

}  // namespace accel::bench
