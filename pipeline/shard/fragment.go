package shard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
)

// FragmentsDir is the prefix under which fragments live. gc only looks
// under data/, so fragment files survive until a merge (--clean) or a
// person removes them.
const FragmentsDir = "fragments/"

// emptyInput names the input of a stage that read an empty lake.
const emptyInput = "empty"

// CommitSpec is what the merged commit will say produced it: the stage's
// lake.CommitInfo with its parameters already encoded. Every shard of a
// run must agree on it byte for byte.
type CommitSpec struct {
	Stage       string          `json:"stage"`
	Params      json.RawMessage `json:"params"`
	Seed        int64           `json:"seed"`
	Inputs      []string        `json:"inputs"`
	Message     string          `json:"message"`
	CodeVersion string          `json:"code_version"`
}

// NewCommitSpec encodes info the way Txn.Commit does.
func NewCommitSpec(info lake.CommitInfo) (CommitSpec, error) {
	params := json.RawMessage("{}")
	if info.Params != nil {
		b, err := json.Marshal(info.Params)
		if err != nil {
			return CommitSpec{}, fmt.Errorf("%s: params: %w", info.Stage, err)
		}
		params = b
	}
	inputs := append([]string{}, info.Inputs...)
	return CommitSpec{Stage: info.Stage, Params: params, Seed: info.Seed, Inputs: inputs, Message: info.Message, CodeVersion: lake.CodeVersion}, nil
}

// Info turns the spec back into the CommitInfo of the merged commit.
func (c CommitSpec) Info() lake.CommitInfo {
	return lake.CommitInfo{Stage: c.Stage, Params: c.Params, Seed: c.Seed, Inputs: c.Inputs, Message: c.Message}
}

// Hash is the parameters hash naming a run's fragment folder: sha256 of the
// canonical JSON of the spec, first 16 hex digits.
func (c CommitSpec) Hash() (string, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, c.Params); err != nil {
		return "", fmt.Errorf("params: %w", err)
	}
	c.Params = buf.Bytes()
	if c.Inputs == nil {
		c.Inputs = []string{}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:16], nil
}

// TableOptions say how a stage's table is written and merged.
type TableOptions struct {
	// Chunk is the number of rows per data file (0: 65,536).
	Chunk int `json:"chunk"`
	// Replace makes the rows the table's whole content; otherwise they are
	// appended to the input's files (and no rows change nothing).
	Replace bool `json:"replace"`
	// Shared marks a table that is not split by shard: every shard writes
	// the same rows (e.g. the task pool a rollout records); the merge checks
	// that they agree and writes them once.
	Shared bool `json:"shared"`
	// Dedup marks a content-addressed table (blobs): equal keys hold equal
	// rows, so shards may overlap and the merge keeps one copy.
	Dedup bool `json:"dedup"`
}

// FragmentTable is one table of a fragment.
type FragmentTable struct {
	TableOptions
	Rows  int64       `json:"rows"`
	Files []lake.File `json:"files"`
}

// Fragment is the manifest of one shard's output.
type Fragment struct {
	Format     int                      `json:"format"`
	Kind       string                   `json:"kind"`
	Stage      string                   `json:"stage"`
	Input      string                   `json:"input"` // snapshot id the shard read ("" for an empty lake)
	ParamsHash string                   `json:"params_hash"`
	Shard      int                      `json:"shard"`
	Of         int                      `json:"of"`
	Commit     CommitSpec               `json:"commit"`
	Tables     map[string]FragmentTable `json:"tables"`
	Summary    json.RawMessage          `json:"summary,omitempty"` // the stage's own report, informational
	WrittenAt  string                   `json:"written_at,omitempty"`
}

const fragmentKind = "cualake-fragment"

// SetDir is the folder of the fragments of one run of a stage.
func SetDir(stage, input, paramsHash string) string {
	if input == "" {
		input = emptyInput
	}
	return FragmentsDir + stage + "/" + input + "/" + paramsHash + "/"
}

// Key is where a fragment's manifest lives.
func (f *Fragment) Key() string {
	return SetDir(f.Stage, f.Input, f.ParamsHash) + fmt.Sprintf("shard-%d-of-%d.json", f.Shard, f.Of)
}

