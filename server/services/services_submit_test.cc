// acceld's SubmitJob and auth over gRPC: the codes for missing, wrong and worker tokens, a job
// file parsed by acceld as accelctl would, and specs refused at the door with nothing queued.
#include "engine/config/lower.h"
#include "job/plan_proto.h"
#include "server/services/convert.h"
#include "server/services/services_test_fixture.h"

namespace accel::server {
namespace {
TEST_F(ServicesTest, TokensAreCheckedWithTheRightCodes) {
  v1::Job job;
  EXPECT_EQ(Submit(Spec(1), "", nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Submit(Spec(1), "wrong", nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(Submit(Spec(1), token_, &job).ok());
  const std::string worker_token = WorkerToken(job.id());
  ASSERT_FALSE(worker_token.empty());
  grpc::Status s = Submit(Spec(1), worker_token, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // The client token is not a worker token.
  grpc::ClientContext ctx;
  rpc::Authorize(ctx, token_);
  v1::RegisterRequest reg;
  reg.set_job_id(job.id());
  reg.set_attempt(1);
  v1::Assignment a;
  EXPECT_EQ(workers_->Register(&ctx, reg, &a).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // A worker token for another job's attempt.
  grpc::ClientContext ctx2;
  rpc::Authorize(ctx2, worker_token);
  reg.set_attempt(7);
  EXPECT_EQ(workers_->Register(&ctx2, reg, &a).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  grpc::ClientContext ctx3;
  rpc::Authorize(ctx3, "nope");
  EXPECT_EQ(workers_->Register(&ctx3, reg, &a).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(ServicesTest, AJobFileIsParsedByAcceldAsAccelctlWouldAndItsErrorsNameTheLine) {
  auto submit_file = [&](const std::string& file, const std::string& config, v1::Job* job) {
    grpc::ClientContext ctx;
    rpc::Authorize(ctx, token_);
    v1::SubmitJobRequest req;
    req.set_job_file(file);
    req.set_accelerate_config(config);
    v1::SubmitJobResponse resp;
    grpc::Status s = coord_->SubmitJob(&ctx, req, &resp);
    if (job) *job = resp.job();
    return s;
  };
  // Relative paths resolve against the job file's folder, as for accelctl.
  std::ofstream(dir_ + "/job.yaml") << "name: from-file\ndata: {path: data.txt}\n"
                                       "train: {steps: 3}\nresources: {num_processes: 1}\n";
  v1::Job job;
  grpc::Status s = submit_file(dir_ + "/job.yaml", "", &job);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(job.spec().name(), "from-file");
  EXPECT_EQ(job.spec().data().path(), dir_ + "/data.txt");
  EXPECT_EQ(job.spec().train().steps(), 3);

  std::ofstream(dir_ + "/bad.yaml") << "name: bad\ndata: {path: data.txt}\ntrain: {steps: 0}\n";
  s = submit_file(dir_ + "/bad.yaml", "", nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr(dir_ + "/bad.yaml: train.steps"));
  s = submit_file("job.yaml", "", nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("job_file: must be an absolute path"));
  s = submit_file(dir_ + "/missing.yaml", "", nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("missing.yaml"));
  s = submit_file("", dir_ + "/accelerate.yaml", nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("go with job_file"));
}

TEST_F(ServicesTest, BadSpecsAreRejectedAtSubmitAndNothingIsQueued) {
  v1::JobSpec bad = Spec(1);
  bad.mutable_train()->set_steps(0);
  grpc::Status s = Submit(bad, token_, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("train.steps"));
  v1::JobSpec too_big = Spec(3);  // 2 slots exist
  s = Submit(too_big, token_, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("resources.num_processes"));
  v1::JobSpec no_data = Spec(1);
  no_data.mutable_data()->set_path(dir_ + "/missing.bin");
  EXPECT_THAT(Submit(no_data, token_, nullptr).error_message(), HasSubstr("data.path: no such file"));
  // Probes of issue 16: a 50 MB name was stored and `list` failed for good after it; control
  // characters printed raw; a huge job id grew acceld.
  v1::JobSpec long_name = Spec(1);
  long_name.set_name(std::string(2 << 20, 'n'));
  EXPECT_THAT(Submit(long_name, token_, nullptr).error_message(),
              HasSubstr("spec: 2097"));
  long_name.set_name(std::string(300, 'n'));
  EXPECT_THAT(Submit(long_name, token_, nullptr).error_message(),
              HasSubstr("name: 300 bytes; at most 256"));
  long_name.set_name("two\nlines");
  EXPECT_THAT(Submit(long_name, token_, nullptr).error_message(),
              HasSubstr("name: control characters"));
  {
    grpc::ClientContext ctx;
    rpc::Authorize(ctx, token_);
    v1::GetJobRequest get;
    get.set_job_id(std::string(4000, 'j'));
    v1::Job job;
    grpc::Status got = coord_->GetJob(&ctx, get, &job);
    EXPECT_EQ(got.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(got.error_message(), HasSubstr("job_id: 4000 bytes; job ids are at most 128"));
  }
  grpc::ClientContext ctx;
  rpc::Authorize(ctx, token_);
  v1::ListJobsResponse list;
  ASSERT_TRUE(coord_->ListJobs(&ctx, v1::ListJobsRequest(), &list).ok());
  EXPECT_EQ(list.jobs_size(), 0);
}

// Issue 29: acceld lowers a job once, at submit, into the typed plan it stores; GetJob shows that
// plan, and a rank's Assignment carries it (the rank lowers nothing: worker/plan_path_test.cc).
TEST_F(ServicesTest, SubmitLowersOnceAndTheAssignmentCarriesTheTypedPlan) {
  v1::JobSpec spec = Spec(1);
  spec.mutable_sharding()->set_strategy("full_shard");
  spec.mutable_train()->set_micro_batch(3);
  const int64_t lowerings = config::LoweringsInProcess();
  v1::Job job;
  ASSERT_TRUE(Submit(spec, token_, &job).ok());
  EXPECT_EQ(config::LoweringsInProcess(), lowerings + 1);
  EXPECT_EQ(job.plan().strategy(), "full_shard");
  EXPECT_EQ(job.plan().micro_batch(), 3);
  grpc::ClientContext ctx;
  rpc::Authorize(ctx, WorkerToken(job.id()));
  v1::RegisterRequest reg;
  reg.set_job_id(job.id());
  reg.set_attempt(1);
  v1::Assignment a;
  ASSERT_TRUE(workers_->Register(&ctx, reg, &a).ok());
  EXPECT_EQ(config::LoweringsInProcess(), lowerings + 1);  // Register lowers nothing
  EXPECT_EQ(a.plan().version(), job::kTrainingPlanVersion);
  EXPECT_EQ(a.plan().options().shard().strategy(), v1::STRATEGY_FULL_SHARD);
  EXPECT_EQ(a.plan().options().batch(), 3);
  EXPECT_EQ(a.plan().world().world_size(), 1);
  absl::StatusOr<job::PlannedJob> planned = job::PlannedJobFromPlan(a.plan());
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(planned->options.data, dir_ + "/data.txt");
}

// The state store's hooks in acceld (server/services/convert.h): a job stored before plans gets one from
// its stored spec; a stored plan that does not decode is named.
TEST_F(ServicesTest, AcceldsPlanHooksLowerAStoredSpecAndCheckAStoredPlan) {
  const PlanHooks hooks = AcceldPlanHooks();
  JobRecord old;
  old.id = "job-1";
  old.spec_json = job::JobSpecToJson(Spec(2));
  absl::StatusOr<std::string> plan = hooks.fill(old);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(hooks.check(*plan), "");
  absl::StatusOr<v1::JobPlan> shown = ShownPlan(*plan);
  ASSERT_TRUE(shown.ok()) << shown.status();
  EXPECT_EQ(shown->world_size(), 2);
  EXPECT_NE(hooks.check("not a plan"), "");
  old.spec_json = R"({"model":{"preset":"gpt5"},"data":{"path":"/d"}})";
  EXPECT_FALSE(hooks.fill(old).ok());
}

}  // namespace
}  // namespace accel::server
