// Package trainer trains the policy of package policy with gotch (libtorch):
// supervised warm-start (SFT, SFTStep) and GRPO with DAPO's asymmetric clip,
// ScaleCUA's ratio cap and a k3 KL penalty to a frozen reference (GRPOStep),
// plus the losses as functions on tensors (CrossEntropyLoss, SurrogateLoss)
// with pure-Go references, group and STEPO advantages, Adam with
// reproducible global-norm clipping, and device selection.
//
// Objective (ScaleCUA appendix D, eq. 3; EvoCUA-1.5 section 3), per trainable
// token with r = exp(logp - old_logp):
//
//	-min(min(r, 3.0)·A, clip(r, 0.8, 1.28)·A) + 1e-4·(exp(ref-logp) - (ref-logp) - 1)
//
// averaged over the masked tokens of the batch (DAPO's token-level mean), or
// per item then over items (LossConfig.Agg, STEPO's eq. 13). Advantages come
// from GroupAdvantages, or STEPOAdvantages when trajectories are split into
// step items.
//
// Reproducibility: initial weights are drawn in Go from the policy seed,
// sampling draws in Go from the per-call seed, SFT shuffles batches from its
// seed, and nothing uses libtorch's random generator (no dropout), so on the
// CPU the same inputs, seeds and thread count (SetThreads; use 1) give
// byte-identical checkpoints. The BLAS library is part of the environment:
// the same run with another BLAS gives slightly different bytes.
//
// Threads: every exported function pins its goroutine to the OS thread while
// it calls libtorch, whose error state and grad mode are thread-local. A
// Policy or Optimizer is not safe for concurrent use.
package trainer
