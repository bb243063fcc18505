// Package jsonl reads generic rollout logs: one JSON object per line, one
// trajectory per object, with its task, group, policy version, reward and
// steps (action, response, screenshot as a path or base64, optional token ids
// and log-probabilities). docs/import-jsonl.md is the format's reference.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cualake/cualake/pipeline/importer/osworld"
	"github.com/cualake/cualake/pipeline/importer/record"
	"github.com/cualake/cualake/pipeline/infile"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// MaxLine bounds one line (a trajectory with base64 screenshots can be large).
const MaxLine = 256 << 20

// Line is the JSON shape of one trajectory.
type Line struct {
	TrajectoryID  string          `json:"trajectory_id"`
	TaskID        string          `json:"task_id"`
	Domain        *string         `json:"domain"` // nil when absent; given, it must be a folder name
	GroupID       string          `json:"group_id"`
	Policy        string          `json:"policy"`
	PolicyVersion int32           `json:"policy_version"`
	Iteration     int32           `json:"iteration"`
	Seed          int64           `json:"seed"`
	Reward        *float64        `json:"reward"`
	Outcome       string          `json:"outcome"`
	Error         string          `json:"error"`
	Source        string          `json:"source"`
	JudgeDetail   json.RawMessage `json:"judge_detail"`
	Screen        *Screen         `json:"screen"`
	Task          json.RawMessage `json:"task"`
	Steps         []Step          `json:"steps"`
}

// Screen is the screen size pixel coordinates of pyautogui actions refer to.
type Screen struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Step is the JSON shape of one step.
type Step struct {
	Step             *int32          `json:"step"`
	Sub              int32           `json:"sub"`
	Action           json.RawMessage `json:"action"`
	RawAction        string          `json:"raw_action"`
	Response         string          `json:"response"`
	Screenshot       string          `json:"screenshot"`
	ScreenshotBase64 string          `json:"screenshot_base64"`
	ResponseIDs      []int32         `json:"response_ids"`
	Logprobs         []float32       `json:"logprobs"`
	PromptTokens     int32           `json:"prompt_tokens"`
	ResponseTokens   int32           `json:"response_tokens"`
	Reward           float64         `json:"reward"`
	Done             bool            `json:"done"`
	Info             json.RawMessage `json:"info"`
	Timestamp        string          `json:"timestamp"`
	ActionError      string          `json:"action_error"`
}

// typedAction is an action given as an object, on the 1000x1000 grid.
type typedAction struct {
	Kind      string   `json:"kind"`
	X         *int32   `json:"x"`
	Y         *int32   `json:"y"`
	X2        *int32   `json:"x2"`
	Y2        *int32   `json:"y2"`
	Text      string   `json:"text"`
	Keys      []string `json:"keys"`
	Direction string   `json:"direction"`
	Amount    int32    `json:"amount"`
}

// Loader reads the file a step's screenshot path names.
type Loader func(path string) ([]byte, error)

// Parsed is what one line yields.
type Parsed struct {
	Task    *schemas.Task // when the line embeds its task
	Episode *record.Episode
}

