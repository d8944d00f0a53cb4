// Gpt2Activations: where forward keeps what backward reads (gpt2.h), laid out through
// activation_arena.h, so a memory plan and the real allocation cannot drift.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/model/activation_arena.h"
#include "engine/model/gpt2.h"

namespace accel::model {
namespace {

using arena::Allocation;
using arena::At;
using arena::At16;
using arena::Overlay;
using arena::Part;

// The parts of one block's forward working set (everything but its output).
Overlay WorkingSet(BlockActivations& L, int64_t B, int64_t T, int64_t C, int64_t NH) {
  const int64_t BT = B * T;
  return {At(&L.ln1, BT * C),      At(&L.ln1_mean, BT),     At(&L.ln1_rstd, BT),
          At(&L.qkv, BT * 3 * C),  At(&L.att, B * NH * T * T), At(&L.atty, BT * C),
          At(&L.residual2, BT * C), At(&L.ln2, BT * C),     At(&L.ln2_mean, BT),
          At(&L.ln2_rstd, BT),     At(&L.fch, BT * 4 * C),  At(&L.fch_gelu, BT * 4 * C)};
}

}  // namespace

struct ActivationLayout {
  // Every allocation of `a` for (B, T) under `options`, the parts' addresses going into `a`.
  static std::vector<Allocation> Of(const Gpt2Config& c, int64_t B, int64_t T,
                                    ActivationOptions options, Gpt2Activations& a);
};

std::vector<Allocation> ActivationLayout::Of(const Gpt2Config& c, int64_t B, int64_t T,
                                             ActivationOptions options, Gpt2Activations& a) {
  const int64_t BT = B * T, C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  a.B_ = B;
  a.T_ = T;
  a.options_ = options;
  a.blocks_.assign(c.n_layer, BlockActivations{});
  std::vector<Allocation> out;
  auto own = [&](Part part) { arena::Own(out, std::move(part)); };
  own(At(&a.encoded_, BT * C));
  own(At(&a.lnf_, BT * C));
  own(At(&a.lnf_mean_, BT));
  own(At(&a.lnf_rstd_, BT));
  own(At(&a.losses_, BT));
  own(At(&a.dresidual_, BT * C));
  own(At(&a.dln_, BT * C));
  const Overlay backward_scratch = {At(&a.dqkv_, BT * 3 * C), At(&a.datty_, BT * C),
                                    At(&a.dfch_, BT * 4 * C), At(&a.dfch_gelu_, BT * 4 * C)};
  if (options.checkpoint_blocks) {
    for (BlockActivations& L : a.blocks_) own(At(&L.residual3, BT * C));
    // The logits are live from the head's forward to the head's backward; one block's working
    // set and the backward's scratch only before and after that.
    Overlay working = WorkingSet(a.working_, B, T, C, NH);
    working.insert(working.end(), backward_scratch.begin(), backward_scratch.end());
    out.push_back({{{At(&a.logits_, BT * V)}, std::move(working)}});
  } else {
    own(At(&a.logits_, BT * V));
    for (BlockActivations& L : a.blocks_) {
      for (Part& part : WorkingSet(L, B, T, C, NH)) own(std::move(part));
      own(At(&L.residual3, BT * C));
    }
    for (const Part& part : backward_scratch) own(part);
  }
  if (options.bf16_matmuls) {
    own(At16(&a.inp16_, BT * 4 * C));
    own(At16(&a.dout16_, BT * std::max<int64_t>(4 * C, V)));
  }
  return out;
}

absl::StatusOr<Gpt2Activations> Gpt2Activations::Create(const Gpt2Config& c, int64_t B, int64_t T,
                                                        MemoryPool pool, MemoryLedger* ledger,
                                                        ActivationOptions options) {
  ACCEL_RETURN_IF_ERROR(arena::CheckShape(B, T, c.n_positions));
  Gpt2Activations a;
  ACCEL_ASSIGN_OR_RETURN(a.storage_,
                         arena::Allocate(ActivationLayout::Of(c, B, T, options, a), pool, ledger));
  return a;
}

absl::StatusOr<int64_t> Gpt2Activations::PlannedBytes(const Gpt2Config& c, int64_t B, int64_t T,
                                                      ActivationOptions options) {
  ACCEL_RETURN_IF_ERROR(arena::CheckShape(B, T, c.n_positions));
  Gpt2Activations unused;
  return arena::PlannedFloats(ActivationLayout::Of(c, B, T, options, unused)) *
         static_cast<int64_t>(sizeof(float));
}

int64_t Gpt2Activations::bytes() const { return arena::TotalBytes(storage_); }

BlockActivations Gpt2Activations::Block(int64_t l) const {
  if (!options_.checkpoint_blocks) return blocks_[l];
  BlockActivations L = working_;
  L.residual3 = blocks_[l].residual3;
  return L;
}

}  // namespace accel::model
