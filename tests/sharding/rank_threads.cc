#include "tests/sharding/rank_threads.h"

#include <atomic>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/comm/in_memory_store.h"

namespace accel::testing {

std::vector<absl::Status> RunOnRanks(
    int world, const shard::ShardOptions& options, absl::Duration gloo_timeout,
    const std::function<absl::Status(int rank, shard::ProcessGroups groups)>& fn) {
  static std::atomic<int> run_id{0};
  const std::string prefix = absl::StrCat("ranks", run_id++);
  comm::InMemoryStore store;
  std::vector<absl::Status> statuses(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      comm::GlooOptions gloo;
      gloo.timeout = gloo_timeout;
      absl::StatusOr<shard::OwnedProcessGroups> groups =
          shard::CreateGlooProcessGroups(&store, prefix, r, world, options, gloo);
      statuses[r] = groups.ok() ? fn(r, groups->view()) : groups.status();
    });
  }
  for (std::thread& t : threads) t.join();
  return statuses;
}

}  // namespace accel::testing