var (
	stageName   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
	fragmentRe  = regexp.MustCompile(`^shard-(\d+)-of-(\d+)\.json$`)
	paramsHexRe = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// writeFragment stores f's manifest, replacing an earlier fragment of the
// same shard (a re-run) and nothing else.
func writeFragment(ctx context.Context, l *lake.Lake, f *Fragment) error {
	body, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("fragment %s: %w", f.Key(), err)
	}
	body = append(body, '\n')
	key, st := f.Key(), l.Storage()
	for attempt := 0; attempt < 8; attempt++ {
		prev, err := st.Get(ctx, key)
		switch {
		case errors.Is(err, lake.ErrNotExist):
			prev = nil
		case err != nil:
			return fmt.Errorf("fragment %s: %w", key, err)
		}
		err = st.CompareAndSwap(ctx, key, prev, body)
		if err == nil {
			return nil
		}
		if !errors.Is(err, lake.ErrConflict) {
			return fmt.Errorf("fragment %s: %w", key, err)
		}
		// Another run of the same shard wrote meanwhile: the last one wins.
	}
	return fmt.Errorf("fragment %s: %w: it kept changing while being replaced", key, lake.ErrConflict)
}

// readFragment reads and checks a fragment manifest.
func readFragment(ctx context.Context, l *lake.Lake, key string) (*Fragment, error) {
	b, err := l.Storage().Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("fragment %s: %w", key, err)
	}
	var f Fragment
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("fragment %s: %w: %v", key, lake.ErrCorrupt, err)
	}
	if f.Kind != fragmentKind || f.Format != lake.FormatVersion {
		return nil, fmt.Errorf("fragment %s: %w: kind %q format %d, want %q format %d", key, lake.ErrCorrupt, f.Kind, f.Format, fragmentKind, lake.FormatVersion)
	}
	return &f, nil
}

// SetInfo describes the fragments of one run found in a lake.
type SetInfo struct {
	Stage      string          `json:"stage"`
	Input      string          `json:"input"` // "" for an empty lake
	ParamsHash string          `json:"params_hash"`
	Dir        string          `json:"dir"`
	Shards     map[int][]int   `json:"shards"` // N -> the shard indexes present
	Params     json.RawMessage `json:"params,omitempty"`
}

// Complete reports whether all n shards are present.
func (s SetInfo) Complete(n int) bool { return len(s.Shards[n]) == n }

// Describe is a one-line summary for messages.
func (s SetInfo) Describe() string {
	var parts []string
	ns := make([]int, 0, len(s.Shards))
	for n := range s.Shards {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	for _, n := range ns {
		parts = append(parts, fmt.Sprintf("%d of %d shards", len(s.Shards[n]), n))
	}
	in := s.Input
	if in == "" {
		in = "(empty lake)"
	}
	return fmt.Sprintf("%s on %s, params %s: %s", s.Stage, short(in), s.ParamsHash, strings.Join(parts, ", "))
}

// List returns the fragment sets in a lake, optionally of one stage.
func List(ctx context.Context, l *lake.Lake, stage string) ([]SetInfo, error) {
	prefix := FragmentsDir
	if stage != "" {
		prefix += stage + "/"
	}
	keys, err := l.Storage().List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list fragments: %w", err)
	}
	sets := map[string]*SetInfo{}
	var order []string
	for _, k := range keys {
		parts := strings.Split(strings.TrimPrefix(k, FragmentsDir), "/")
		if len(parts) != 4 {
			continue // fragment data files live deeper
		}
		m := fragmentRe.FindStringSubmatch(parts[3])
		if m == nil {
			continue
		}
		dir := FragmentsDir + strings.Join(parts[:3], "/") + "/"
		s, ok := sets[dir]
		if !ok {
			in := parts[1]
			if in == emptyInput {
				in = ""
			}
			s = &SetInfo{Stage: parts[0], Input: in, ParamsHash: parts[2], Dir: dir, Shards: map[int][]int{}}
			sets[dir] = s
			order = append(order, dir)
		}
		i, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		s.Shards[n] = append(s.Shards[n], i)
	}
	out := make([]SetInfo, 0, len(order))
	for _, d := range order {
		s := sets[d]
		for n := range s.Shards {
			sort.Ints(s.Shards[n])
		}
		out = append(out, *s)
	}
	return out, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
