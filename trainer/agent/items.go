package agent

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer"
	"github.com/cualake/cualake/trainer/featurize"
	"github.com/cualake/cualake/trainer/policy"
)

// Episode is a recorded trajectory with its steps in order and its task.
type Episode struct {
	Task       schemas.Task
	Trajectory schemas.Trajectory
	Steps      []schemas.Step
}

// Trees maps accessibility-tree blob hashes to their bytes.
type Trees map[string][]byte

// pointerTokens are the policy's pointer and action-language words; they are
// in every vocabulary so any screen and instruction can be addressed.
func pointerTokens() []string {
	out := []string{"task", "history", "screen", "|", "=", "nl", "q", "trim", "lit", "again",
		"checked", "selected", "active", "focused", "up", "down", "left", "right", "last", "body"}
	for i := 1; i <= featurize.MaxQuotes; i++ {
		out = append(out, "q"+strconv.Itoa(i))
	}
	for i := 0; i <= featurize.MaxStep; i++ {
		out = append(out, "s"+strconv.Itoa(i))
	}
	for i := 0; i < featurize.MaxElements; i++ {
		out = append(out, "e"+strconv.Itoa(i))
	}
	for i := 0; i < 160; i++ {
		out = append(out, "w"+strconv.Itoa(i))
	}
	return out
}

// MinTasks is how many demonstrated tasks a word must occur in (in the
// instruction or on a screen) to get its own token. Rarer words, such as the
// file names and values that distinguish one task instance from another,
// read as <unk>: training then sees <unk> where held-out tasks show words it
// never learned, instead of untrained embeddings.
const MinTasks = 3

// BuildVocab builds the policy vocabulary from the demonstrations: their
// tasks' instructions and screens, words kept when they occur in at least
// MinTasks tasks, plus the pointer words. tasks is unused beyond the demos'
// own and kept for callers that pass the pool.
func BuildVocab(tasks []schemas.Task, demos []Episode, trees Trees) (*policy.Vocab, error) {
	_ = tasks
	docs := map[string]*strings.Builder{}
	var ids []string
	for _, ep := range demos {
		b, ok := docs[ep.Task.TaskID]
		if !ok {
			b = &strings.Builder{}
			docs[ep.Task.TaskID] = b
			ids = append(ids, ep.Task.TaskID)
			b.WriteString(featurize.Context(ep.Task.Instruction, nil, nil))
		}
		for _, st := range ep.Steps {
			if elems, err := featurize.Elements(trees[st.A11y]); err == nil {
				b.WriteString(" ")
				b.WriteString(featurize.Context("", elems, nil))
			}
		}
	}
	sort.Strings(ids)
	corpus := make([]string, 0, len(ids))
	for _, id := range ids {
		corpus = append(corpus, docs[id].String())
	}
	return policy.NewVocab(corpus, policy.VocabOptions{Lowercase: true, MinCount: MinTasks, PerDocument: true, Always: pointerTokens()})
}

// DemoItems turns successful demonstrations into supervised items: the
// context the policy would have seen and the pointer form of the action.
func DemoItems(v *policy.Vocab, maxContext, maxAction int, demos []Episode, trees Trees) ([]trainer.Item, error) {
	var out []trainer.Item
	for _, ep := range demos {
		var hist []string
		for _, st := range ep.Steps {
			tree, ok := trees[st.A11y]
			if !ok {
				return nil, fmt.Errorf("trajectory %s step %d: accessibility tree %s missing", ep.Trajectory.TrajectoryID, st.Step, st.A11y)
			}
			ctx, elems, err := BuildContext(v, maxContext, ep.Task.Instruction, tree, hist)
			if err != nil {
				return nil, fmt.Errorf("trajectory %s step %d: %w", ep.Trajectory.TrajectoryID, st.Step, err)
			}
			text, _ := featurize.Encode(st.ActionOf(), elems, ep.Task.Instruction)
			act := append(v.Encode(text), policy.EOSID)
			if len(act) <= maxAction {
				out = append(out, trainer.Item{Context: ctx, Action: act})
			}
			hist = append(hist, text)
		}
	}
	return out, nil
}

// Advantage modes for RL items.
const (
	AdvGRPO  = "grpo"  // every step of a trajectory carries its group advantage
	AdvSTEPO = "stepo" // A_i / |T_i| per step (EvoCUA-1.5 STEPO)
	AdvNaive = "naive" // same as grpo for step items: the length-biased reuse STEPO corrects
)

// RLItems turns the policy's own recorded episodes into GRPO items: the
// rebuilt context, the recorded response ids as the action and the recorded
// log-probabilities as old log-probabilities. advantages maps trajectory id
// to its group advantage.
func RLItems(v *policy.Vocab, maxContext int, eps []Episode, trees Trees, advantages map[string]float64, mode string) ([]trainer.Item, int, error) {
	var out []trainer.Item
	missing := 0
	for _, ep := range eps {
		a, ok := advantages[ep.Trajectory.TrajectoryID]
		if !ok || a == 0 || len(ep.Steps) == 0 {
			continue // zero advantage: no gradient
		}
		if mode == AdvSTEPO {
			a /= float64(len(ep.Steps))
		}
		var hist []string
		for _, st := range ep.Steps {
			tree, ok := trees[st.A11y]
			if !ok {
				return nil, 0, fmt.Errorf("trajectory %s step %d: accessibility tree %s missing", ep.Trajectory.TrajectoryID, st.Step, st.A11y)
			}
			ctx, _, err := BuildContext(v, maxContext, ep.Task.Instruction, tree, hist)
			if err != nil {
				return nil, 0, fmt.Errorf("trajectory %s step %d: %w", ep.Trajectory.TrajectoryID, st.Step, err)
			}
			hist = append(hist, st.RawAction)
			if len(st.ResponseIDs) == 0 {
				missing++
				continue
			}
			it := trainer.Item{Context: ctx, Action: st.ResponseIDs, Advantage: float32(a)}
			if len(st.Logprobs) == len(st.ResponseIDs) {
				it.OldLogp = st.Logprobs
			}
			out = append(out, it)
		}
	}
	return out, missing, nil
}

// SortEpisodes orders episodes by trajectory id, for reproducible batches.
func SortEpisodes(eps []Episode) {
	sort.Slice(eps, func(a, b int) bool { return eps[a].Trajectory.TrajectoryID < eps[b].Trajectory.TrajectoryID })
}
