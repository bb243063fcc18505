// Package slurm runs cualake stages as Slurm batch jobs: a shardable stage
// as a job array (one task per shard, each writing a fragment) followed by
// a merge job that depends on it (--dependency=afterok), and any other
// stage as one job. The sbatch scripts are rendered from the templates in
// examples/slurm (embedded; a folder of edited copies can replace them).
package slurm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	slurmexamples "github.com/cualake/cualake/examples/slurm"
	"github.com/cualake/cualake/pipeline/shard"
)

// Job is one stage run on the cluster.
type Job struct {
	// Command is the cualake command path and its flags, without --lake,
	// --in or --shard (e.g. ["rollout", "--policy", "oracle"]); Words says
	// how many leading elements are the command path (default 1).
	Command []string
	Words   int
	// Shards > 0 runs the stage as a job array of Shards tasks and a
	// dependent merge; 0 runs one job.
	Shards int
	// Input is the snapshot id the shards read ("" = an empty lake). The
	// caller resolves it at submission so that every shard and the merge
	// agree on it even if main moves meanwhile.
	Input string
	// Lake is the lake folder (absolute) or URL as the jobs see it.
	Lake string
	// Binary is the cualake binary as the nodes see it.
	Binary string
	// Partition and Time become #SBATCH lines (Time only for the stage's
	// own jobs; the merge is short).
	Partition, Time string
	// Extra are more sbatch options, passed on the sbatch command line of
	// every job (e.g. --account=rl, --mem=8G).
	Extra []string
	// Env are KEY=VALUE pairs exported by the scripts. sbatch already
	// passes the submitting environment (credentials included) to the jobs;
	// keep secrets out of Env, since scripts are files.
	Env []string
	// Rerun limits the array to these shard indexes (re-running failed
	// shards alone); the merge still needs all Shards fragments.
	Rerun []int
	// Clean removes the fragments after the merge.
	Clean bool
	// Dir receives the scripts and the jobs' logs; it must exist on the
	// nodes too (a shared file system) or Slurm drops the logs.
	Dir string
	// Templates is a folder of edited templates (nil: the embedded ones).
	Templates fs.FS
}

// StageName is the name the stage commits under (the command's first word).
func (j Job) StageName() string {
	if len(j.Command) == 0 {
		return ""
	}
	return j.Command[0]
}

func (j Job) words() int {
	if j.Words > 0 {
		return j.Words
	}
	return 1
}

// Scripts are the rendered sbatch scripts of a job.
type Scripts struct {
	Array string // the shard job array ("" for one job)
	Merge string // the merge ("" for one job)
	Stage string // the single job ("" for a sharded run)
}

