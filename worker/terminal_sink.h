// The standalone run's terminal (worker/standalone.h): rank 0 speaks for the gang — progress
// lines, the metrics file, checkpoints, evaluations, samples and the saved model — as text
// lines, or JSON lines with --output json; the other ranks write nothing.
#pragma once

#include <memory>
#include <string>

#include "engine/tensor/dtype.h"
#include "worker/rank_runner.h"
#include "worker/standalone.h"

namespace accel::worker {

// The sink of one rank of a standalone run. `f` must outlive it.
std::unique_ptr<RankSink> MakeTerminalSink(const StandaloneFlags& f, int rank, int threads,
                                           DType save_dtype);

}  // namespace accel::worker
