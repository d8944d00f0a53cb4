// The fixture of acceld's gRPC surface tests (services_test.cc, services_submit_test.cc): an
// in-process acceld whose "workers" are shell scripts that only wait, a channel and stubs to
// it, and helpers to submit, find a job's worker token and watch its events.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "accel/v1/coordinator.grpc.pb.h"
#include "accel/v1/worker.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "rpc/grpc_store.h"
#include "job/job_file.h"
#include "server/acceld.h"
#include "server/core/test_util.h"

namespace accel::server {

using ::testing::HasSubstr;
namespace v1 = accel::v1;

class ServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTestDir();
    // A "worker" that only waits: it never registers, so the job stays STARTING.
    worker_ = dir_ + "/fake-worker.sh";
    std::ofstream(worker_) << "#!/bin/sh\nexec sleep 30\n";
    chmod(worker_.c_str(), 0755);
    std::ofstream(dir_ + "/data.txt") << "hello world\n";
    AcceldOptions o;
    o.listen = "127.0.0.1:0";
    o.state_dir = dir_ + "/state";
    o.cpu_slots = 2;
    o.worker_bin = worker_;
    o.stop_grace = absl::Milliseconds(500);
    auto d = Acceld::Start(o);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
    channel_ = *rpc::MakeChannel(daemon_->address());
    coord_ = v1::Coordinator::NewStub(channel_);
    workers_ = v1::WorkerService::NewStub(channel_);
    token_ = *rpc::ReadTokenFile(dir_ + "/state/token");
  }
  void TearDown() override { daemon_.reset(); }

  v1::JobSpec Spec(int ranks) {
    v1::JobSpec s = job::DefaultJobSpec();
    s.set_name("svc");
    s.mutable_data()->set_path(dir_ + "/data.txt");
    s.mutable_resources()->set_num_processes(ranks);
    return s;
  }
  grpc::Status Submit(const v1::JobSpec& spec, const std::string& token, v1::Job* job) {
    grpc::ClientContext ctx;
    if (!token.empty()) rpc::Authorize(ctx, token);
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    v1::SubmitJobResponse resp;
    grpc::Status s = coord_->SubmitJob(&ctx, req, &resp);
    if (job) *job = resp.job();
    return s;
  }
  // Waits until the job's workers have a token (the control loop started them).
  std::string WorkerToken(const std::string& job_id) {
    for (int i = 0; i < 500; ++i) {
      std::string t = daemon_->manager().TokenForTest(job_id);
      if (!t.empty()) return t;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }
  std::vector<v1::Event> Watch(const std::string& job_id, int64_t from_seq, bool follow) {
    grpc::ClientContext ctx;
    rpc::Authorize(ctx, token_);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::WatchJobRequest req;
    req.set_job_id(job_id);
    req.set_from_seq(from_seq);
    req.set_follow(follow);
    auto reader = coord_->WatchJob(&ctx, req);
    std::vector<v1::Event> out;
    v1::Event e;
    while (reader->Read(&e)) out.push_back(e);
    EXPECT_TRUE(reader->Finish().ok());
    return out;
  }

  std::string dir_, worker_, token_;
  std::unique_ptr<Acceld> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> coord_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
};


}  // namespace accel::server