type templateData struct {
	JobName, Stage, StageName, Path, Args string
	Shards                                int
	Array                                 string
	Lake, Binary, Input, InFlag           string
	Partition, Time, LogDir               string
	Env                                   []string
	Clean                                 bool
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Render returns the job's scripts.
func Render(j Job) (*Scripts, error) {
	if len(j.Command) == 0 {
		return nil, errors.New("slurm: no stage command")
	}
	if j.Shards > 0 {
		if err := shard.CheckShardable(j.StageName(), shard.Spec{Index: 0, Count: j.Shards}); err != nil {
			return nil, err
		}
	}
	for _, a := range j.Command {
		if a == "--lake" || strings.HasPrefix(a, "--lake=") || a == "--shard" || strings.HasPrefix(a, "--shard=") {
			return nil, fmt.Errorf("slurm: the stage's flags must not set %s (the job sets it)", a)
		}
	}
	tfs := j.Templates
	if tfs == nil {
		tfs = slurmexamples.FS
	}
	d := templateData{
		JobName:   "cualake-" + strings.Join(j.Command[:min(j.words(), len(j.Command))], "-"),
		Stage:     strings.Join(j.Command[:min(j.words(), len(j.Command))], " "),
		StageName: j.StageName(),
		Path:      shellJoin(j.Command[:min(j.words(), len(j.Command))]),
		Args:      shellJoin(j.Command[min(j.words(), len(j.Command)):]),
		Shards:    j.Shards,
		Lake:      shellQuote(j.Lake),
		Binary:    shellQuote(j.Binary),
		Input:     j.Input,
		Partition: j.Partition,
		Time:      j.Time,
		LogDir:    j.Dir,
		Clean:     j.Clean,
	}
	if d.Input == "" {
		d.Input = "empty"
	} else {
		d.InFlag = "--in " + j.Input + " "
	}
	for _, kv := range j.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !envName.MatchString(k) {
			return nil, fmt.Errorf("slurm: environment entry %q: want NAME=VALUE", kv)
		}
		d.Env = append(d.Env, k+"="+shellQuote(v))
	}
	if strings.ContainsAny(j.Dir, " \t\n%") || strings.ContainsAny(j.Partition+j.Time, " \t\n") {
		return nil, errors.New("slurm: the log folder, partition and time must not contain spaces or %")
	}
	var s Scripts
	var err error
	if j.Shards <= 0 {
		s.Stage, err = render(tfs, "stage.sbatch.tmpl", d)
		return &s, err
	}
	if len(j.Rerun) > 0 {
		var parts []string
		for _, i := range j.Rerun {
			if i < 0 || i >= j.Shards {
				return nil, fmt.Errorf("slurm: --rerun %d: shards are 0..%d", i, j.Shards-1)
			}
			parts = append(parts, strconv.Itoa(i))
		}
		d.Array = strings.Join(parts, ",")
	} else {
		d.Array = fmt.Sprintf("0-%d", j.Shards-1)
	}
	if s.Array, err = render(tfs, "shard.sbatch.tmpl", d); err != nil {
		return nil, err
	}
	if s.Merge, err = render(tfs, "merge.sbatch.tmpl", d); err != nil {
		return nil, err
	}
	return &s, nil
}

