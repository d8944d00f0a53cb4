// Disk read/write bandwidth through engine/io (O_DIRECT + io_uring or the thread pool), the
// figure the NVMe offload benchmark prints next to the bytes it moves per step (not a test).
// One line per aio configuration: DeepSpeed's defaults, then variations of one knob each.
//
//   accel_bench_disk [--dir /var/tmp] [--mib 1024] [--threads]
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "engine/io/disk_bandwidth.h"

namespace {

struct Config {
  const char* name;
  accel::io::AioOptions options;
};

std::vector<Config> Configs(bool threads) {
  accel::io::AioOptions base;  // block_size 1 MiB, queue_depth 8, batched, overlap
  if (threads) base.backend = accel::io::AioBackend::kThreads;
  std::vector<Config> out = {{"defaults (1 MiB, qd 8)", base}};
  auto with = [&](const char* name, auto change) {
    accel::io::AioOptions o = base;
    change(o);
    out.push_back({name, o});
  };
  with("queue_depth 32", [](auto& o) { o.queue_depth = 32; });
  with("block_size 8 MiB", [](auto& o) { o.block_size = 8 << 20; });
  with("block_size 128 KiB", [](auto& o) { o.block_size = 128 << 10; });
  with("single_submit", [](auto& o) { o.single_submit = true; });
  with("overlap_events off", [](auto& o) { o.overlap_events = false; });
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Disk bandwidth through engine/io"};
  std::string dir = "/var/tmp";
  int64_t mib = 1024;
  bool threads = false;
  app.add_option("--dir", dir, "directory on the disk to measure (not tmpfs)");
  app.add_option("--mib", mib, "MiB written and read per configuration");
  app.add_flag("--threads", threads, "force the pread/pwrite thread backend");
  CLI11_PARSE(app, argc, argv);

  std::printf("%-24s %-9s %-6s %10s %10s\n", "aio", "backend", "direct", "write GB/s",
              "read GB/s");
  for (const Config& c : Configs(threads)) {
    auto bw = accel::io::MeasureDiskBandwidth(dir, mib << 20, c.options);
    if (!bw.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name, std::string(bw.status().message()).c_str());
      return 1;
    }
    std::printf("%-24s %-9s %-6s %10.2f %10.2f\n", c.name, bw->backend.c_str(),
                bw->direct ? "yes" : "no", bw->write_gbps, bw->read_gbps);
    if (!bw->note.empty()) std::printf("  note: %s\n", bw->note.c_str());
  }
  return 0;
}
