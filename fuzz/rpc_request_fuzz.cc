// Fuzz target: what acceld does with a request's bytes before touching any state, without a
// network: the bytes parse as a protobuf request (as gRPC would hand it over), then go through
// the checks of server/services/services.cc. The first byte picks the request:
//   0 SubmitJobRequest: ValidateJobSpec (without and with file checks), the lowering, and the
//     record acceld stores (JobRecordFromSpec), whose spec and typed plan must read back (a
//     stored spec that does not parse fails the job at the next start);
//   1 a request naming a job (GetJob, CancelJob, WatchJob, ListCheckpoints): ValidateJobId;
//   2 WorkerEvent (ReportEvents): ReportFromProto, whose body must read back as an Event.
// Properties: nothing throws or crashes; every refusal is a Status of the documented code; what
// is accepted round-trips.
#include <string>

#include "accel/v1/coordinator.pb.h"
#include "accel/v1/worker.pb.h"
#include "engine/testing/mem_env.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/job_spec_checks.h"
#include "job/job_file.h"
#include "job/job_lowering.h"
#include "server/services/convert.h"

namespace accel::fuzz {
namespace {

void Submit(const uint8_t* data, size_t size) {
  accel::v1::SubmitJobRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return;  // gRPC refuses it first
  const accel::v1::JobSpec& spec = req.spec();
  absl::Status valid = job::ValidateJobSpec(spec, /*check_files=*/false);
  // With file checks (acceld's call) the answer can only get stricter.
  absl::Status with_files = job::ValidateJobSpec(spec, /*check_files=*/true);
  FUZZ_CHECK(valid.ok() || !with_files.ok(), "file checks accepted what the others refused");
  if (!valid.ok()) {
    CheckError(valid, {absl::StatusCode::kInvalidArgument}, "");
    return;
  }
  CheckAcceptedSpec(spec);
  testing::MemEnv env;
  absl::StatusOr<config::LoweredJob> lowered = job::LowerJobSpec(spec, false, &env);
  if (!lowered.ok()) return;  // CheckAcceptedSpec checked the status
  absl::StatusOr<server::JobRecord> record = server::JobRecordFromSpec(spec, *lowered);
  if (!record.ok()) {
    CheckError(record.status(), {absl::StatusCode::kInvalidArgument}, "");
    return;
  }
  absl::StatusOr<accel::v1::JobSpec> stored = job::JobSpecFromJson(record->spec_json);
  FUZZ_CHECK(stored.ok(), "the stored spec does not read back: " + stored.status().ToString());
  absl::Status v = job::ValidateJobSpec(*stored, /*check_files=*/false);
  FUZZ_CHECK(v.ok(), "the spec acceld stores (as it runs) does not validate: " + v.ToString());
  absl::StatusOr<accel::v1::JobPlan> plan = server::ShownPlan(record->training_plan);
  FUZZ_CHECK(plan.ok(), "the stored training plan does not read back: " + plan.status().ToString());
  FUZZ_CHECK(record->slots >= 1, "a job with no slots");
}

void JobId(const uint8_t* data, size_t size) {
  accel::v1::WatchJobRequest req;  // job_id is field 1 in every request that names a job
  if (!req.ParseFromArray(data, static_cast<int>(size))) return;
  absl::Status s = job::ValidateJobId(req.job_id());
  const bool expect = !req.job_id().empty() && req.job_id().size() <= job::kMaxJobIdBytes;
  FUZZ_CHECK(s.ok() == expect, "ValidateJobId: " + s.ToString());
  if (!s.ok()) CheckError(s, {absl::StatusCode::kInvalidArgument}, "job_id");
}

void WorkerEvent(const uint8_t* data, size_t size) {
  accel::v1::WorkerEvent event;
  if (!event.ParseFromArray(data, static_cast<int>(size))) return;
  auto report = server::ReportFromProto(event);
  if (!report.ok()) {
    CheckError(report.status(), {absl::StatusCode::kInvalidArgument}, "");
    return;
  }
  if (!report->has_value()) return;  // a heartbeat
  server::Event e;
  e.job_id = "job-1";
  e.kind = (*report)->kind;
  e.body_json = (*report)->body_json;
  absl::StatusOr<accel::v1::Event> back = server::EventToProto(e);
  FUZZ_CHECK(back.ok(), "a stored event body does not read back: " + back.status().ToString() +
                            "\n" + e.body_json);
}

}  // namespace
}  // namespace accel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  if (size == 0) return 0;
  switch (data[0] % 3) {
    case 0: Submit(data + 1, size - 1); break;
    case 1: JobId(data + 1, size - 1); break;
    default: WorkerEvent(data + 1, size - 1); break;
  }
  return 0;
}