func render(tfs fs.FS, name string, d templateData) (string, error) {
	b, err := fs.ReadFile(tfs, name)
	if err != nil {
		return "", fmt.Errorf("slurm template %s: %w", name, err)
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(b))
	if err != nil {
		return "", fmt.Errorf("slurm template %s: %w", name, err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, d); err != nil {
		return "", fmt.Errorf("slurm template %s: %w", name, err)
	}
	return out.String(), nil
}

// shellQuote quotes s for bash when it needs it.
func shellQuote(s string) string {
	if s != "" && regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// Submission says what was submitted.
type Submission struct {
	Dir       string   `json:"dir"`
	Scripts   []string `json:"scripts"`
	ArrayJob  string   `json:"array_job,omitempty"`
	MergeJob  string   `json:"merge_job,omitempty"`
	Job       string   `json:"job,omitempty"`
	Commands  []string `json:"commands"`
	Shards    int      `json:"shards,omitempty"`
	Stage     string   `json:"stage"`
	Input     string   `json:"input,omitempty"`
	WaitJobID string   `json:"-"` // the job whose end means the stage ended
}

// Runner runs a command (sbatch, squeue, scontrol) and returns its stdout;
// tests and dry runs replace it.
type Runner func(ctx context.Context, name string, args ...string) (string, error)

// Exec is the Runner that runs the real commands.
func Exec(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("%s: not found: is this a Slurm login node? (%w)", name, err)
		}
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return out.String(), nil
}

// NewDir makes a fresh folder for one submission's scripts and logs under
// base (e.g. out/slurm).
func NewDir(base, stage string) (string, error) {
	b := make([]byte, 3)
	rand.Read(b) //nolint:errcheck // crypto/rand does not fail
	dir := filepath.Join(base, fmt.Sprintf("%s-%s-%s", strings.ReplaceAll(stage, " ", "-"), time.Now().Format("20060102-150405"), hex.EncodeToString(b)))
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return abs, os.MkdirAll(abs, 0o755)
}

// Submit writes the job's scripts into j.Dir and submits them with run: the
// array, then the merge depending on it; or the single job.
func Submit(ctx context.Context, j Job, run Runner) (*Submission, error) {
	s, err := Render(j)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(j.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	sub := &Submission{Dir: j.Dir, Shards: j.Shards, Stage: strings.Join(j.Command[:min(j.words(), len(j.Command))], " "), Input: j.Input}
	write := func(name, body string) (string, error) {
		p := filepath.Join(j.Dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			return "", fmt.Errorf("slurm: %w", err)
		}
		sub.Scripts = append(sub.Scripts, p)
		return p, nil
	}
	sbatch := func(script string, opts ...string) (string, error) {
		args := append(append([]string{"--parsable"}, j.Extra...), opts...)
		args = append(args, script)
		sub.Commands = append(sub.Commands, "sbatch "+shellJoin(args))
		out, err := run(ctx, "sbatch", args...)
		if err != nil {
			return "", err
		}
		id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
		if !regexp.MustCompile(`^[0-9]+$`).MatchString(id) {
			return "", fmt.Errorf("sbatch printed %q, not a job id", strings.TrimSpace(out))
		}
		return id, nil
	}
	if s.Stage != "" {
		p, err := write("stage.sbatch", s.Stage)
		if err != nil {
			return nil, err
		}
		if sub.Job, err = sbatch(p); err != nil {
			return sub, err
		}
		sub.WaitJobID = sub.Job
		return sub, nil
	}
	pa, err := write("shard.sbatch", s.Array)
	if err != nil {
		return nil, err
	}
	pm, err := write("merge.sbatch", s.Merge)
	if err != nil {
		return nil, err
	}
	if sub.ArrayJob, err = sbatch(pa); err != nil {
		return sub, err
	}
	if sub.MergeJob, err = sbatch(pm, "--dependency=afterok:"+sub.ArrayJob, "--kill-on-invalid-dep=yes"); err != nil {
		return sub, fmt.Errorf("%w (the shard array %s is queued; cancel it with scancel %s)", err, sub.ArrayJob, sub.ArrayJob)
	}
	sub.WaitJobID = sub.MergeJob
	return sub, nil
}

// JobState is a finished job's state as Slurm reports it (COMPLETED,
// FAILED, CANCELLED, TIMEOUT, ...).
type JobState struct {
	ID       string
	State    string
	Reason   string
	ExitCode string
}

// OK reports whether the job completed successfully.
func (s JobState) OK() bool { return s.State == "COMPLETED" }

var fieldRe = regexp.MustCompile(`(\w+)=(\S*)`)

// States returns the state of a job, or of each task of an array job
// (sorted by array index), from scontrol; sacct when scontrol has
// forgotten the job.
func States(ctx context.Context, run Runner, id string) ([]JobState, error) {
	out, err := run(ctx, "scontrol", "show", "job", "-o", id)
	if err == nil && strings.TrimSpace(out) != "" {
		var states []JobState
		type keyed struct {
			idx int
			s   JobState
		}
		var ks []keyed
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := map[string]string{}
			for _, m := range fieldRe.FindAllStringSubmatch(line, -1) {
				if _, dup := f[m[1]]; !dup {
					f[m[1]] = m[2]
				}
			}
			s := JobState{ID: f["JobId"], State: f["JobState"], Reason: f["Reason"], ExitCode: f["ExitCode"]}
			idx := -1
			if t, ok := f["ArrayTaskId"]; ok {
				if n, err := strconv.Atoi(t); err == nil {
					idx = n
					s.ID = f["ArrayJobId"] + "_" + t
				} else {
					s.ID = f["ArrayJobId"] + "_[" + t + "]" // tasks still pending
				}
			}
			ks = append(ks, keyed{idx, s})
		}
		sort.SliceStable(ks, func(a, b int) bool { return ks[a].idx < ks[b].idx })
		for _, k := range ks {
			states = append(states, k.s)
		}
		return states, nil
	}
	out, serr := run(ctx, "sacct", "-n", "-X", "-P", "-j", id, "-o", "JobID,State,ExitCode")
	if serr != nil || strings.TrimSpace(out) == "" {
		return nil, fmt.Errorf("job %s: Slurm no longer knows it (scontrol: %v)", id, err)
	}
	var states []JobState
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		p := strings.Split(line, "|")
		if len(p) >= 3 {
			st, _, _ := strings.Cut(p[1], " ")
			states = append(states, JobState{ID: p[0], State: st, ExitCode: p[2]})
		}
	}
	return states, nil
}

