package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/schemas"
)

// SFTFormat is the conversation layout of an SFT export.
type SFTFormat string

// SFT formats, both LLaMA-Factory "sharegpt" datasets with images.
const (
	// SFTLlamaFactory: "messages" of {role, content}, roles system, user
	// and assistant (LLaMA-Factory's OpenAI-style ShareGPT variant, as in
	// its data/mllm_demo.json).
	SFTLlamaFactory SFTFormat = "llamafactory"
	// SFTShareGPT: classic ShareGPT, "conversations" of {from, value},
	// speakers system, human and gpt.
	SFTShareGPT SFTFormat = "sharegpt"
)

// ParseSFTFormat reads llamafactory or sharegpt.
func ParseSFTFormat(s string) (SFTFormat, error) {
	switch f := SFTFormat(s); f {
	case SFTLlamaFactory, SFTShareGPT:
		return f, nil
	}
	return "", fmt.Errorf("--format %q: want llamafactory or sharegpt", s)
}

// SFT trajectory selections.
const (
	FromSuccess = "success" // every trajectory whose outcome is success
	FromOracle  = "oracle"  // successful trajectories of the oracle policy (warm-start demonstrations)
)

// DefaultSFTWindow is the rollout policy's screenshot window (the openai
// policy's default): the current screenshot and the two before it.
const DefaultSFTWindow = 3

// SFTOptions chooses what SFT writes.
type SFTOptions struct {
	Format SFTFormat // default SFTLlamaFactory
	// From picks trajectories by kind (FromSuccess, the default, or
	// FromOracle); Select instead runs an SQL statement returning a
	// trajectory_id column through the confined query engine.
	From   string
	Select string
	// Window is how many screenshots a sample holds, the current one
	// included; older turns appear as compact action history. Default
	// DefaultSFTWindow.
	Window int
	// Name is the dataset's name in dataset_info.json and of its file.
	Name string
}

// SFTReport says what SFT wrote.
type SFTReport struct {
	Snapshot     string    `json:"snapshot"`
	Dir          string    `json:"dir"`
	Format       SFTFormat `json:"format"`
	Name         string    `json:"name"`
	File         string    `json:"file"`
	Trajectories int       `json:"trajectories"`
	Samples      int       `json:"samples"`
	Images       int       `json:"image_files"`
}

// sftTurn is one turn of a trajectory: its screenshot, the policy's reply
// and its actions in compact form.
type sftTurn struct {
	step     int32
	obs      string
	response string
	actions  string
}

// SFT writes the chosen trajectories of snapshot m as a LLaMA-Factory
// multimodal dataset in the folder dir: <name>.json (a JSON list, one
// conversation per turn: the rollout policy's context for that turn and its
// reply), images/<hash>.png (each screenshot once) and dataset_info.json.
// dir must be absent or empty and outside any lake; it is staged beside and
// renamed into place, so a failure leaves nothing. A selection naming
// trajectories the snapshot lacks, a missing table or a missing screenshot
// blob is an error naming it.
func SFT(ctx context.Context, l *lake.Lake, m *lake.Manifest, dir string, opts SFTOptions) (*SFTReport, error) {
	rep, err := sft(ctx, l, m, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("export sft: %w", err)
	}
	return rep, nil
}