// ParseLine parses line number n of file. load reads screenshot paths
// (relative paths are the loader's business). A bad line gives a
// *record.Error naming the field.
func ParseLine(file string, n int, raw []byte, load Loader) (*Parsed, error) {
	bad := func(field, format string, a ...any) (*Parsed, error) {
		return nil, &record.Error{File: file, Line: n, Field: field, Reason: fmt.Sprintf(format, a...), Raw: string(raw), Table: schemas.Trajectories.Name}
	}
	if !utf8.Valid(raw) {
		return bad("json", "line is not valid UTF-8")
	}
	var l Line
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		e := record.FromJSON(file, n, schemas.Trajectories.Name, raw, err)
		e.Line = n
		return nil, e
	}
	if dec.More() {
		return bad("json", "more than one JSON value on the line")
	}
	out := &Parsed{}
	domain := ""
	if l.Domain != nil {
		// The domain names a folder of the export layout, as OSWorld's
		// evaluation_examples/<domain>/ does.
		if err := record.CheckComponent(*l.Domain); err != nil {
			return bad("domain", "%v (leave the field out when the domain is unknown)", err)
		}
		domain = *l.Domain
	}
	if len(l.Task) > 0 && string(l.Task) != "null" {
		if domain == "" {
			return bad("domain", "is required when the line embeds its task")
		}
		t, err := osworld.ParseTask(fmt.Sprintf("%s:%d", file, n), domain, l.Task)
		if err != nil {
			var re *record.Error
			if errors.As(err, &re) {
				return bad("task."+re.Field, "%s", re.Reason)
			}
			return nil, err
		}
		if l.TaskID == "" {
			l.TaskID = t.TaskID
		} else if l.TaskID != t.TaskID {
			return bad("task_id", "is %q but task.id is %q", l.TaskID, t.TaskID)
		}
		out.Task = &t
	}
	if strings.TrimSpace(l.TaskID) == "" {
		return bad("task_id", "is required")
	}
	if err := record.CheckComponent(l.TaskID); err != nil {
		return bad("task_id", "%v", err)
	}
	if l.TrajectoryID != "" {
		if err := record.CheckComponent(l.TrajectoryID); err != nil {
			return bad("trajectory_id", "%v", err)
		}
	}
	if l.Reward == nil {
		return bad("reward", "is required")
	}
	if l.Steps == nil {
		return bad("steps", "is required (an empty list for none)")
	}
	if l.TrajectoryID == "" {
		h := sha256.Sum256(raw) // content-addressed: the same line twice is one trajectory
		l.TrajectoryID = "jsonl-" + hex.EncodeToString(h[:16])
	}
	if l.GroupID == "" {
		l.GroupID = l.TaskID
	}
	if l.Source == "" {
		l.Source = "jsonl"
	}
	if l.Outcome == "" {
		l.Outcome = schemas.OutcomeFailure
		if *l.Reward > 0 {
			l.Outcome = schemas.OutcomeSuccess
		}
	}
	judge := ""
	if len(l.JudgeDetail) > 0 && string(l.JudgeDetail) != "null" {
		judge = compact(l.JudgeDetail)
	}
	tr := schemas.Trajectory{TrajectoryID: l.TrajectoryID, TaskID: l.TaskID, Domain: domain, GroupID: l.GroupID, Policy: l.Policy,
		PolicyVersion: l.PolicyVersion, Iteration: l.Iteration, Seed: l.Seed, Steps: int32(len(l.Steps)), Reward: *l.Reward,
		Outcome: l.Outcome, JudgeDetail: judge, Error: l.Error, Source: l.Source}
	if err := schemas.Trajectories.Validate(&tr); err != nil {
		e := record.FromValidation(file, n, schemas.Trajectories.Name, string(raw), err)
		return nil, e
	}
	ep := &record.Episode{Trajectory: tr, File: file, Line: n, Raw: raw}
	seen := map[[2]int32]bool{}
	var spans []span
	for i, st := range l.Steps {
		field := func(f string) string { return fmt.Sprintf("steps[%d].%s", i, f) }
		s := schemas.Step{TrajectoryID: tr.TrajectoryID, Step: int32(i + 1), Sub: st.Sub, Response: st.Response,
			ResponseIDs: st.ResponseIDs, Logprobs: st.Logprobs, PromptTokens: st.PromptTokens, ResponseTokens: st.ResponseTokens,
			Reward: st.Reward, Done: st.Done, Timestamp: st.Timestamp, ActionError: st.ActionError}
		if st.Step != nil {
			s.Step = *st.Step
		}
		if seen[[2]int32{s.Step, s.Sub}] {
			return bad(field("step"), "step %d sub %d appears twice", s.Step, s.Sub)
		}
		seen[[2]int32{s.Step, s.Sub}] = true
		if len(st.Info) > 0 && string(st.Info) != "null" {
			s.Info = compact(st.Info)
		}
		var shot *schemas.Blob
		switch {
		case st.Screenshot != "" && st.ScreenshotBase64 != "":
			return bad(field("screenshot"), "give screenshot or screenshot_base64, not both")
		case st.Screenshot != "":
			b, err := load(st.Screenshot)
			if err != nil {
				return bad(field("screenshot"), "%s", record.FileReason(st.Screenshot, err))
			}
			blob, err := record.ImageBlob(b)
			if err != nil {
				return bad(field("screenshot"), "%s: %v", st.Screenshot, err)
			}
			shot = &blob
		case st.ScreenshotBase64 != "":
			b, err := decodeBase64(st.ScreenshotBase64)
			if err != nil {
				return bad(field("screenshot_base64"), "%v", err)
			}
			blob, err := record.ImageBlob(b)
			if err != nil {
				return bad(field("screenshot_base64"), "%v", err)
			}
			shot = &blob
		}
		if shot != nil {
			s.Observation = shot.Hash
			ep.Blobs = append(ep.Blobs, *shot)
		}
		w, h := osworld.DefaultWidth, osworld.DefaultHeight
		if l.Screen != nil && l.Screen.Width > 0 && l.Screen.Height > 0 {
			w, h = l.Screen.Width, l.Screen.Height
		} else if shot != nil {
			w, h = int(shot.Width), int(shot.Height)
		}
		acts, rawAction, err := parseAction(st.Action, w, h)
		if err != nil {
			return bad(field("action"), "%v", err)
		}
		s.RawAction = rawAction
		if st.RawAction != "" {
			s.RawAction = st.RawAction
		}
		spans = append(spans, span{step: s.Step, sub: s.Sub, first: len(ep.Steps), n: len(acts)})
		for k, a := range acts {
			r := s
			r.SetAction(a)
			if k > 0 {
				// The response's tokens are counted once, on its first row.
				r.ResponseIDs, r.Logprobs, r.PromptTokens, r.ResponseTokens = nil, nil, 0, 0
			}
			if k < len(acts)-1 {
				// Reward and done describe the screen after the whole action.
				r.Reward, r.Done = 0, false
			}
			if err := schemas.Steps.Validate(&r); err != nil {
				e := record.FromValidation(file, n, schemas.Steps.Name, string(raw), err)
				e.Field = fmt.Sprintf("steps[%d].%s", i, e.Field)
				return nil, e
			}
			ep.Steps = append(ep.Steps, r)
		}
	}
	if err := renumber(ep.Steps, spans); err != nil {
		return bad("steps", "%v", err)
	}
	ep.Trajectory.Steps = int32(len(ep.Steps))
	out.Episode = ep
	return out, nil
}

