// Package agent serves a trained causal checkpoint as a rollout policy
// (Causal): each turn it builds the context the segment stage will cut
// from the recorded steps, so training sees exactly what the policy saw.
// The encoder-decoder's checkpoint agent and step-item builder were removed
// after commit 7878f89: one item format, the segments row, feeds SFT and RL.
package agent

import (
	"encoding/binary"
	"hash/fnv"
)

// MinTasks is how many demonstrated tasks a token must occur in (in the
// instruction or on a screen) to get its own id in a fresh model. Rarer
// tokens, such as the file names and values that distinguish one task
// instance from another, read as <unk>: training then sees <unk> where
// held-out tasks show words it never learned, instead of untrained
// embeddings.
const MinTasks = 3

// Advantage modes of the train stage.
const (
	AdvGRPO  = "grpo"  // every item of a trajectory carries its group advantage
	AdvSTEPO = "stepo" // A_i / |T_i| per step (EvoCUA-1.5 STEPO)
	AdvNaive = "naive" // A_i per step, summed over steps (EvoCUA-1.5 eq. 7): the length-biased reuse STEPO corrects
)

// turnSeed is the sampling seed of one turn of an episode.
func turnSeed(seed int64, turn int) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(turn))
	h.Write(b[:])
	return h.Sum64()
}
