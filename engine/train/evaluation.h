// Evaluation during training (issue 31.1): the model's loss on held-out tokens, forward only.
//
// The eval set is options.eval.data cut into consecutive (B, T) batches in file order — batch b
// reads tokens [b·B·T, (b+1)·B·T] (a data::BatchLoader of one rank, unshuffled), the tail that
// fills no batch is not read — or its first eval.max_batches of them. Batch b is computed by
// rank b mod world, so the split is fixed by the batch count alone. A rank with no batch left in
// a round still runs a forward (of batch 0, discarded): under sharded strategies the forward's
// all-gathers are collective.
//
// eval loss = Σ cross-entropy over every target != kIgnoreTarget of those batches / their count.
// Each batch's count is taken on the host from its targets, and the runner's reported loss is
// the mean over them (contract 2: targets carry the mask as -100), so Σ = loss · count per
// batch; sums and counts are added across ranks in float64, in rank order. Every rank gets the
// same value. perplexity = exp(eval loss).
//
// Nothing a training step keeps changes: no backward runs, gradients and optimizer state are
// not touched, the gathered copies the forward keeps for a backward are given back
// (ShardedModel::FinishForward), and the activations are the training runner's own, so memory
// stays within the training plan.
#pragma once

#include <cstdint>
#include <string>

#include "engine/config/train_options.h"
#include "engine/data/batch_loader.h"

namespace accel::train {

// PyTorch's ignore_index: a target that is not a prediction target (data/ loss mask).
inline constexpr int32_t kIgnoreTarget = -100;

struct EvalMetrics {
  int64_t step = 0;         // optimizer steps taken before it (0: the starting weights)
  double loss = 0;          // mean CE over the unmasked targets (0 when there are none)
  double perplexity = 1;    // exp(loss)
  int64_t tokens = 0;       // unmasked targets counted, all ranks
  int64_t batches = 0;      // (B, T) batches evaluated, all ranks
  double seconds = 0;
  double tokens_per_s = 0;  // positions computed (batches · B · T) per second
};

// Whether an evaluation is due once `steps_done` of `total_steps` are done (every_n_steps,
// at_end); at_start is the caller's (before the first step).
bool EvalDue(const config::EvalOptions& eval, int64_t steps_done, int64_t total_steps);

// The batches an evaluation reads: the loader's whole batches, at most max_batches (0: all).
int64_t EvalBatchCount(const data::BatchLoader& loader, int64_t max_batches);

// The targets among n that count (!= kIgnoreTarget).
int64_t CountTargets(const int32_t* targets, int64_t n);

// One JSON object: {"step":..,"eval_loss":..,"eval_perplexity":..,"eval_tokens":..,...}.
std::string EvalMetricsToJson(const EvalMetrics& m);

}  // namespace accel::train
