// Checks shared by the job-file and RPC fuzz targets: what must hold for a JobSpec that
// ValidateJobSpec accepted (it is what acceld stores and every worker re-reads).
#pragma once

#include <google/protobuf/util/message_differencer.h>

#include "accel/v1/job.pb.h"
#include "engine/testing/mem_env.h"
#include "fuzz/fuzz_check.h"
#include "job/job_file.h"
#include "job/job_lowering.h"

namespace accel::fuzz {

// An accepted spec survives the wire (binary proto) and acceld's store (proto3 JSON) unchanged,
// and the lowering acceld runs at submit answers with a Status.
inline void CheckAcceptedSpec(const accel::v1::JobSpec& spec) {
  using google::protobuf::util::MessageDifferencer;
  std::string wire;
  FUZZ_CHECK(spec.SerializeToString(&wire), "an accepted spec does not serialize");
  accel::v1::JobSpec from_wire;
  FUZZ_CHECK(from_wire.ParseFromString(wire),
             "an accepted spec does not parse back from the wire: " + spec.ShortDebugString());
  FUZZ_CHECK(MessageDifferencer::Equals(spec, from_wire), "the wire changed an accepted spec");
  const std::string json = job::JobSpecToJson(spec);
  absl::StatusOr<accel::v1::JobSpec> stored = job::JobSpecFromJson(json);
  FUZZ_CHECK(stored.ok(), "an accepted spec's stored JSON does not read back: " +
                              stored.status().ToString() + "\n" + json);
  // Fields this build does not know (a newer client's, or garbage) are not stored, by design.
  accel::v1::JobSpec known = spec;
  known.DiscardUnknownFields();
  FUZZ_CHECK(MessageDifferencer::Equals(known, *stored),
             "the stored JSON changed an accepted spec:\n" + json);
  testing::MemEnv env;  // no files: lowering must say so, not crash
  absl::StatusOr<config::LoweredJob> lowered = job::LowerJobSpec(spec, /*check_files=*/true, &env);
  if (!lowered.ok()) {
    CheckError(lowered.status(),
               {absl::StatusCode::kInvalidArgument, absl::StatusCode::kNotFound}, "");
  }
}

}  // namespace accel::fuzz