func sft(ctx context.Context, l *lake.Lake, m *lake.Manifest, dir string, opts SFTOptions) (*SFTReport, error) {
	if opts.Format == "" {
		opts.Format = SFTLlamaFactory
	}
	if _, err := ParseSFTFormat(string(opts.Format)); err != nil {
		return nil, err
	}
	if opts.Window == 0 {
		opts.Window = DefaultSFTWindow
	}
	if opts.Window < 1 {
		return nil, fmt.Errorf("--window %d: want at least 1 (the current screenshot)", opts.Window)
	}
	if opts.Name == "" {
		opts.Name = "cualake_sft"
	}
	if !safeComponent(opts.Name) || strings.ContainsAny(opts.Name, " \t\n") {
		return nil, fmt.Errorf("--name %q: want a plain file name", opts.Name)
	}
	if opts.Select != "" && opts.From != "" {
		return nil, fmt.Errorf("--from and --select exclude each other")
	}
	if opts.Select == "" && opts.From == "" {
		opts.From = FromSuccess
	}
	if opts.From != "" && opts.From != FromSuccess && opts.From != FromOracle {
		return nil, fmt.Errorf("--from %q: want success or oracle", opts.From)
	}
	if err := outfile.CheckOutsideLakes(dir, lakeRoots(l)...); err != nil {
		return nil, err
	}
	for _, t := range []string{schemas.Trajectories.Name, schemas.Steps.Name, schemas.Tasks.Name} {
		if _, ok := m.Tables[t]; !ok {
			return nil, fmt.Errorf("snapshot %s has no %s table", m.ID[:12], t)
		}
	}
	trajs := map[string]*schemas.Trajectory{}
	err := lake.ScanTable(ctx, l, m, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
		for i := range rows {
			t := rows[i]
			t.JudgeDetail = ""
			trajs[t.TrajectoryID] = &t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var ids []string
	if opts.Select != "" {
		if ids, err = selectTrajectories(ctx, l, m, opts.Select, trajs); err != nil {
			return nil, err
		}
	} else {
		for id, t := range trajs {
			if t.Outcome == schemas.OutcomeSuccess && (opts.From == FromSuccess || t.Policy == "oracle") {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("snapshot %s has no %s trajectories (outcome success%s)", m.ID[:12], opts.From,
				map[bool]string{true: ", policy oracle"}[opts.From == FromOracle])
		}
	}
	sort.Strings(ids)
	chosen := make(map[string]bool, len(ids))
	for _, id := range ids {
		chosen[id] = true
	}
	tasks := map[string]string{} // task id -> instruction
	need := map[string]bool{}
	for _, id := range ids {
		need[trajs[id].TaskID] = true
	}
	err = lake.ScanTable(ctx, l, m, schemas.Tasks, 1024, func(rows []schemas.Task) error {
		for i := range rows {
			if need[rows[i].TaskID] {
				tasks[rows[i].TaskID] = rows[i].Instruction
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, ok := tasks[trajs[id].TaskID]; !ok {
			return nil, fmt.Errorf("trajectory %s is of task %s, which the tasks table of snapshot %s lacks", id, trajs[id].TaskID, m.ID[:12])
		}
	}
	turns, err := sftTurns(ctx, l, m, chosen)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range ids {
		if len(turns[id]) == 0 {
			return nil, fmt.Errorf("trajectory %s has no steps in snapshot %s", id, m.ID[:12])
		}
		for _, t := range turns[id] {
			if t.obs == "" {
				return nil, fmt.Errorf("trajectory %s step %d: %w recorded (a tree-only rollout?); an SFT sample needs every screenshot", id, t.step, ErrNoImage)
			}
			want[t.obs] = true
		}
	}
	images, err := resolveImages(ctx, l, m, want, nil)
	if err != nil {
		return nil, err
	}
	rep := &SFTReport{Snapshot: m.ID, Dir: dir, Format: opts.Format, Name: opts.Name, File: opts.Name + ".json",
		Trajectories: len(ids), Images: len(want)}
	err = outfile.WriteDir(dir, func(tmp string) error {
		var buf bytes.Buffer
		buf.WriteString("[\n")
		for _, id := range ids {
			ts := turns[id]
			for t := range ts {
				if rep.Samples > 0 {
					buf.WriteString(",\n")
				}
				if err := writeSample(&buf, opts, tasks[trajs[id].TaskID], ts, t, images); err != nil {
					return fmt.Errorf("trajectory %s step %d: %w", id, ts[t].step, err)
				}
				rep.Samples++
			}
		}
		buf.WriteString("\n]\n")
		if err := os.WriteFile(filepath.Join(tmp, rep.File), buf.Bytes(), 0o666); err != nil {
			return err
		}
		info, err := datasetInfo(opts.Name, rep.File, opts.Format)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, "dataset_info.json"), info, 0o666); err != nil {
			return err
		}
		return images.WriteFiles(ctx, filepath.Join(tmp, imagesDir))
	}, lakeRoots(l)...)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// selectTrajectories runs stmt through the confined query engine and
// returns the distinct trajectory ids of its trajectory_id column (or its
// only column). NULLs and ids the trajectories table lacks are errors
// naming them.
func selectTrajectories(ctx context.Context, l *lake.Lake, m *lake.Manifest, stmt string, trajs map[string]*schemas.Trajectory) ([]string, error) {
	e, err := query.Open(ctx, l, m)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	rows, err := e.Rows(ctx, stmt)
	if err != nil {
		return nil, fmt.Errorf("--select: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("--select: %w", err)
	}
	col := -1
	for i, c := range cols {
		if c == "trajectory_id" {
			col = i
		}
	}
	if col < 0 && len(cols) == 1 {
		col = 0
	}
	if col < 0 {
		return nil, fmt.Errorf("--select returns columns %s; it must return trajectory_id", strings.Join(cols, ", "))
	}
	seen := map[string]bool{}
	var ids, missing []string
	n := 0
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("--select: %w", err)
		}
		n++
		id, ok := vals[col].(string)
		if !ok {
			return nil, fmt.Errorf("--select row %d: trajectory_id is %v (%T), want a string", n, vals[col], vals[col])
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		if trajs[id] == nil {
			missing = append(missing, id)
			continue
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("--select: %w", err)
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("--select names %d trajectory id(s) the trajectories table of snapshot %s lacks: %s", len(missing), m.ID[:12], listSome(missing, 5))
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("--select returns no trajectory ids")
	}
	return ids, nil
}

// sftTurns reads the steps of the chosen trajectories as turns in step
// order: one per step number, its screenshot and reply from the first row
// (the sub-actions of one reply share them), its actions from every row.
func sftTurns(ctx context.Context, l *lake.Lake, m *lake.Manifest, chosen map[string]bool) (map[string][]sftTurn, error) {
	rows := map[string][]schemas.Step{}
	err := lake.ScanTable(ctx, l, m, schemas.Steps, 1024, func(rs []schemas.Step) error {
		for i := range rs {
			if chosen[rs[i].TrajectoryID] {
				s := rs[i]
				s.ResponseIDs, s.Logprobs, s.Info = nil, nil, ""
				rows[s.TrajectoryID] = append(rows[s.TrajectoryID], s)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string][]sftTurn, len(rows))
	for id, rs := range rows {
		schemas.Steps.Sort(rs)
		var ts []sftTurn
		for i := range rs {
			s := &rs[i]
			a := compactAction(s)
			if len(ts) > 0 && ts[len(ts)-1].step == s.Step {
				ts[len(ts)-1].actions += "; " + a
				continue
			}
			resp := s.Response
			if resp == "" {
				resp = s.RawAction
			}
			ts = append(ts, sftTurn{step: s.Step, obs: s.Observation, response: resp, actions: a})
		}
		out[id] = ts
	}
	return out, nil
}

// compactAction is a step's action in the policy's compact text form
// ("click 512 300"), else the first line of its raw action.
func compactAction(s *schemas.Step) string {
	if a, err := action.Format(s.ActionOf()); err == nil {
		return a
	}
	if line, _, _ := strings.Cut(strings.TrimSpace(s.RawAction), "\n"); line != "" {
		return line
	}
	return s.ActionKind
}

// writeSample writes the conversation of turn t: the system prompt; the
// task with the compact history of turns before the window and the first
// window screenshot; each later window turn as a screenshot; each window
// turn answered by the policy's reply, the last one being turn t's. User
// and assistant messages alternate, as LLaMA-Factory requires.
func writeSample(buf *bytes.Buffer, opts SFTOptions, instruction string, ts []sftTurn, t int, images *blobImages) error {
	first := max(0, t-(opts.Window-1))
	earlier := make([]string, first)
	for i := range earlier {
		earlier[i] = ts[i].actions
	}
	type msg struct{ role, content string }
	msgs := []msg{{"system", PolicySystemPrompt}}
	var paths []string
	for i := first; i <= t; i++ {
		user := ImageToken
		if i == first {
			user = TaskIntro(instruction, earlier) + "\n" + ImageToken
		}
		msgs = append(msgs, msg{"user", user}, msg{"assistant", ts[i].response})
		paths = append(paths, imagesDir+"/"+images.Name(ts[i].obs))
	}
	var v any
	switch opts.Format {
	case SFTShareGPT:
		type turn struct {
			From  string `json:"from"`
			Value string `json:"value"`
		}
		speaker := map[string]string{"system": "system", "user": "human", "assistant": "gpt"}
		conv := make([]turn, len(msgs))
		for i, m := range msgs {
			conv[i] = turn{speaker[m.role], m.content}
		}
		v = struct {
			Conversations []turn   `json:"conversations"`
			Images        []string `json:"images"`
		}{conv, paths}
	default:
		type message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		ms := make([]message, len(msgs))
		for i, m := range msgs {
			ms[i] = message{m.role, m.content}
		}
		v = struct {
			Messages []message `json:"messages"`
			Images   []string  `json:"images"`
		}{ms, paths}
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline; the list separator follows
	return nil
}

// datasetInfo is the dataset_info.json that registers the dataset with
// LLaMA-Factory (--dataset_dir DIR --dataset NAME).
func datasetInfo(name, file string, format SFTFormat) ([]byte, error) {
	type columns struct {
		Messages string `json:"messages"`
		Images   string `json:"images"`
	}
	type tags struct {
		RoleTag      string `json:"role_tag"`
		ContentTag   string `json:"content_tag"`
		UserTag      string `json:"user_tag"`
		AssistantTag string `json:"assistant_tag"`
		SystemTag    string `json:"system_tag"`
	}
	type entry struct {
		FileName   string  `json:"file_name"`
		Formatting string  `json:"formatting"`
		Columns    columns `json:"columns"`
		Tags       tags    `json:"tags"`
	}
	e := entry{FileName: file, Formatting: "sharegpt", Columns: columns{"messages", "images"},
		Tags: tags{"role", "content", "user", "assistant", "system"}}
	if format == SFTShareGPT {
		e.Columns.Messages = "conversations"
		e.Tags = tags{"from", "value", "human", "gpt", "system"}
	}
	b, err := json.MarshalIndent(map[string]entry{name: e}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
