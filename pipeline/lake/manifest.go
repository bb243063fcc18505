package lake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"github.com/cualake/cualake/schemas"
)

// FormatVersion is the on-disk format of manifests and refs
// (docs/lake-format.md).
const FormatVersion = 1

// CodeVersion is recorded in every manifest. It is part of the content hash:
// the same inputs under a different code version are a different snapshot.
// Bump it with every change that alters a stage's output for the same
// inputs, params and seed: a run does not resume a step another version
// committed (loop.ErrOtherCodeVersion), since run ids hash the config and
// not the code. 0.1.1: train --advantage naive aggregates as EvoCUA-1.5
// eq. 7 (591d7d0), and the resume rule itself. 0.1.2: the causal policy's
// pointer view lists a crowded screen's table values instead of its empty
// cells, names a cell by column header and row label ("cell w4 w6"), and
// marks a typed text's trailing tab ("tab"). 0.1.3: the simulator's oracle
// saves a copy through Save As and replaces words through Find and
// Replace, and the pointer view types instruction lines ("lines 1 -2") and
// sets sliders by an instruction number ("q1 at w6"), so held-out
// instances of those families act like training ones. 0.1.4: the pointer
// view lists up to 40 elements (32 before), keeps a crowded table's empty
// cells and column headers that the instruction names ("in cell B6", "by
// the Amount column"), and writes a formula over the instruction's range
// as "formula sum w19", so no spreadsheet action needs coordinate tokens;
// a cell of a table written in the instruction is typed as "cell R C".
// 0.1.5: a checkpoint policy draws again (up to rollout --redraws, 4) in a
// turn whose response is no action on the screen, instead of executing it.
// 0.1.6: the causal policy's last layer computes queries, feed-forward and
// logits only at the rows a loss or a decoding step reads (the same model;
// its floats round differently). 0.1.7: the pointer view's decoder reads a
// response only when the whole of it is the action, so a response that runs
// on past its action ("type w6 w6 w6 w6", "done e17") is no action, and the
// checkpoint policy draws again instead of executing its first words.
// 0.1.8: the built-in pool's held-out split is stratified by family (each
// family holds out a fifth of its parameter values, 58 tasks in all) where
// a per-value hash held out 65, up to 5 of a family's 8. 0.1.9: the pointer
// language names an element by the instruction word that decides it ("click
// menu_item like w10" for "Sort descending" when the instruction says "in
// descending order", "click list_item like w10" for the first ".txt" file),
// and the oracle moves files in listing order, top file first. 0.1.10:
// instruction words from the first quote or line break on are counted from
// the end ("click w-1" for the value in 'set "Font size" to Large.'), so a
// word after a quoted name or a body of any length has one marker. 0.1.11:
// the editor has Go to Line (Ctrl+G) and shift+End, and the oracle rewrites
// a changed line with them ("change line 3 to read ...") where it clicked
// the caret into the line by coordinates and deleted the old text key by
// key. 0.1.12: train --dropout (default 0.1 for sft and rft; config keys
// warmstart.dropout and rft.dropout, default 0, which make demo sets to
// 0.1); at 0 every result is 0.1.11's, so `cualake run`'s default loop
// computes 0.1.11's bits. 0.1.13: synthesize --from-trajectories leaves
// held-out tasks out (a held-out task's evaluation rollouts were split and
// composed into training tasks); config keys rft.augment (default 0),
// rft.restart (default false), rft.balance (default none) and
// warmstart.cover_by (default family),
// so every config without them computes 0.1.12's bits.
const CodeVersion = "cualake/0.1.13"

// File is one immutable data file of a table.
type File struct {
	Path   string `json:"path"` // key in the lake: data/<table>/<sha256>.parquet
	SHA256 string `json:"sha256"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
}

// TableFiles is a table's state in one snapshot.
type TableFiles struct {
	SchemaVersion    int      `json:"schema_version"`
	PartitionColumns []string `json:"partition_columns"`
	Rows             int64    `json:"rows"`
	Files            []File   `json:"files"`
}

// Manifest is one snapshot: what produced it and every table's files.
type Manifest struct {
	Format      int                   `json:"format"`
	ID          string                `json:"id"`
	Parent      string                `json:"parent"`
	Stage       string                `json:"stage"`
	Params      json.RawMessage       `json:"params"`
	Seed        int64                 `json:"seed"`
	Inputs      []string              `json:"inputs"`
	CodeVersion string                `json:"code_version"`
	Message     string                `json:"message"`
	Changed     []string              `json:"changed"` // tables this commit replaced or appended to
	Tables      map[string]TableFiles `json:"tables"`
	// CommittedAt is wall-clock time, informational only: it is left out of
	// the content hash so that a re-run gives the same snapshot id.
	CommittedAt string `json:"committed_at,omitempty"`
	// StartedAt is when the commit's transaction began (Begin), likewise
	// informational and left out of the hash: CommittedAt - StartedAt is the
	// stage's own wall time, which the parent's CommittedAt cannot give
	// when the parent is an earlier commit of identical content (a
	// manifest is written once, so it keeps its first commit's times).
	StartedAt string `json:"started_at,omitempty"`
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ContentHash is the snapshot id: sha256 of the canonical JSON of the
// manifest without its id and wall-clock times.
func (m *Manifest) ContentHash() (string, error) {
	c := *m
	c.ID, c.CommittedAt, c.StartedAt = "", "", ""
	b, err := json.Marshal(&c) // struct fields in order, map keys sorted: canonical
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// Encode returns the manifest's file bytes.
func (m *Manifest) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// TableNames returns the snapshot's table names, sorted.
func (m *Manifest) TableNames() []string {
	out := make([]string, 0, len(m.Tables))
	for n := range m.Tables {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DecodeManifest parses and checks manifest bytes read from key: format,
// id, table names and schema versions, file entries.
func DecodeManifest(key string, b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w: %v", key, ErrCorrupt, err)
	}
	if m.Format != FormatVersion {
		return nil, fmt.Errorf("manifest %s: field format is %d, this cualake reads %d", key, m.Format, FormatVersion)
	}
	if !idPattern.MatchString(m.ID) {
		return nil, fmt.Errorf("manifest %s: %w: field id %q is not a sha256", key, ErrCorrupt, m.ID)
	}
	h, err := m.ContentHash()
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", key, err)
	}
	if h != m.ID {
		return nil, fmt.Errorf("manifest %s: %w: content hashes to %s, not its id %s", key, ErrCorrupt, h, m.ID)
	}
	for name, t := range m.Tables {
		info, ok := schemas.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("manifest %s: table %q is not a known table", key, name)
		}
		if t.SchemaVersion != info.Version {
			return nil, fmt.Errorf("manifest %s: table %s has schema version %d, this cualake knows version %d",
				key, name, t.SchemaVersion, info.Version)
		}
		var rows int64
		for i, f := range t.Files {
			if !idPattern.MatchString(f.SHA256) || f.Path != dataKey(name, f.SHA256) || f.Rows < 0 || f.Bytes < 0 {
				return nil, fmt.Errorf("manifest %s: table %s file %d: %w: bad entry %+v", key, name, i, ErrCorrupt, f)
			}
			rows += f.Rows
		}
		if rows != t.Rows {
			return nil, fmt.Errorf("manifest %s: table %s: %w: files hold %d rows, table says %d", key, name, ErrCorrupt, rows, t.Rows)
		}
	}
	return &m, nil
}

func dataKey(table, sha string) string { return "data/" + table + "/" + sha + ".parquet" }

func snapshotKey(id string) string { return "snapshots/" + id + ".json" }