// span is the rows one step object became.
type span struct {
	step, sub int32 // as given
	first, n  int   // rows[first:first+n]
}

// renumber gives the rows of each span consecutive subs. sub is the index of
// an action within one response, so when a script of n actions takes subs
// sub..sub+n-1, the later actions of its step (larger subs) move up by n-1;
// without multi-action scripts every sub stays as given.
func renumber(rows []schemas.Step, spans []span) error {
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		sa, sb := spans[order[a]], spans[order[b]]
		return sa.step < sb.step || sa.step == sb.step && sa.sub < sb.sub
	})
	var shift int64
	for j, i := range order {
		sp := spans[i]
		if j == 0 || spans[order[j-1]].step != sp.step {
			shift = 0
		}
		for k := 0; k < sp.n; k++ {
			sub := int64(sp.sub) + shift + int64(k)
			if sub > math.MaxInt32 {
				return fmt.Errorf("step %d: sub %d does not fit in 32 bits once its scripts are split into actions", sp.step, sub)
			}
			rows[sp.first+k].Sub = int32(sub)
		}
		shift += int64(sp.n - 1)
	}
	return nil
}

// parseAction reads a step's action: a string (a pyautogui script, split
// into the actions it performed, or DONE/FAIL/WAIT; one action of kind
// "unknown" when it does not parse) or a typed object on the grid (an error
// when malformed).
func parseAction(raw json.RawMessage, w, h int) ([]schemas.Action, string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", fmt.Errorf("is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		acts, err := osworld.ParseActionText(s, w, h)
		if err != nil {
			return []schemas.Action{{Kind: "unknown"}}, s, nil
		}
		return acts, s, nil
	}
	var t typedAction
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, "", fmt.Errorf("want a string or an object {kind, x, y, x2, y2, text, keys, direction, amount}: %v", err)
	}
	known := false
	for _, k := range schemas.ActionKinds {
		known = known || k == t.Kind
	}
	if !known {
		return nil, "", fmt.Errorf("kind %q is not one of %s", t.Kind, strings.Join(schemas.ActionKinds, ", "))
	}
	for _, c := range []*int32{t.X, t.Y, t.X2, t.Y2} {
		if c != nil && (*c < 0 || *c > action.Grid) {
			return nil, "", fmt.Errorf("coordinate %d is off the 0..%d grid", *c, action.Grid)
		}
	}
	return []schemas.Action{{Kind: t.Kind, X: t.X, Y: t.Y, X2: t.X2, Y2: t.Y2, Text: t.Text, Keys: t.Keys, Direction: t.Direction, Amount: t.Amount}}, compact(raw), nil
}

