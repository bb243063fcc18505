// Package trainer holds what training shares across models, with gotch
// (libtorch): the GRPO objective with DAPO's asymmetric clip, ScaleCUA's
// ratio cap and a k3 KL penalty to a frozen reference, as functions on
// tensors (SurrogateLoss, CrossEntropyLoss) with pure-Go references, the
// step options and metrics, Adam with reproducible global-norm clipping
// (Optimizer), and device selection. The model and its SFT and GRPO steps
// are package causal's (trainer/causal); the encoder-decoder policy this
// package once trained directly was removed after commit 7878f89.
//
// Objective (ScaleCUA appendix D, eq. 3; EvoCUA-1.5 section 3), per trainable
// token with r = exp(logp - old_logp):
//
//	-min(min(r, 3.0)·A, clip(r, 0.8, 1.28)·A) + 1e-4·(exp(ref-logp) - (ref-logp) - 1)
//
// averaged over the masked tokens of the batch (DAPO's token-level mean), or
// per item and summed over the items (LossConfig.Agg, EvoCUA-1.5 eq. 13 for
// --advantage stepo, eq. 7 for naive: the two differ only in the advantage
// a step item carries, A_i/|T_i| or A_i). Advantages come
// from the segments rows (pipeline/advantage).
//
// Reproducibility: initial weights are drawn in Go from the model seed,
// sampling draws in Go from the per-call seed, SFT shuffles batches from its
// seed, and nothing uses libtorch's random generator (no dropout), so on the
// CPU the same inputs, seeds and thread count (SetThreads; use 1) give
// byte-identical checkpoints. The BLAS library is part of the environment:
// the same run with another BLAS gives slightly different bytes.
//
// Threads: every exported function pins its goroutine to the OS thread while
// it calls libtorch, whose error state and grad mode are thread-local. A
// model or Optimizer is not safe for concurrent use.
package trainer
