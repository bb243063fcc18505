package importer

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/importer/record"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// A record whose key is already taken is "already present" when its
// content is the same, and a reject naming both sources when it is not: a
// second trajectory under one id, dropped silently, would lose data.

// seen is the content hash of a key already taken and where it was given.
type seen struct {
	hash   [32]byte
	file   string // the input file (jsonl), folder (osworld-results) or task origin
	line   int    // 0 when the whole file or folder is meant
	parent bool   // from the parent snapshot, not from this input
}

// where names the source of a taken key for a reject's reason.
func (s seen) where(parent string) string {
	switch {
	case s.parent && s.file != "":
		return fmt.Sprintf("snapshot %s (from %s)", parent, s.file)
	case s.parent:
		return "snapshot " + parent
	case s.line > 0:
		return fmt.Sprintf("%s:%d", s.file, s.line)
	}
	return s.file
}

// lineLoc is a place in an input: a JSONL line or a file.
type lineLoc struct {
	file string
	line int
}

// originLoc splits a task's origin into file and line: FILE:LINE for a
// task embedded in a JSONL line; a task file's origin is its path, and its
// line the one of its id.
func originLoc(t *schemas.Task) (loc lineLoc, jsonlLine bool) {
	if i := strings.LastIndexByte(t.Origin, ':'); i > 0 {
		if n, err := strconv.Atoi(t.Origin[i+1:]); err == nil && n > 0 {
			return lineLoc{t.Origin[:i], n}, true
		}
	}
	return lineLoc{t.Origin, record.KeyLine([]byte(t.Raw), "id")}, false
}

// taskHash is the content of a task as an import gives it: the columns
// read from the input, with raw compared as canonical JSON, so one task
// given again in another file or with other white space or key order is
// the same task. Left out are origin (where it was read) and the columns
// later stages set (source, parents, split, difficulty).
func taskHash(t *schemas.Task) [32]byte {
	raw := t.Raw
	if raw != "" {
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			if b, err := json.Marshal(v); err == nil { // sorted keys
				raw = string(b)
			}
		}
	}
	return hashJSON(struct {
		TaskID, Domain, App, Instruction, Setup, Judge string
		Feasible                                       bool
		Abilities                                      []string
		Raw                                            string
	}{t.TaskID, t.Domain, t.App, t.Instruction, t.Setup, t.Judge, t.Feasible, nilIfEmpty(t.Abilities), raw})
}

// episodeSum accumulates the content of a trajectory: its row and the
// multiset of its step rows. Step rows are added, not chained, so the
// order in which a table scan meets them does not matter; (step, sub) is
// unique within a trajectory, so no two rows cancel.
type episodeSum struct {
	row   [32]byte
	steps [32]byte // sum of the step hashes modulo 2^256
	n     int64
}

func (s *episodeSum) addStep(st *schemas.Step) {
	c := *st
	// A Parquet round trip turns nil lists into empty ones; every list
	// column is normalised so a re-read row hashes as the parsed one.
	c.Keys, c.ResponseIDs, c.Logprobs = nilIfEmpty(c.Keys), nilIfEmpty(c.ResponseIDs), nilIfEmpty(c.Logprobs)
	c.PromptIDs = nilIfEmpty(c.PromptIDs)
	h := hashJSON(&c)
	carry := uint16(0)
	for i := 31; i >= 0; i-- {
		v := uint16(s.steps[i]) + uint16(h[i]) + carry
		s.steps[i], carry = byte(v), v>>8
	}
	s.n++
}

func (s *episodeSum) sum() [32]byte {
	var buf bytes.Buffer
	buf.Write(s.row[:])
	buf.Write(s.steps[:])
	binary.Write(&buf, binary.BigEndian, s.n)
	return sha256.Sum256(buf.Bytes())
}

// episodeHash is the content of an episode: its trajectory row and steps
// (which hold the hashes of its screenshots).
func episodeHash(e *record.Episode) [32]byte {
	s := episodeSum{row: hashJSON(&e.Trajectory)}
	for i := range e.Steps {
		s.addStep(&e.Steps[i])
	}
	return s.sum()
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// hashJSON hashes v's JSON encoding: the rows hold strings, numbers
// (finite, as the validators require) and lists, so it is canonical.
func hashJSON(v any) [32]byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Unreachable for validated rows; hash the error so that such a
		// row never equals another.
		b = []byte("unhashable: " + err.Error())
	}
	return sha256.Sum256(b)
}

// parentHashes returns the content hash of every trajectory of the parent
// snapshot. It reads the trajectories and steps tables once, on the first
// trajectory id an import meets again, so an import of new records only
// pays for the ids it reads at start.
func (c *committer) parentHashes() (map[string][32]byte, error) {
	if c.baseHash != nil {
		return c.baseHash, nil
	}
	sums := make(map[string]*episodeSum, len(c.baseTraj))
	err := lake.ScanTable(c.ctx, c.l, c.base, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
		for i := range rows {
			sums[rows[i].TrajectoryID] = &episodeSum{row: hashJSON(&rows[i])}
		}
		return nil
	})
	if err == nil {
		err = lake.ScanTable(c.ctx, c.l, c.base, schemas.Steps, 4096, func(rows []schemas.Step) error {
			for i := range rows {
				if s := sums[rows[i].TrajectoryID]; s != nil {
					s.addStep(&rows[i])
				}
			}
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("read the parent snapshot's trajectories to compare duplicates: %w", err)
	}
	c.baseHash = make(map[string][32]byte, len(sums))
	for id, s := range sums {
		c.baseHash[id] = s.sum()
	}
	return c.baseHash, nil
}

// known looks up a trajectory id among those the parent or this input
// already gave, with its content hash. An episode that comes as its id
// alone (an OSWorld folder the lake holds, not read again) needs no hash:
// idOnly skips the parent's, which would cost a scan.
func (c *committer) knownTrajectory(id string, idOnly bool) (seen, bool, error) {
	if c.baseTraj[id] {
		if idOnly {
			return seen{parent: true}, true, nil
		}
		hashes, err := c.parentHashes()
		if err != nil {
			return seen{}, false, err
		}
		return seen{hash: hashes[id], parent: true}, true, nil
	}
	s, ok := c.traj[id]
	return s, ok, nil
}

// conflict is the reject of a record whose key prev already took with
// other content.
// keyName names the key in the reason ("trajectory_id"), field is the
// reject's field.
func (c *committer) conflict(loc lineLoc, field, keyName, key, table string, raw []byte, prev seen, extra string) *record.Error {
	reason := fmt.Sprintf("%s %q is already in %s with different content", keyName, key, prev.where(c.rep.Parent))
	if !prev.parent {
		reason = fmt.Sprintf("%s %q is also given at %s with different content; the first is kept", keyName, key, prev.where(""))
	}
	return &record.Error{File: loc.file, Line: loc.line, Field: field, Reason: reason + extra, Raw: string(raw), Table: table}
}
