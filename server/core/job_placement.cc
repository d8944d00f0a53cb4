#include "server/core/job_placement.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace accel::server {

std::string NoLauncher(const JobRecord& job) {
  return absl::StrCat("resources.launcher: this acceld has no ", job.knobs.launcher,
                      " launcher (acceld --launcher ", job.knobs.launcher, " enables it)");
}

Placement::Placement(int cpu_slots, std::string cpu_device, std::vector<GpuDevice> gpus,
                     GangRunner* local)
    : cpu_device_(std::move(cpu_device)),
      gpus_(std::move(gpus)),
      cpu_(cpu_slots),
      gpu_(static_cast<int>(gpus_.size())) {
  launchers_["local"] = local;
}

GangRunner* Placement::RunnerFor(const JobRecord& job) const {
  auto it = launchers_.find(job.knobs.launcher);
  return it == launchers_.end() ? nullptr : it->second;
}

Scheduler* Placement::Pool(DeviceKind device) {
  if (device == DeviceKind::kCpu) return &cpu_;
  if (gpu_.total_slots() > 0) return &gpu_;
  return nullptr;
}

const Scheduler* Placement::Pool(DeviceKind device) const {
  return const_cast<Placement*>(this)->Pool(device);
}

absl::Status Placement::CheckFits(const JobRecord& job) const {
  if (RunnerFor(job) == nullptr) return absl::InvalidArgumentError(NoLauncher(job));
  if (IsRemote(job)) return absl::OkStatus();  // the cluster has the machines
  const std::string device = DeviceKindName(job.knobs.device);
  const Scheduler* pool = Pool(job.knobs.device);
  if (pool == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resources.device: ", device, job.knobs.device == DeviceKind::kCuda
            ? " needs GPUs, but this acceld found none (no CUDA device; acceld --gpus N declares "
              "them)"
            : " is not a device kind this acceld schedules (cpu or cuda)"));
  }
  if (job.slots < 1 || job.slots > pool->total_slots()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resources.num_processes: the job needs ", job.slots, " ", device,
        " slots but this acceld has ", pool->total_slots(),
        job.knobs.device == DeviceKind::kCuda ? " (GPUs)" : " (acceld --cpu-slots)"));
  }
  return absl::OkStatus();
}

absl::Status Placement::Enqueue(const JobRecord& job) {
  if (RunnerFor(job) == nullptr) return absl::FailedPreconditionError(NoLauncher(job));
  if (IsRemote(job)) {
    remote_ready_.push_back(job.id);
    return absl::OkStatus();
  }
  Scheduler* pool = Pool(job.knobs.device);
  if (pool == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "resources.device: this acceld has no ", DeviceKindName(job.knobs.device),
        " slots any more"));
  }
  return pool->Enqueue(job.id, job.slots, job.priority, job.number);
}

void Placement::Unschedule(const std::string& job_id) {
  for (Scheduler* s : {&cpu_, &gpu_}) {
    s->Release(job_id);
    s->Remove(job_id);
  }
  remote_ready_.erase(std::remove(remote_ready_.begin(), remote_ready_.end(), job_id),
                      remote_ready_.end());
}

std::vector<std::string> Placement::Ready() {
  std::vector<std::string> ready;
  ready.swap(remote_ready_);
  for (Scheduler* pool : {&cpu_, &gpu_}) {
    for (const Scheduler::Placement& p : pool->Schedule()) ready.push_back(p.job_id);
  }
  return ready;
}

std::vector<std::string> Placement::CudaDevices(const JobRecord& job) const {
  std::vector<std::string> devices(job.slots);
  if (job.knobs.device != DeviceKind::kCuda) return devices;
  auto placed = gpu_.allocations().find(job.id);
  for (int rank = 0; placed != gpu_.allocations().end() && rank < job.slots &&
                     rank < static_cast<int>(placed->second.size());
       ++rank) {
    devices[rank] = std::to_string(gpus_[placed->second[rank]].index);
  }
  return devices;
}

ClusterView Placement::View() const {
  ClusterView v;
  v.device = cpu_device_;
  v.total_slots = cpu_.total_slots();
  v.free_slots = cpu_.free_slots();
  v.pools.push_back(PoolView{cpu_device_, v.total_slots, v.free_slots, {}, {}});
  if (!gpus_.empty()) {
    PoolView gpu{"cuda", gpu_.total_slots(), gpu_.free_slots(), {}, {}};
    for (const GpuDevice& g : gpus_) {
      gpu.names.push_back(g.name);
      gpu.memory_bytes.push_back(g.memory_bytes);
    }
    v.pools.push_back(gpu);
  }
  for (const auto& [device, pool] :
       {std::pair<std::string, const Scheduler*>{cpu_device_, &cpu_}, {"cuda", &gpu_}}) {
    for (const auto& [job, slots] : pool->allocations()) {
      v.allocations[job] = slots;
      v.allocation_device[job] = device;
    }
    for (const std::string& id : pool->Queue()) v.queue.push_back(id);
  }
  return v;
}

}  // namespace accel::server
