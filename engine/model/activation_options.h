// Where a model's activations live and what they keep: the options every architecture's
// activations take (Gpt2Activations, LlamaActivations, the CUDA ones).
#pragma once

namespace accel::model {

struct ActivationOptions {
  // bf16 scratch for the matmul inputs: with it, the model multiplies in bf16 wherever
  // ParamAccess::ParamsBf16 has the weights.
  bool bf16_matmuls = false;
  // Activation checkpointing per block (FSDP's checkpoint wrapper on each decoder layer,
  // DeepSpeed's activation_checkpointing): forward keeps only each block's output (the next
  // block's input); backward recomputes a block's forward from its input just before its
  // backward. The working set of one block, and the backward's scratch, then share the logits'
  // memory, which is idle while blocks compute. Same kernels on the same inputs: gradients and
  // losses are bit-identical to a run without it.
  bool checkpoint_blocks = false;
};

}  // namespace accel::model
