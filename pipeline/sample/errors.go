package sample

import "errors"

// Errors callers can test for with errors.Is; every returned error wraps one
// of them with the task, trajectory or parameter it is about.
var (
	// ErrBadInput marks malformed rows: a reward outside [-1, 1] or NaN, a
	// rate outside [0, 1], a duplicate task, a rollout of an unknown task.
	ErrBadInput = errors.New("bad sampler input")
	// ErrBadParams marks a parameter outside its domain (alpha outside
	// (0, 1], sigma <= 0, gamma outside [0, 1], ...).
	ErrBadParams = errors.New("bad sampler parameters")
	// ErrBatchSize marks a batch size below 1.
	ErrBatchSize = errors.New("bad batch size")
	// ErrEmptyPool marks a pool with no eligible task after filtering.
	ErrEmptyPool = errors.New("empty task pool")
	// ErrPoolTooSmall marks a batch larger than the eligible pool.
	ErrPoolTooSmall = errors.New("batch larger than the task pool")
	// ErrTooManyGenBatches marks DAPO dynamic sampling that reached its
	// generation-batch bound without collecting enough informative groups.
	ErrTooManyGenBatches = errors.New("dynamic sampling reached max generation batches")
)
