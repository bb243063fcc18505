// Package sample holds the math of the sample stage: per-task pass-rate
// tracking (ScaleCUA eq. 1, EvoCUA-1.5 eq. 16) and the task samplers that
// choose the next iteration's batch: Frontier Sampling (ScaleCUA section 3.3,
// appendix D), DTAC (EvoCUA-1.5 section 4.2: VAS, AdaPR, ICS) and the
// baselines uniform, curriculum and DAPO dynamic sampling.
//
// Everything here is pure: functions take table rows and return table rows,
// never touch files or the clock, and draw every random number from a
// math/rand/v2 PCG source seeded from (seed, iteration, round, sampler name),
// so the same inputs give the same batch. docs/samplers.md states the
// formulas, defaults and tie-breaking rules.
package sample