// Wait polls until job id has left the queue and returns its final state.
func Wait(ctx context.Context, run Runner, id string, poll time.Duration) (JobState, error) {
	if poll <= 0 {
		poll = 2 * time.Second
	}
	for {
		out, err := run(ctx, "squeue", "-h", "-j", id, "-o", "%T")
		if err != nil && !strings.Contains(err.Error(), "Invalid job id") {
			return JobState{}, err
		}
		if strings.TrimSpace(out) == "" {
			break
		}
		select {
		case <-ctx.Done():
			return JobState{}, ctx.Err()
		case <-time.After(poll):
		}
	}
	states, err := States(ctx, run, id)
	if err != nil {
		return JobState{}, err
	}
	if len(states) == 0 {
		return JobState{}, fmt.Errorf("job %s: no state", id)
	}
	return states[0], nil
}

// Failed lists the array tasks (shard indexes) that did not complete.
func Failed(ctx context.Context, run Runner, arrayJob string) ([]int, []JobState, error) {
	states, err := States(ctx, run, arrayJob)
	if err != nil {
		return nil, nil, err
	}
	var idx []int
	var bad []JobState
	for _, s := range states {
		if s.OK() {
			continue
		}
		bad = append(bad, s)
		if _, t, ok := strings.Cut(s.ID, "_"); ok {
			if n, err := strconv.Atoi(t); err == nil {
				idx = append(idx, n)
			}
		}
	}
	return idx, bad, nil
}

// WaitSubmission waits for a submission and explains a failure: which
// shards failed, where their logs are, how to re-run them.
func WaitSubmission(ctx context.Context, run Runner, sub *Submission, poll time.Duration) error {
	st, err := Wait(ctx, run, sub.WaitJobID, poll)
	if err != nil {
		return err
	}
	if st.OK() {
		return nil
	}
	if sub.ArrayJob == "" {
		return fmt.Errorf("slurm job %s (%s) ended %s (exit %s); log: %s", st.ID, sub.Stage, st.State, st.ExitCode,
			filepath.Join(sub.Dir, "cualake-"+strings.ReplaceAll(sub.Stage, " ", "-")+"-"+st.ID+".log"))
	}
	failed, bad, ferr := Failed(ctx, run, sub.ArrayJob)
	if ferr == nil && len(bad) > 0 {
		var parts []string
		for _, b := range bad {
			parts = append(parts, fmt.Sprintf("%s %s (exit %s)", b.ID, b.State, b.ExitCode))
		}
		var list []string
		for _, i := range failed {
			list = append(list, strconv.Itoa(i))
		}
		return fmt.Errorf("slurm: %s: shard task(s) failed: %s; the merge job %s ended %s. Logs are in %s; re-run the failed shards alone with `cualake slurm submit ... --rerun %s`",
			sub.Stage, strings.Join(parts, ", "), st.ID, st.State, sub.Dir, strings.Join(list, ","))
	}
	return fmt.Errorf("slurm: %s: the merge job %s ended %s (reason %s, exit %s); logs are in %s",
		sub.Stage, st.ID, st.State, st.Reason, st.ExitCode, sub.Dir)
}
