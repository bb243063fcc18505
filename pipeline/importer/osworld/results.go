package osworld

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/importer/record"
	"github.com/cualake/cualake/schemas"
)

// EpisodePath names one episode folder of a results tree:
// <action_space>/<observation_type>/<model>/<domain>/<example_id>.
type EpisodePath struct {
	Dir             string // the folder on disk
	Rel             string // its path relative to the folder being imported, with '/', for messages
	ActionSpace     string
	ObservationType string
	Model           string // may contain '/' when the run used a model name such as org/model
	Domain          string
	ExampleID       string
}

// key is the episode's logical location, independent of which level of the
// tree the user pointed at.
func (p *EpisodePath) key() string {
	return strings.Join([]string{p.ActionSpace, p.ObservationType, p.Model, p.Domain, p.ExampleID}, "/")
}

// episodeMarkers are the files whose presence makes a folder an episode.
var episodeMarkers = []string{"traj.jsonl", "result.txt", "runtime.log"}

// FindEpisodes lists the episode folders under dir in lexical order. dir is
// normally the results root (holding action-space folders); when it is a
// deeper level the missing leading components come from dir's own path.
func FindEpisodes(dir string) ([]EpisodePath, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	var out []EpisodePath
	var walk func(d string) error
	walk = func(d string) error {
		entries, err := os.ReadDir(d)
		if err != nil {
			return err
		}
		for _, e := range entries {
			for _, m := range episodeMarkers {
				if e.Name() == m && e.Type().IsRegular() {
					p, err := episodePath(abs, d)
					if err != nil {
						return err
					}
					out = append(out, p)
					return nil // an episode folder holds no further episodes
				}
			}
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				if err := walk(filepath.Join(d, e.Name())); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(abs); err != nil {
		return nil, err
	}
	return out, nil
}

func episodePath(root, d string) (EpisodePath, error) {
	rel, err := filepath.Rel(root, d)
	if err != nil {
		return EpisodePath{}, err
	}
	var parts []string
	if rel != "." {
		parts = strings.Split(filepath.ToSlash(rel), "/")
	}
	if len(parts) < 5 {
		// Pointed below the results root: borrow the leading components.
		up := strings.Split(filepath.ToSlash(strings.TrimPrefix(root, filepath.VolumeName(root))), "/")
		need := 5 - len(parts)
		var lead []string
		for i := len(up) - 1; i >= 0 && len(lead) < need; i-- {
			if up[i] != "" {
				lead = append([]string{up[i]}, lead...)
			}
		}
		if len(lead) < need {
			return EpisodePath{}, fmt.Errorf("%s: cannot tell action space, observation type, model, domain and example id "+
				"(want <action_space>/<observation_type>/<model>/<domain>/<example_id>/)", d)
		}
		parts = append(lead, parts...)
	}
	n := len(parts)
	relSlash := filepath.ToSlash(rel)
	return EpisodePath{Dir: d, Rel: relSlash, ActionSpace: parts[0], ObservationType: parts[1],
		Model: strings.Join(parts[2:n-2], "/"), Domain: parts[n-2], ExampleID: parts[n-1]}, nil
}

// TrajectoryID is the deterministic id of an episode: a hash of its logical
// location and the timestamp of its first action. The timestamp tells apart
// two runs of the same model on the same task stored in different trees.
func TrajectoryID(p *EpisodePath, firstTimestamp string) string {
	h := sha256.Sum256([]byte("osworld\x00" + p.key() + "\x00" + firstTimestamp))
	return "osw-" + hex.EncodeToString(h[:16])
}

// judgeDetail is what an OSWorld episode records beyond the columns.
type judgeDetail struct {
	Path            string          `json:"path"`
	ActionSpace     string          `json:"action_space"`
	ObservationType string          `json:"observation_type"`
	Result          *string         `json:"result,omitempty"`           // result.txt as written
	FinalScreenshot string          `json:"final_screenshot,omitempty"` // blob hash of the screen after the last action
	RuntimeLog      string          `json:"runtime_log,omitempty"`      // blob hash of runtime.log
	Recording       *recordingEntry `json:"recording,omitempty"`
}

type recordingEntry struct {
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
}

// ReadEpisode reads one episode folder. known reports trajectory ids the
// lake already holds; such an episode comes back as its id alone, without
// loading screenshots. Every file it reads must be a regular file of at
// most maxFile bytes (0: record.DefaultMaxFileBytes). Bad records come back
// as rejects (and no episode); the error is for I/O failures only.
func ReadEpisode(p EpisodePath, known func(string) bool, maxFile int64) (*record.Episode, []*record.Error, error) {
	rel := func(name string) string { return strings.TrimPrefix(p.Rel+"/"+name, "./") }
	// The domain and example id become folder names of the export layout
	// and task ids; the file system allows names those do not.
	for _, c := range []struct{ field, name string }{{"domain", p.Domain}, {"example_id", p.ExampleID}} {
		if err := record.CheckComponent(c.name); err != nil {
			return nil, []*record.Error{{File: p.Rel, Field: c.field, Reason: "folder name " + err.Error(), Table: schemas.Trajectories.Name}}, nil
		}
	}
	read := func(name string) ([]byte, error) {
		return record.ReadRegular(filepath.Join(p.Dir, filepath.FromSlash(name)), maxFile)
	}
	// refusedFile is the reject of a whole file that is no regular file
	// or over the cap, nil for any other error.
	refusedFile := func(name string, err error) []*record.Error {
		if !errors.Is(err, record.ErrNotRegular) && !errors.Is(err, record.ErrTooLarge) {
			return nil
		}
		return []*record.Error{{File: rel(name), Field: "file", Reason: record.FileReason(name, err), Table: schemas.Trajectories.Name}}
	}
	var rejects []*record.Error
	var lines []TrajLine
	var lineNos []int
	var errs []string
	trajRaw, err := read("traj.jsonl")
	if r := refusedFile("traj.jsonl", err); r != nil {
		return nil, r, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	for i, raw := range splitLines(trajRaw) {
		if len(strings.TrimSpace(string(raw))) == 0 {
			continue
		}
		l, err := ParseTrajLine(rel("traj.jsonl"), i+1, raw)
		var re *record.Error
		switch {
		case errors.As(err, &re):
			rejects = append(rejects, re)
		case err != nil:
			return nil, nil, err
		case l.IsError():
			errs = append(errs, l.Error)
		default:
			lines = append(lines, l)
			lineNos = append(lineNos, i+1)
		}
	}
	first := ""
	if len(lines) > 0 {
		first = lines[0].Timestamp
	}
	id := TrajectoryID(&p, first)
	if known != nil && known(id) {
		return &record.Episode{Trajectory: schemas.Trajectory{TrajectoryID: id}}, nil, nil
	}
	tr := schemas.Trajectory{TrajectoryID: id, TaskID: p.ExampleID, Domain: p.Domain, GroupID: p.ExampleID + "@" + p.Model,
		Policy: p.Model, Source: "osworld"}
	jd := judgeDetail{Path: p.Rel, ActionSpace: p.ActionSpace, ObservationType: p.ObservationType}

	resRaw, err := read("result.txt")
	if r := refusedFile("result.txt", err); r != nil {
		return nil, r, nil
	}
	hasResult := err == nil
	switch {
	case err == nil:
		v, perr := ParseResult(rel("result.txt"), resRaw)
		var re *record.Error
		if errors.As(perr, &re) {
			rejects = append(rejects, re)
		}
		tr.Reward = v
		s := strings.TrimSpace(string(resRaw))
		jd.Result = &s
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, err
	}

	ep := &record.Episode{File: p.Rel}
	addBlob := func(b schemas.Blob) { ep.Blobs = append(ep.Blobs, b) }
	readShot := func(name string, line int, raw string) (*schemas.Blob, error) {
		b, err := read(name)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, record.ErrNotRegular) || errors.Is(err, record.ErrTooLarge) {
			rejects = append(rejects, &record.Error{File: rel("traj.jsonl"), Line: line, Field: "screenshot_file",
				Reason: record.FileReason(rel(name), err), Raw: raw, Table: schemas.Steps.Name})
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		blob, err := record.ImageBlob(b)
		if err != nil {
			rejects = append(rejects, &record.Error{File: rel("traj.jsonl"), Line: line, Field: "screenshot_file",
				Reason: fmt.Sprintf("%s: %v", rel(name), err), Raw: raw, Table: schemas.Steps.Name})
			return nil, nil
		}
		addBlob(blob)
		return &blob, nil
	}

	// The screenshot saved with a line shows the screen after its action;
	// the policy saw the one saved by the last line of the previous
	// response (step_num), or the initial one when a harness saved it.
	var prev *schemas.Blob
	if name := initialShot(p.Dir); name != "" {
		if prev, err = readShot(name, 0, ""); err != nil {
			return nil, nil, err
		}
	}
	var seen *schemas.Blob // the observation of the current step_num
	subs := map[int32]int32{}
	for i, l := range lines {
		if i == 0 || l.StepNum != lines[i-1].StepNum {
			seen = prev
		}
		var shot *schemas.Blob
		if l.ScreenshotFile != "" {
			if shot, err = readShot(l.ScreenshotFile, lineNos[i], ""); err != nil {
				return nil, nil, err
			}
		}
		w, h := 0, 0
		if seen != nil {
			w, h = int(seen.Width), int(seen.Height)
		} else if shot != nil {
			w, h = int(shot.Width), int(shot.Height)
		}
		base := schemas.Step{TrajectoryID: id, Step: l.StepNum, Response: l.Response, Info: l.Rest, Timestamp: l.Timestamp,
			RawAction: actionText(l.Action)}
		if seen != nil {
			base.Observation = seen.Hash
		}
		rows, err := lineSteps(base, l, subs[l.StepNum], w, h)
		if err != nil {
			rejects = append(rejects, record.FromValidation(rel("traj.jsonl"), lineNos[i], schemas.Steps.Name, "", err))
			continue
		}
		subs[l.StepNum] += int32(len(rows))
		ep.Steps = append(ep.Steps, rows...)
		if shot != nil {
			prev = shot
		}
	}
	if len(lines) > 0 && lines[len(lines)-1].ScreenshotFile != "" && prev != nil {
		jd.FinalScreenshot = prev.Hash
	}
	if len(rejects) > 0 {
		// Raw of a screenshot reject is the line that named it.
		ls := splitLines(trajRaw)
		for _, r := range rejects {
			if r.Raw == "" && r.Line > 0 {
				if r.Line <= len(ls) {
					r.Raw = string(ls[r.Line-1])
				}
			}
		}
		return nil, rejects, nil
	}

	if b, err := read("runtime.log"); err == nil {
		blob := record.TextBlob(b)
		addBlob(blob)
		jd.RuntimeLog = blob.Hash
	} else if r := refusedFile("runtime.log", err); r != nil {
		return nil, r, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	// Recordings are large videos: noted, not stored.
	if st, err := os.Stat(filepath.Join(p.Dir, "recording.mp4")); err == nil && st.Mode().IsRegular() {
		jd.Recording = &recordingEntry{File: "recording.mp4", Bytes: st.Size()}
	}

	tr.Steps = int32(len(ep.Steps))
	switch {
	case len(errs) > 0:
		tr.Outcome, tr.Error = schemas.OutcomeError, strings.Join(errs, "; ")
	case !hasResult:
		tr.Outcome, tr.Error = schemas.OutcomeError, "no result.txt: the run stopped before evaluation"
	case tr.Reward > 0:
		tr.Outcome = schemas.OutcomeSuccess
	default:
		tr.Outcome = schemas.OutcomeFailure
	}
	b, err := json.Marshal(jd)
	if err != nil {
		return nil, nil, err
	}
	tr.JudgeDetail = string(b)
	if err := schemas.Trajectories.Validate(&tr); err != nil {
		return nil, []*record.Error{record.FromValidation(p.Rel, 0, schemas.Trajectories.Name, "", err)}, nil
	}
	ep.Trajectory = tr
	return ep, nil, nil
}

// initialShot returns the name of a screenshot taken before the first
// action (step_0*.png), which some harnesses save; "" when there is none.
func initialShot(dir string) string {
	m, _ := filepath.Glob(filepath.Join(dir, "step_0*.png"))
	var names []string
	for _, f := range m {
		n := filepath.Base(f)
		if n == "step_0.png" || strings.HasPrefix(n, "step_0_") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func actionText(a json.RawMessage) string {
	var s string
	if json.Unmarshal(a, &s) == nil {
		return s
	}
	if string(a) == "null" || len(a) == 0 {
		return ""
	}
	return compact(a)
}

// lineSteps returns the steps rows of one traj.jsonl line: one per action
// its action performed (ParseAction), numbered from sub on, or one of kind
// "unknown" when the action does not parse. The rows share base (response,
// raw action, observation, info, timestamp); the line's reward and done
// describe the screen after the whole action, so they go on the last row.
func lineSteps(base schemas.Step, l TrajLine, sub int32, w, h int) ([]schemas.Step, error) {
	acts, err := ParseAction(l.Action, w, h)
	if err != nil {
		acts = []schemas.Action{{Kind: "unknown"}}
	}
	rows := make([]schemas.Step, len(acts))
	for k, a := range acts {
		s := base
		s.Sub = sub + int32(k)
		s.SetAction(a)
		if k == len(acts)-1 {
			s.Reward, s.Done = l.Reward, l.Done
		}
		if err := schemas.Steps.Validate(&s); err != nil {
			return nil, err
		}
		rows[k] = s
	}
	return rows, nil
}

// splitLines splits b at '\n', dropping a final empty line.
func splitLines(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, trimCR(b[:i]))
		b = b[i+1:]
	}
	return out
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// ResultsSummary says what ReadResults found.
type ResultsSummary struct {
	Episodes int
}

// ReadResults reads every episode folder under dir and hands episodes and
// rejects to sink in folder order. Episodes are parsed by up to workers
// goroutines (0: one per CPU, at most 8) and delivered in order, so the
// output does not depend on scheduling; at most 2*workers episodes are in
// memory at once.
func ReadResults(ctx context.Context, dir string, workers int, sink record.Sink) (*ResultsSummary, error) {
	return ReadResultsWith(ctx, dir, ResultsOptions{Workers: workers}, sink)
}

// ResultsOptions tunes ReadResultsWith.
type ResultsOptions struct {
	Workers int // episodes parsed in parallel (0: one per CPU, at most 8)
	// Keep selects the episode folders to read (nil: all).
	Keep func(p *EpisodePath) bool
	// MaxFileBytes caps each file of an episode (0:
	// record.DefaultMaxFileBytes); a larger one is a reject.
	MaxFileBytes int64
}

// ReadResultsWith is ReadResults of the episode folders opts.Keep accepts,
// in the same order, with opts' file size cap.
func ReadResultsWith(ctx context.Context, dir string, opts ResultsOptions, sink record.Sink) (*ResultsSummary, error) {
	eps, err := FindEpisodes(dir)
	if err != nil {
		return nil, err
	}
	if len(eps) == 0 {
		// a wrong folder is a mistake to report, not an import of nothing
		return nil, fmt.Errorf("no OSWorld results found in %s: no folder under it holds %s", dir, strings.Join(episodeMarkers, ", "))
	}
	workers, keep := opts.Workers, opts.Keep
	if keep != nil {
		var mine []EpisodePath
		for i := range eps {
			if keep(&eps[i]) {
				mine = append(mine, eps[i])
			}
		}
		eps = mine
	}
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 8)
	}
	type result struct {
		ep      *record.Episode
		rejects []*record.Error
		err     error
	}
	type job struct {
		p   EpisodePath
		out chan result
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan chan result, 2*workers)
	jobs := make(chan job)
	go func() {
		defer close(slots)
		defer close(jobs)
		for _, p := range eps {
			ch := make(chan result, 1)
			select {
			case slots <- ch:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job{p, ch}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for w := 0; w < workers; w++ {
		go func() {
			for j := range jobs {
				ep, rej, err := ReadEpisode(j.p, sink.KnownTrajectory, opts.MaxFileBytes)
				j.out <- result{ep, rej, err}
			}
		}()
	}
	done := 0
	for ch := range slots {
		var r result
		select {
		case r = <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if r.err != nil {
			return nil, r.err
		}
		for _, re := range r.rejects {
			if err := sink.Reject(re); err != nil {
				return nil, err
			}
		}
		if r.ep != nil {
			if err := sink.Episode(r.ep); err != nil {
				return nil, err
			}
		}
		done++
		sink.Progress(done, len(eps))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &ResultsSummary{Episodes: len(eps)}, nil
}
