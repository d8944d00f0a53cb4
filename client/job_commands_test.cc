// accelctl's job commands against a hostile acceld (a fake Coordinator on loopback): every text
// it sends back — a job's error and plan, state messages, workers' log lines, checkpoint paths,
// gRPC error messages — reaches the terminal with its control characters neutralised
// (terminal_text.h), in plain, live-block and json output alike.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "accel/v1/coordinator.grpc.pb.h"
#include "client/accelctl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::client {
namespace {

namespace v1 = accel::v1;
using ::testing::HasSubstr;
using ::testing::Not;

// What a data path holding an OSC (retitle the terminal) and an erase-screen looks like.
const std::string kHostile = "/data/\x1b]0;pwned\x07\x1b[2J\xc2\x9b" "31mred";
// The same as accelctl prints it.
const std::string kShown = "/data/\\x1b]0;pwned\\x07\\x1b[2J\\u009b31mred";

// No byte of a terminal control sequence: C0 but \n, DEL, and the C1 range's UTF-8 lead pair.
bool HasRawControl(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      return true;
    }
  }
  return false;
}

v1::Job HostileJob() {
  v1::Job j;
  j.set_id("job-1");
  j.set_state(v1::FAILED);
  j.mutable_spec()->set_name("tiny");
  j.mutable_spec()->mutable_data()->set_path(kHostile);
  j.mutable_spec()->mutable_resources()->set_num_processes(1);
  j.set_error("rank 0: cannot open " + kHostile);
  j.mutable_plan()->set_strategy("full_shard");
  j.mutable_plan()->set_world_size(1);
  j.mutable_plan()->set_config(kHostile);
  j.mutable_plan()->add_notes("note about " + kHostile);
  return j;
}

class HostileCoordinator final : public v1::Coordinator::Service {
 public:
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* req, v1::Job* job) override {
    if (req->job_id() == "job-404") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no job \xff\xfe " + kHostile);
    }
    *job = HostileJob();
    return grpc::Status::OK;
  }
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest*,
                        v1::ListJobsResponse* resp) override {
    *resp->add_jobs() = HostileJob();
    resp->mutable_jobs(0)->mutable_plan()->set_strategy("full\x1b[2J");
    return grpc::Status::OK;
  }
  grpc::Status WatchJob(grpc::ServerContext*, const v1::WatchJobRequest*,
                        grpc::ServerWriter<v1::Event>* writer) override {
    for (const v1::Event& e : Events()) writer->Write(e);
    return grpc::Status::OK;
  }
  grpc::Status ListCheckpoints(grpc::ServerContext*, const v1::ListCheckpointsRequest*,
                               v1::ListCheckpointsResponse* resp) override {
    v1::Checkpoint* c = resp->add_checkpoints();
    c->set_job_id("job-1");
    c->set_attempt(1);
    c->set_step(2);
    c->set_path(kHostile + "/step_2");
    c->set_kind("sharded\x1b[8m");
    return grpc::Status::OK;
  }

  static std::vector<v1::Event> Events() {
    std::vector<v1::Event> events;
    auto next = [&events](int rank) -> v1::Event& {
      v1::Event& e = events.emplace_back();
      e.set_job_id("job-1");
      e.set_seq(static_cast<int64_t>(events.size()));
      e.set_rank(rank);
      return e;
    };
    next(-1).mutable_state()->set_state(v1::RUNNING);
    v1::Event& metrics = next(-1);
    metrics.mutable_metrics()->set_step(0);
    metrics.mutable_metrics()->set_total_steps(4);
    next(0).mutable_log()->set_line("error: cannot open " + kHostile);
    v1::CheckpointEvent* c = next(-1).mutable_checkpoint();
    c->set_step(1);
    c->set_path(kHostile + "/step_1");
    c->set_kind("sharded");
    v1::StateEvent* failed = next(-1).mutable_state();
    failed->set_state(v1::FAILED);
    failed->set_message("rank 0: cannot open " + kHostile);
    return events;
  }
};

class AccelctlAgainstAHostileAcceldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    address_ = "127.0.0.1:" + std::to_string(port);
    token_file_ = ::testing::TempDir() + "/accelctl_hostile_token_" + std::to_string(getpid());
    std::ofstream(token_file_) << "secret\n";
    setenv("ACCEL_FORCE_TTY", "0", 1);  // plain lines; the live block's test says otherwise
  }
  void TearDown() override {
    server_->Shutdown();
    std::filesystem::remove(token_file_);
    unsetenv("ACCEL_FORCE_TTY");
  }

  int Run(std::vector<std::string> args, std::string* out, std::string* err) {
    args.insert(args.begin(), {"--server", address_, "--token-file", token_file_});
    std::ostringstream o, e;
    const int code = RunAccelctl(args, {}, o, e);
    *out = o.str();
    *err = e.str();
    return code;
  }

  // accelctl ARGS: exit 0, and not one raw control byte in what it printed.
  std::string Printed(const std::vector<std::string>& args) {
    std::string out, err;
    EXPECT_EQ(Run(args, &out, &err), 0) << err;
    EXPECT_FALSE(HasRawControl(out)) << out;
    return out;
  }

  HostileCoordinator service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_, token_file_;
};

TEST_F(AccelctlAgainstAHostileAcceldTest, StatusShowsTheErrorAndPlanNeutralised) {
  const std::string out = Printed({"status", "job-1"});
  EXPECT_THAT(out, HasSubstr("  error: rank 0: cannot open " + kShown + "\n"));
  EXPECT_THAT(out, HasSubstr("  config " + kShown + "\n"));
  EXPECT_THAT(out, HasSubstr("  note: note about " + kShown + "\n"));
}

TEST_F(AccelctlAgainstAHostileAcceldTest, ListAndCheckpointsNeutraliseEveryColumn) {
  EXPECT_THAT(Printed({"list"}), HasSubstr("full\\x1b[2J"));
  const std::string out = Printed({"checkpoints", "job-1"});
  EXPECT_THAT(out, HasSubstr(kShown + "/step_2"));
  EXPECT_THAT(out, HasSubstr("sharded\\x1b[8m"));
}

TEST_F(AccelctlAgainstAHostileAcceldTest, LogsAndPlainWatchNeutraliseLinesPathsAndMessages) {
  EXPECT_THAT(Printed({"logs", "job-1"}),
              HasSubstr("[rank 0] error: cannot open " + kShown + "\n"));
  const std::string out = Printed({"watch", "job-1"});
  EXPECT_THAT(out, HasSubstr("checkpoint step 1: " + kShown + "/step_1"));
  EXPECT_THAT(out, HasSubstr("FAILED: rank 0: cannot open " + kShown + "\n"));
  EXPECT_THAT(out, HasSubstr("[rank 0] error: cannot open " + kShown + "\n"));
}

TEST_F(AccelctlAgainstAHostileAcceldTest, TheLiveBlockKeepsItsOwnEscapesAndNoOthers) {
  setenv("ACCEL_FORCE_TTY", "1", 1);
  std::string out, err;
  ASSERT_EQ(Run({"watch", "job-1"}, &out, &err), 0) << err;
  // accelctl's own: the block redrawn (cursor up, erase line) under each permanent line.
  EXPECT_THAT(out, HasSubstr("\x1b[1A\x1b[2K"));
  // The server's: all shown as text.
  EXPECT_THAT(out, Not(HasSubstr("\x1b]")));
  EXPECT_THAT(out, Not(HasSubstr("\x07")));
  EXPECT_THAT(out, Not(HasSubstr("\x1b[2J")));
  EXPECT_THAT(out, Not(HasSubstr("\xc2\x9b")));
  EXPECT_THAT(out, HasSubstr("FAILED: rank 0: cannot open " + kShown + "\n"));
}

TEST_F(AccelctlAgainstAHostileAcceldTest, ErrorMessagesFromAcceldAreNeutralisedToo) {
  std::string out, err;
  EXPECT_EQ(Run({"status", "job-404"}, &out, &err), 1);
  EXPECT_FALSE(HasRawControl(err)) << err;
  EXPECT_THAT(err, HasSubstr("no job \\xff\\xfe " + kShown));
}

TEST_F(AccelctlAgainstAHostileAcceldTest, JsonOutputIsEscapedJson) {
  EXPECT_THAT(Printed({"status", "job-1", "--output", "json"}),
              HasSubstr("\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31mred"));
  EXPECT_THAT(Printed({"watch", "job-1", "--output", "json"}), HasSubstr("\\u001b]0;pwned"));
}

}  // namespace
}  // namespace accel::client