func decodeBase64(s string) ([]byte, error) {
	if strings.HasPrefix(s, "data:") {
		_, after, ok := strings.Cut(s, ";base64,")
		if !ok {
			return nil, fmt.Errorf("data URI is not base64")
		}
		s = after
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %v", err)
	}
	return b, nil
}

func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// ReadOptions tunes ReadFilesWith.
type ReadOptions struct {
	// MaxFileBytes caps each screenshot file a line names (0:
	// record.DefaultMaxFileBytes); a larger one is a reject.
	MaxFileBytes int64
}

// ReadFiles reads each JSONL file in order and hands tasks, episodes and
// rejects to sink. Screenshot paths are relative to the file's folder and
// must name regular files under the default size cap. Progress counts
// bytes.
func ReadFiles(ctx context.Context, files []string, sink record.Sink) error {
	return ReadFilesWith(ctx, files, ReadOptions{}, func(int) record.Sink { return sink })
}

// ReadFilesWith is ReadFiles with options and a sink per file: file i goes
// to sinkFor(i), and is not read when that is nil. Progress goes to the
// first file's sink and counts the bytes of the files read.
func ReadFilesWith(ctx context.Context, files []string, opts ReadOptions, sinkFor func(i int) record.Sink) error {
	total := 0
	var progress record.Sink
	for i, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return err
		}
		if st.IsDir() {
			return fmt.Errorf("%s is a folder, want a JSONL file", f)
		}
		// A device or FIFO (/dev/zero) would be read without end; lines
		// are bounded by MaxLine, the file by being a regular file.
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is %s, want a JSONL file (a regular file)", f, infile.Kind(st.Mode()))
		}
		if s := sinkFor(i); s != nil {
			total += int(st.Size())
			if progress == nil {
				progress = s
			}
		}
	}
	done := 0
	for i, f := range files {
		s := sinkFor(i)
		if s == nil {
			continue
		}
		if err := readFile(ctx, f, opts, progressTo{s, progress}, &done, total); err != nil {
			return err
		}
	}
	return nil
}

// progressTo sends a sink's progress elsewhere.
type progressTo struct {
	record.Sink
	p record.Sink
}

func (s progressTo) Progress(done, total int) { s.p.Progress(done, total) }

func readFile(ctx context.Context, file string, opts ReadOptions, sink record.Sink, done *int, total int) error {
	fh, err := infile.Open(file) // checked again: the path may have changed since

	if err != nil {
		return err
	}
	defer fh.Close()
	dir := filepath.Dir(file)
	load := func(p string) ([]byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, filepath.FromSlash(p))
		}
		// A path may name a FIFO or /dev/zero: only capped regular files.
		return record.ReadRegular(p, opts.MaxFileBytes)
	}
	r := bufio.NewReaderSize(fh, 1<<20)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, tooLong, err := readLine(r)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s:%d: %w", file, n, err)
		}
		if len(line) == 0 && errors.Is(err, io.EOF) && !tooLong {
			return nil
		}
		*done += len(line) + 1
		sink.Progress(min(*done, total), total)
		body := bytes.TrimSpace(line)
		switch {
		case tooLong:
			if rerr := sink.Reject(&record.Error{File: file, Line: n, Field: "json", Reason: fmt.Sprintf("line longer than %d bytes", MaxLine),
				Raw: string(line[:min(len(line), 4096)]), Table: schemas.Trajectories.Name}); rerr != nil {
				return rerr
			}
		case len(body) == 0:
		default:
			p, perr := ParseLine(file, n, body, load)
			var re *record.Error
			switch {
			case errors.As(perr, &re):
				if err := sink.Reject(re); err != nil {
					return err
				}
			case perr != nil:
				return perr
			default:
				if p.Task != nil {
					if err := sink.Task(*p.Task); err != nil {
						return err
					}
				}
				if err := sink.Episode(p.Episode); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// readLine reads up to '\n'. A line over MaxLine is skipped to its end and
// reported as too long.
func readLine(r *bufio.Reader) ([]byte, bool, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			buf = append(buf, chunk...)
			if len(buf) > MaxLine {
				tooLong, buf = true, buf[:4096]
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(buf, []byte("\n")), tooLong, err
	}
}
