package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/schemas"
	causalpkg "github.com/cualake/cualake/trainer/causal"
	"github.com/cualake/cualake/trainer/stage"
)

type trainJSON struct {
	Snapshot        string `json:"snapshot"`
	Items           int    `json:"items"`
	Tokens          int64  `json:"tokens"`
	TrainableTokens int64  `json:"trainable_tokens"`
	Mode            string `json:"mode"`
	Segments        string `json:"segments"`
	Seconds         float64
}

func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, err := run(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	if i := strings.Index(out, "{"); i > 0 {
		out = out[i:]
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

// TestCausalPolicyOnSegments runs the causal policy's data path end to end
// on a small pool: oracle demonstrations with screenshots, segment (pointer
// view), SFT on the segments rows, rollouts of the checkpoint in a window
// context small enough to prune, segment again, and GRPO on those rows. It
// checks the train stage's errors when segments are missing or cut for
// another model, what --json and the commit report, and the log-probability
// round trip: the checkpoint's log-probabilities of every trained token of
// the committed segments, recomputed by a full forward pass, equal the
// ones the rollout recorded with its KV-cache decoder, within 1e-5.
func TestCausalPolicyOnSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	must := func(args ...string) string {
		t.Helper()
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	must("simdesk", "pool")
	must("rollout", "--policy", "oracle", "--n", "1", "--split", "train", "--limit-tasks", "12", "--max-turns", "30", "--workers", "2")
	if out, err := run(t, "train", "--objective", "rft", "--steps", "2"); err == nil || !strings.Contains(err.Error(), "no checkpoint yet to continue") {
		t.Fatalf("rft without a checkpoint: %v %s", err, out)
	}
	if out, err := run(t, "train", "--objective", "sft", "--policy", "causal", "--steps", "2"); err == nil ||
		!strings.Contains(out+err.Error(), "run `cualake segment --view pointer --image-tokens 8") {
		t.Fatalf("sft without segments: %v %s", err, out)
	}
	must("segment", "--view", "pointer", "--image-tokens", "4")
	if out, err := run(t, "train", "--objective", "sft", "--policy", "causal", "--steps", "2"); err == nil ||
		!strings.Contains(err.Error(), "segment \"") || !strings.Contains(err.Error(), "the causal policy reads 8") {
		t.Fatalf("sft on segments with 4 image tokens: %v %s", err, out)
	}
	var seg struct {
		Snapshot string `json:"snapshot"`
		Summary  struct {
			Items     int64 `json:"items"`
			Tokens    int64 `json:"tokens"`
			Trainable int64 `json:"trainable_tokens"`
		} `json:"summary"`
	}
	runJSON(t, &seg, "segment", "--view", "pointer", "--image-tokens", "8")
	var sft trainJSON
	runJSON(t, &sft, "train", "--objective", "sft", "--policy", "causal", "--steps", "6", "--batch", "4", "--seed", "1")
	if sft.Items != int(seg.Summary.Items) || sft.Tokens != seg.Summary.Tokens || sft.TrainableTokens != seg.Summary.Trainable ||
		sft.Mode != "window" || sft.Segments != seg.Snapshot {
		t.Fatalf("sft reports %+v; the segments were %+v in %s", sft, seg.Summary, seg.Snapshot)
	}
	if out, err := run(t, "train", "--objective", "rft", "--steps", "2"); err == nil || !strings.Contains(err.Error(), "holds no successful training rollouts of the policy") {
		t.Fatalf("rft before any rollout of the policy: %v %s", err, out)
	}
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := l.Snapshot(ctx, sft.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	var params struct {
		Segments string `json:"segments"`
	}
	if err := json.Unmarshal(tm.Params, &params); err != nil || params.Segments != seg.Snapshot {
		t.Fatalf("the train commit's params do not name the segments snapshot %s: %s (%v)", seg.Snapshot, tm.Params, err)
	}

	// rollouts of the checkpoint, in a window context of 2 screenshots
	// (a checkpoint of 6 steps writes many responses that are no action:
	// it redraws them, and the log-probability round trip below covers the
	// redrawn responses too)
	var roll struct {
		Summary struct {
			Steps    int `json:"steps"`
			Unparsed int `json:"unparsed_actions"`
			Redrawn  int `json:"redrawn_turns"`
		} `json:"summary"`
	}
	runJSON(t, &roll, "rollout", "--policy", "checkpoint", "--n", "4", "--split", "train", "--limit-tasks", "3", "--max-turns", "5",
		"--k", "1", "--delta", "1", "--iteration", "1", "--workers", "2")
	// every unparsed step is a redrawn turn whose draws all failed: more
	// redrawn turns than that means some were redrawn into actions
	if r := roll.Summary; r.Redrawn <= r.Unparsed || r.Unparsed >= r.Steps {
		t.Fatalf("rollout of a 6-step checkpoint: %+v; want turns redrawn into actions, and not every step unparsed", r)
	}
	if out, err := run(t, "train", "--objective", "grpo", "--steps", "1"); err == nil || !strings.Contains(err.Error(), "holds no segments for iteration 1") {
		t.Fatalf("grpo with stale segments: %v %s", err, out)
	}
	runJSON(t, &seg, "segment", "--view", "pointer", "--image-tokens", "8", "--mode", "window", "--k", "1", "--delta", "1")

	m, _, model := latestModel(t, l)
	rows, err := lake.ReadTable(ctx, l, m, schemas.Segments)
	if err != nil {
		t.Fatal(err)
	}
	var mine []schemas.Segment
	perTraj := map[string]int{}
	for _, r := range rows {
		if strings.Contains(r.TrajectoryID, "@it001#") {
			mine = append(mine, r)
			perTraj[r.TrajectoryID]++
		}
	}
	pruned := 0
	for _, n := range perTraj {
		if n > 1 {
			pruned++
		}
	}
	if len(perTraj) != 12 || pruned == 0 {
		t.Fatalf("%d rollouts segmented, %d of them pruned", len(perTraj), pruned)
	}
	items, err := stage.SegmentItems(ctx, l, m, model.Config(), mine)
	if err != nil {
		t.Fatal(err)
	}
	worst, n := 0.0, 0
	for i := range items {
		it := &items[i]
		if !it.HasLogp {
			t.Fatalf("segment %s has no recorded log-probabilities", it.ID)
		}
		at := it.Trainable()
		lp, err := model.LogProbs(it.Input(), at, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		for j, k := range at {
			worst = math.Max(worst, math.Abs(float64(lp[j]-it.Logp[k])))
			n++
		}
	}
	t.Logf("%d trained tokens in %d segments: recomputed log-probabilities within %.2g of the recorded ones", n, len(items), worst)
	if worst > 1e-5 || n < 20 {
		t.Fatalf("log-probability round trip: %d tokens, worst difference %g", n, worst)
	}

	// A policy this young rarely succeeds, so every group would have equal
	// rewards and nothing to learn: the fixture scores the first two
	// rollouts of each group successful, and the segments carry the
	// advantages that follow.
	txn, err := l.Begin(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	trajs, err := lake.ReadTable(ctx, l, m, schemas.Trajectories)
	if err != nil {
		t.Fatal(err)
	}
	for i := range trajs {
		if id := trajs[i].TrajectoryID; strings.HasSuffix(id, "@it001#00") || strings.HasSuffix(id, "@it001#01") {
			trajs[i].Reward, trajs[i].Outcome = 1, schemas.OutcomeSuccess
		}
	}
	if err := lake.ReplaceTable(ctx, txn, schemas.Trajectories, trajs); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx, lake.CommitInfo{Stage: "fixture"}); err != nil {
		t.Fatal(err)
	}
	runJSON(t, &seg, "segment", "--view", "pointer", "--image-tokens", "8", "--mode", "window", "--k", "1", "--delta", "1")
	var grpo trainJSON
	runJSON(t, &grpo, "train", "--objective", "grpo", "--steps", "2", "--seed", "2")
	if grpo.Items == 0 || grpo.Mode != "window" || grpo.Segments != seg.Snapshot || grpo.TrainableTokens == 0 {
		t.Fatalf("grpo reports %+v (segments %s)", grpo, seg.Snapshot)
	}
	checkRFT(t, l)
}

// checkRFT runs rejection-sampling fine-tuning on TestCausalPolicyOnSegments'
// lake: 12 demonstrations, then 3 groups of 4 rollouts of which the
// first two are successes. It trains on the demonstrations' segments and
// the successes', at most --per-task of them per task, continuing the
// newest (GRPO) checkpoint.
func checkRFT(t *testing.T, l *lake.Lake) {
	t.Helper()
	ctx := context.Background()
	m, prev := latestCheckpoint(t, l)
	rows, err := lake.ReadTable(ctx, l, m, schemas.Segments)
	if err != nil {
		t.Fatal(err)
	}
	items, demoItems := map[string]int{}, 0
	for _, r := range rows {
		items[r.TrajectoryID]++
		if !strings.Contains(r.TrajectoryID, "@it001") {
			demoItems++ // the oracle's, cut again at K = Delta = 1
		}
	}
	successItems := 0
	for _, suffix := range []string{"#00", "#01"} {
		for id, n := range items {
			if strings.Contains(id, "@it001") && strings.HasSuffix(id, suffix) {
				successItems += n
			}
		}
	}
	var all trainJSON
	runJSON(t, &all, "train", "--objective", "rft", "--steps", "2", "--batch", "4", "--seed", "3")
	if all.Items != demoItems+successItems {
		t.Fatalf("rft trained on %d items, want the demonstrations' %d and the successes' %d", all.Items, demoItems, successItems)
	}
	var capped imitateJSON
	runJSON(t, &capped, "train", "--objective", "rft", "--steps", "2", "--batch", "4", "--seed", "3", "--per-task", "1")
	if capped.Items <= demoItems || capped.Items >= all.Items {
		t.Fatalf("rft --per-task 1 trained on %d items; want more than the demonstrations' %d and fewer than all successes' %d",
			capped.Items, demoItems, all.Items)
	}
	m, err = l.At(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	cks, err := lake.ReadTable(ctx, l, m, schemas.Checkpoints)
	if err != nil {
		t.Fatal(err)
	}
	first, last := cks[len(cks)-2], cks[len(cks)-1]
	if first.Objective != "rft" || first.ParentVersion != prev.Version || first.Iteration != 1 ||
		last.Objective != "rft" || last.ParentVersion != first.Version || !strings.Contains(last.Params, `"per_task":1`) {
		t.Fatalf("rft checkpoints %+v and %+v after v%d", first, last, prev.Version)
	}
	before, err := stage.LoadCausal(ctx, l, m, prev, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	after, err := stage.LoadCausal(ctx, l, m, &last, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if before.Config() != after.Config() || before.IDs().Size() != after.IDs().Size() || first.Blob == prev.Blob || last.Blob == first.Blob {
		t.Fatalf("rft did not continue the checkpoint: config %+v -> %+v, vocabulary %d -> %d", before.Config(), after.Config(),
			before.IDs().Size(), after.IDs().Size())
	}
	// The two controls imitate one side each, and a round of either keeps
	// the round's iteration.
	var demosOnly, successesOnly imitateJSON
	runJSON(t, &demosOnly, "train", "--objective", "rft", "--steps", "2", "--batch", "4", "--seed", "3", "--imitate", "demos")
	runJSON(t, &successesOnly, "train", "--objective", "rft", "--steps", "2", "--batch", "4", "--seed", "3", "--imitate", "successes")
	if demosOnly.Items != demoItems || demosOnly.Successes != 0 || demosOnly.Demonstrations == 0 ||
		successesOnly.Items != successItems || successesOnly.Demonstrations != 0 || successesOnly.Successes == 0 {
		t.Fatalf("--imitate demos: %+v (want %d items); --imitate successes: %+v (want %d items)", demosOnly, demoItems, successesOnly, successItems)
	}
	if m, err = l.At(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if cks, err = lake.ReadTable(ctx, l, m, schemas.Checkpoints); err != nil {
		t.Fatal(err)
	}
	for _, ck := range cks[len(cks)-2:] {
		if ck.Iteration != 1 || ck.Objective != "rft" || !strings.Contains(ck.Params, `"imitate":"`) {
			t.Fatalf("control checkpoint %+v", ck)
		}
	}
	for _, bad := range [][]string{
		{"train", "--objective", "rft", "--imitate", "all"},
		{"train", "--objective", "sft", "--imitate", "demos"},
	} {
		if out, err := run(t, bad...); err == nil || !strings.Contains(out+err.Error(), "--imitate") {
			t.Fatalf("%v: %v\n%s", bad, err, out)
		}
	}
	// --pick shortest keeps one success a task as --per-task 1 does, and
	// says so in the checkpoint's params (trainer/stage's TestImitatedPicks
	// checks which one).
	var shortest imitateJSON
	runJSON(t, &shortest, "train", "--objective", "rft", "--steps", "2", "--batch", "4", "--seed", "3", "--per-task", "1", "--pick", "shortest")
	if shortest.Successes != capped.Successes || shortest.Successes == 0 {
		t.Fatalf("--pick shortest imitated %d successes, want --per-task 1's %d", shortest.Successes, capped.Successes)
	}
	if m, err = l.At(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if cks, err = lake.ReadTable(ctx, l, m, schemas.Checkpoints); err != nil {
		t.Fatal(err)
	}
	if ck := cks[len(cks)-1]; !strings.Contains(ck.Params, `"pick":"shortest"`) {
		t.Fatalf("--pick shortest checkpoint params %s", ck.Params)
	}
	for _, bad := range [][]string{
		{"train", "--objective", "rft", "--pick", "longest"},
		{"train", "--objective", "sft", "--pick", "shortest"},
	} {
		if out, err := run(t, bad...); err == nil || !strings.Contains(out+err.Error(), "--pick") {
			t.Fatalf("%v: %v\n%s", bad, err, out)
		}
	}
	checkRestart(t, l)
	checkBalance(t, l)
	checkAverage(t, l)
}

// checkAverage: --objective average commits the next version with the mean
// of the named checkpoints' weights (the bytes causal.Average gives for
// them), standing for the newest checkpoint's iteration; a missing or
// single version and optimiser flags are errors.
func checkAverage(t *testing.T, l *lake.Lake) {
	t.Helper()
	m, newest := latestCheckpoint(t, l)
	older, err := stage.LatestCheckpoint(context.Background(), l, m, newest.Version-1)
	if err != nil {
		t.Fatal(err)
	}
	versions := fmt.Sprintf("%d,%d", older.Version, newest.Version)
	var out struct {
		Version   int32   `json:"version"`
		Iteration int32   `json:"iteration"`
		Versions  []int32 `json:"versions"`
	}
	runJSON(t, &out, "train", "--objective", "average", "--versions", versions)
	m2, soup := latestCheckpoint(t, l)
	if out.Version != newest.Version+1 || soup.Version != out.Version || soup.ParentVersion != newest.Version ||
		soup.Iteration != newest.Iteration || out.Iteration != newest.Iteration || soup.Objective != "average" ||
		!strings.Contains(soup.Params, `"versions":[`+versions+`]`) || strings.Contains(soup.Params, `"steps"`) {
		t.Fatalf("average of %s: %+v, checkpoint %+v after %+v", versions, out, soup, newest)
	}
	var models []*causalpkg.Model
	for _, ck := range []*schemas.Checkpoint{older, newest} {
		mo, err := stage.LoadCausal(context.Background(), l, m2, ck, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		defer mo.Close()
		models = append(models, mo)
	}
	want, err := causalpkg.Average(models)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	b, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if schemas.HashBytes(b) != soup.Blob || soup.Blob == newest.Blob || soup.Blob == older.Blob {
		t.Fatalf("average's blob %s, want the mean's %s", soup.Blob, schemas.HashBytes(b))
	}
	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"--objective", "average", "--versions", "1"}, "2 or more"},
		{[]string{"--objective", "average"}, "2 or more"},
		{[]string{"--objective", "average", "--versions", "1,99"}, "checkpoint version 99: does not exist"},
		{[]string{"--objective", "average", "--versions", "1,1"}, "repeats"},
		{[]string{"--objective", "average", "--versions", "1,2", "--steps", "3"}, "--steps does not apply"},
		{[]string{"--objective", "rft", "--versions", "1,2"}, "--versions applies"},
	} {
		if out, err := run(t, append([]string{"train"}, bad.args...)...); err == nil || !strings.Contains(out+err.Error(), bad.says) {
			t.Fatalf("%v: %v\n%s; want an error saying %q", bad.args, err, out, bad.says)
		}
	}
}

// checkBalance: rft --balance actions draws its items by action sequence
// (trainer/stage's TestActionWeights checks the weights), reports how many
// sequences it balanced, records the option in the checkpoint's params, and
// trains other weights than the same round drawn item by item.
func checkBalance(t *testing.T, l *lake.Lake) {
	t.Helper()
	args := []string{"train", "--objective", "rft", "--steps", "2", "--batch", "4", "--seed", "6"}
	var plain, balanced struct {
		imitateJSON
		ActionGroups int `json:"action_groups"`
	}
	runJSON(t, &plain, args...)
	_, a := latestCheckpoint(t, l)
	runJSON(t, &balanced, append(args, "--balance", "actions")...)
	_, b := latestCheckpoint(t, l)
	if plain.ActionGroups != 0 || balanced.ActionGroups < 2 || balanced.ActionGroups > balanced.Demonstrations+balanced.Successes ||
		balanced.Items != plain.Items {
		t.Fatalf("action groups: plain %+v, balanced %+v", plain, balanced)
	}
	if a.Blob == b.Blob || strings.Contains(a.Params, "balance") || !strings.Contains(b.Params, `"balance":"actions"`) {
		t.Fatalf("--balance actions: checkpoint %+v against the plain round's %+v", b, a)
	}
	for _, bad := range [][]string{
		{"train", "--objective", "rft", "--balance", "templates"},
		{"train", "--objective", "grpo", "--balance", "actions"},
	} {
		if out, err := run(t, bad...); err == nil || !strings.Contains(out+err.Error(), "--balance") {
			t.Fatalf("%v: %v\n%s", bad, err, out)
		}
	}
}

// checkRestart: rft --restart trains fresh weights of the newest
// checkpoint's size on what it imitates, so two restarts with one seed
// give the same weights though the second starts after the first, while a
// continued round with that seed gives others.
func checkRestart(t *testing.T, l *lake.Lake) {
	t.Helper()
	args := []string{"train", "--objective", "rft", "--steps", "2", "--batch", "4", "--seed", "5"}
	blob := func(extra ...string) schemas.Checkpoint {
		t.Helper()
		var out imitateJSON
		runJSON(t, &out, append(append([]string{}, args...), extra...)...)
		_, ck := latestCheckpoint(t, l)
		return *ck
	}
	_, prev := latestCheckpoint(t, l)
	a := blob("--restart")
	b := blob("--restart")
	c := blob()
	if a.Blob != b.Blob || a.ParentVersion != prev.Version || b.ParentVersion != a.Version || !strings.Contains(a.Params, `"restart":true`) {
		t.Fatalf("two restarts: %+v and %+v after v%d; want the same weights", a, b, prev.Version)
	}
	if c.Blob == b.Blob || strings.Contains(c.Params, "restart") {
		t.Fatalf("a continued round gave the restart's weights or params: %+v", c)
	}
	m, _ := latestCheckpoint(t, l)
	before, err := stage.LoadCausal(context.Background(), l, m, prev, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	after, err := stage.LoadCausal(context.Background(), l, m, &a, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if before.Config().Dim != after.Config().Dim || before.Config().Layers != after.Config().Layers {
		t.Fatalf("restart changed the model's size: %+v -> %+v", before.Config(), after.Config())
	}
	for _, bad := range [][]string{
		{"train", "--objective", "sft", "--restart"},
		{"train", "--objective", "grpo", "--restart"},
	} {
		if out, err := run(t, bad...); err == nil || !strings.Contains(out+err.Error(), "--restart") {
			t.Fatalf("%v: %v\n%s", bad, err, out)
		}
	}
}

// latestCheckpoint is l's main and its newest checkpoint.
func latestCheckpoint(t *testing.T, l *lake.Lake) (*lake.Manifest, *schemas.Checkpoint) {
	t.Helper()
	ctx := context.Background()
	m, err := l.At(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	ck, err := stage.LatestCheckpoint(ctx, l, m, -1)
	if err != nil {
		t.Fatal(err)
	}
	return m, ck
}

// latestModel loads the newest checkpoint on l's main, closed when the
// test ends.
func latestModel(t *testing.T, l *lake.Lake) (*lake.Manifest, *schemas.Checkpoint, *causalpkg.Model) {
	t.Helper()
	m, ck := latestCheckpoint(t, l)
	model, err := stage.LoadCausal(context.Background(), l, m, ck, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Close)
	return m, ck, model
}

// imitateJSON is what train --json says a supervised run imitated.
type imitateJSON struct {
	Items          int `json:"items"`
	Demonstrations int `json:"imitated_demonstrations"`
	Successes      int `json:"imitated_successes"`
}

// TestTrainDefaultsAreTheDemos: `train --objective sft` without flags is
// the demo's warm start (steps, batch and learning rate of the loop's
// default config), and the demo's GRPO settings are grpo's defaults.
func TestTrainDefaultsAreTheDemos(t *testing.T) {
	demo := loop.Default()
	sft := stage.DefaultParams()
	sft.Objective = "sft"
	sft = sft.Resolve()
	if sft.Steps != demo.Warmstart.Steps || sft.LR != demo.Warmstart.LR || sft.Policy != demo.Policy || sft.Batch != demo.Warmstart.Batch {
		t.Fatalf("sft defaults %+v, the demo warm-starts the %s policy with %+v", sft, demo.Policy, demo.Warmstart)
	}
	grpo := stage.DefaultParams()
	grpo.Objective = "grpo"
	grpo = grpo.Resolve()
	if grpo.Steps != demo.Train.Steps || grpo.LR != demo.Train.LR {
		t.Fatalf("grpo defaults %+v, the demo trains with %+v", grpo, demo.Train)
	}
	if loop.CausalImageTokens != causalpkg.DefaultConfig(10).ImageTokens() {
		t.Fatalf("the loop cuts segments with %d image tokens, the causal model reads %d", loop.CausalImageTokens, causalpkg.DefaultConfig(10).ImageTokens())
	}
	if loop.CausalMaxContext != causalpkg.DefaultConfig(10).MaxContext {
		t.Fatalf("the loop bounds segment windows by a %d-token context, the causal model's is %d", loop.CausalMaxContext, causalpkg.DefaultConfig(10).MaxContext)
	}
}

// TestSFTOnOracleRolloutsOfAnySource: oracle rollouts committed without
// --source warmstart are demonstrations; evaluation episodes never are.
// With the default (causal) policy, `train --objective sft` on rollouts
// that have no segments yet names the command that makes them, and trains
// once they exist.
func TestSFTOnOracleRolloutsOfAnySource(t *testing.T) {
	t.Setenv("CUALAKE_LAKE", filepath.Join(t.TempDir(), "lake"))
	if out, err := run(t, "simdesk", "pool"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := run(t, "rollout", "--policy", "oracle", "--source", "eval", "--n", "1", "--limit-tasks", "3"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := run(t, "train", "--objective", "sft", "--steps", "1"); err == nil || !strings.Contains(err.Error(), "no successful demonstrations") {
		t.Fatalf("sft on evaluation episodes: %v %s", err, out)
	}
	if out, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "3"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := run(t, "train", "--objective", "sft", "--steps", "1"); err == nil || !strings.Contains(err.Error(), "cualake segment --view pointer --image-tokens 8") {
		t.Fatalf("sft before segment must name the segment command: %v %s", err, out)
	}
	if out, err := run(t, "segment", "--view", "pointer", "--image-tokens", "8", "--mode", "window", "--k", "5", "--delta", "5"); err != nil {
		t.Fatal(err, out)
	}
	var res struct {
		Items  int    `json:"items"`
		Policy string `json:"policy"`
	}
	runJSON(t, &res, "train", "--objective", "sft", "--steps", "2")
	if res.Items == 0 || res.Policy != stage.PolicyCausal {
		t.Fatalf("sft on the oracle's segments: %+v", res)
	}
	// --dim and --layers size the fresh model; the checkpoint keeps them
	// and a continued model cannot change them.
	runJSON(t, &res, "train", "--objective", "sft", "--steps", "1", "--dim", "32", "--layers", "3")
	l, err := lake.OpenDir(context.Background(), os.Getenv("CUALAKE_LAKE"), false)
	if err != nil {
		t.Fatal(err)
	}
	_, ck, model := latestModel(t, l)
	if cfg := model.Config(); cfg.Dim != 32 || cfg.FFNDim != 128 || cfg.Layers != 3 || !strings.Contains(ck.Params, `"dim":32,"layers":3`) {
		t.Fatalf("sft --dim 32 --layers 3: config %+v, params %s", model.Config(), ck.Params)
	}
	// sft's default dropout is 0.1, recorded in the params; --dropout 0
	// trains without (left out of the params).
	if !strings.Contains(ck.Params, `"dropout":0.1`) {
		t.Fatalf("sft's default dropout is not recorded: %s", ck.Params)
	}
	runJSON(t, &res, "train", "--objective", "sft", "--steps", "2", "--dropout", "0")
	if _, ck, _ = latestModel(t, l); strings.Contains(ck.Params, "dropout") {
		t.Fatalf("sft --dropout 0: params %s", ck.Params)
	}
	// Refused, naming the flag: a width that is no multiple of the heads,
	// too many layers, resizing a continued model, a dropout outside
	// [0, 1), and dropout in GRPO.
	for _, bad := range []struct {
		args []string
		flag string
	}{
		{[]string{"--objective", "sft", "--dim", "30"}, "--dim"},
		{[]string{"--objective", "sft", "--layers", "33"}, "--dim"},
		{[]string{"--objective", "rft", "--dim", "32"}, "--dim"},
		{[]string{"--objective", "sft", "--dropout", "1"}, "--dropout"},
		{[]string{"--objective", "sft", "--dropout", "-0.5"}, "--dropout"},
		{[]string{"--objective", "grpo", "--dropout", "0.1"}, "--dropout"},
	} {
		if out, err := run(t, append([]string{"train"}, bad.args...)...); err == nil || !strings.Contains(out+err.Error(), bad.flag) {
			t.Fatalf("%v: %v\n%s", bad.args, err, out)
		}
	}
}
