// accelctl's text forms: job states, durations, byte counts, times, progress bars and one line
// per job event (metrics, memory, checkpoints, logs, states); a job's plan; protobuf messages as
// JSON. Memory lines name the ledger's pools: compute (the kernels' memory: RAM on a cpu rank, the
// GPU's on a cuda rank), host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "accel/v1/coordinator.grpc.pb.h"
#include "google/protobuf/message.h"

namespace accel::client {

// The message as JSON with proto field names and default values printed.
std::string Json(const google::protobuf::Message& m);
std::string StateName(accel::v1::JobState s);  // "RUNNING"
std::string Duration(double seconds);           // "1:05", "2:03:04"
std::string Bytes(int64_t b);                   // "1.5 GiB"
std::string Time(int64_t us);                   // local time of Unix microseconds
std::string ProgressBar(int64_t done, int64_t total, int width = 20);  // "[####......]"
// "#12 step 30/100 [######..............]  30% | loss ..." and the like; a sample is
// "#13 step 30 sample: \"TEXT\"" (escaped, one line: generate::SampleLine).
std::string EventLine(const accel::v1::Event& e);
// `accelctl status`'s eval line from a job's eval records in order: the latest and the best
// (lowest) eval loss with their steps; empty without records.
std::string EvalSummaryText(const std::vector<accel::v1::EvalEvent>& evals);
// `accelctl status`'s sample line from the job's latest sample (train.sample_every): its step,
// the new tokens' count and the text escaped on one line ("  latest step 200 sample: \"...\"
// (32 tokens)"); empty for a job without samples.
std::string LatestSampleText(const std::optional<accel::v1::SampleEvent>& latest);
// The job's plan as `accelctl status` and `submit` show it: indented lines, each ending in "\n".
std::string PlanText(const accel::v1::Job& j);

}  // namespace accel::client
