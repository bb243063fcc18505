package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// hfFeatures reads the features datasets would see in a shard.
func hfFeatures(t *testing.T, kv map[string]string) map[string]json.RawMessage {
	t.Helper()
	var meta struct {
		Info struct {
			Features map[string]json.RawMessage `json:"features"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(kv[HFMetadataKey]), &meta); err != nil {
		t.Fatalf("huggingface metadata %q: %v", kv[HFMetadataKey], err)
	}
	return meta.Info.Features
}

// TestHFTable: a table as datasets-style shards, its screenshot hashes as
// Image features with the PNG bytes, the features metadata and a card.
func TestHFTable(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	dir := filepath.Join(t.TempDir(), "steps")
	rep, err := HF(ctx, f.l, f.m, dir, HFOptions{Table: "steps", ShardRows: 4})
	rows := len(f.turns[trajOK]) + len(f.turns[trajBad])
	shards := (rows + 3) / 4
	if err != nil || rep.Rows != rows || len(rep.Shards) != shards || rep.Images[0] != "observation" {
		t.Fatalf("%+v %v", rep, err)
	}
	for i, s := range rep.Shards {
		if want := "data/train-0000" + string(rune('0'+i)) + "-of-0000" + string(rune('0'+shards)) + ".parquet"; s != want {
			t.Fatalf("shard %d named %s, want %s", i, s, want)
		}
	}
	db := duck(t)
	glob := filepath.Join(dir, "data", "train-*.parquet")
	got := parquetTypes(t, db, filepath.Join(dir, rep.Shards[0]))
	want := map[string]string{"trajectory_id": "VARCHAR", "step": "INTEGER", "x": "INTEGER", "keys": "VARCHAR[]",
		"observation": "STRUCT(bytes BLOB, path VARCHAR)", "response_ids": "INTEGER[]", "logprobs": "FLOAT[]", "reward": "DOUBLE", "done": "BOOLEAN"}
	for _, g := range got {
		name, typ, _ := strings.Cut(g, " ")
		if w, ok := want[name]; ok && typ != w {
			t.Fatalf("column %s is %s, want %s", name, typ, w)
		}
		delete(want, name)
	}
	if len(want) != 0 {
		t.Fatalf("columns missing: %v (have %v)", want, got)
	}
	n := 0
	for _, r := range parquetRows(t, db, glob) {
		img := r["observation"].(map[string]any)
		b := img["bytes"].([]byte)
		if h := schemas.HashBytes(b); img["path"] != h+".png" || f.blobs[h] == nil {
			t.Fatalf("row %d: image %v", n, img["path"])
		}
		n++
	}
	if n != rows {
		t.Fatalf("%d rows read back, want %d", n, rows)
	}
	feats := hfFeatures(t, parquetKV(t, db, filepath.Join(dir, rep.Shards[0])))
	if string(feats["observation"]) != `{"_type":"Image"}` || string(feats["keys"]) != `[{"dtype":"string","_type":"Value"}]` ||
		string(feats["step"]) != `{"dtype":"int32","_type":"Value"}` {
		t.Fatalf("features: %v", feats)
	}
	card, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if !strings.HasPrefix(string(card), "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train-*\n---\n") ||
		!strings.Contains(string(card), `load_dataset("parquet", data_files={"train": "data/train-*.parquet"})`) {
		t.Fatalf("card:\n%s", card)
	}
}

// TestHFQuery: any query, nested types included, with an explicit image
// list column.
func TestHFQuery(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	dir := filepath.Join(t.TempDir(), "q")
	q := `SELECT trajectory_id, list(observation ORDER BY step) AS shots, {'n': count(*)::INTEGER, 'kinds': list(action_kind ORDER BY step)} AS summary,
	      max(step)::TINYINT AS last FROM steps GROUP BY trajectory_id ORDER BY trajectory_id`
	rep, err := HF(ctx, f.l, f.m, dir, HFOptions{SQL: q, Images: []string{"shots"}, Split: "test"})
	if err != nil || rep.Rows != 2 || rep.Shards[0] != "data/test-00000-of-00001.parquet" {
		t.Fatalf("%+v %v", rep, err)
	}
	db := duck(t)
	file := filepath.Join(dir, rep.Shards[0])
	checkTypes(t, db, file, "trajectory_id VARCHAR", "shots STRUCT(bytes BLOB, path VARCHAR)[]",
		`summary STRUCT(n INTEGER, kinds VARCHAR[])`, "last TINYINT")
	for i, r := range parquetRows(t, db, file) {
		id := r["trajectory_id"].(string)
		shots := r["shots"].([]any)
		if len(shots) != len(f.turns[id]) || r["summary"].(map[string]any)["n"] != int32(len(f.turns[id])) || r["last"] != int8(len(f.turns[id])-1) {
			t.Fatalf("row %d: %v", i, r["summary"])
		}
		for k, s := range shots {
			if schemas.HashBytes(s.(map[string]any)["bytes"].([]byte)) != f.turns[id][k] {
				t.Fatalf("row %d shot %d differs", i, k)
			}
		}
	}
	feats := hfFeatures(t, parquetKV(t, db, file))
	if string(feats["shots"]) != `[{"_type":"Image"}]` || string(feats["summary"]) != `{"n":{"dtype":"int32","_type":"Value"},"kinds":[{"dtype":"string","_type":"Value"}]}` ||
		string(feats["last"]) != `{"dtype":"int8","_type":"Value"}` {
		t.Fatalf("features %v", feats)
	}
}

// TestHFBadInput: a missing table, a missing blob, a type without a
// datasets form and a refused statement are errors naming what is wrong,
// and no output is left.
func TestHFBadInput(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	base := t.TempDir()
	for _, tc := range []struct {
		m    *lake.Manifest
		opts HFOptions
		want string
	}{
		{f.without(schemas.Segments.Name), HFOptions{Table: "segments"}, "no segments table"},
		{f.m, HFOptions{Table: "nope"}, `no table "nope"`},
		{f.withBlobs(t, func(h string) bool { return h != f.turns[trajBad][2] }), HFOptions{Table: "steps"}, f.turns[trajBad][2]},
		{f.m, HFOptions{SQL: "SELECT 1::HUGEINT AS h"}, "column h: DuckDB type HUGEINT"},
		{f.m, HFOptions{SQL: "SELECT task_id FROM tasks", Images: []string{"setup"}}, "--image setup"},
		{f.m, HFOptions{SQL: "SELECT * FROM read_parquet('/etc/passwd')"}, "snapshot's tables"},
	} {
		dir := filepath.Join(base, "out")
		if _, err := HF(ctx, f.l, tc.m, dir, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%+v: want an error naming %q, got %v", tc.opts, tc.want, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a failed export left %s", dir)
		}
		if es, _ := os.ReadDir(base); len(es) != 0 {
			t.Fatalf("a failed export left %d entries", len(es))
		}
	}
}

// TestVerdicts: the lookup file the reward example reads.
func TestVerdicts(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	out := filepath.Join(t.TempDir(), "verdicts.json")
	rep, err := Verdicts(ctx, f.l, f.m, out)
	if err != nil || rep.Trajectories != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
	var v VerdictsFile
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &v); err != nil || v.Format != VerdictsFormat || v.Snapshot != f.m.ID ||
		v.Trajectories[trajOK] != (Verdict{TaskID: "A", Reward: 1, Outcome: "success"}) || v.Trajectories[trajBad].Outcome != "failure" {
		t.Fatalf("%v\n%s", err, b)
	}
	if _, err := Verdicts(ctx, f.l, f.without(schemas.Trajectories.Name), out); err == nil || !strings.Contains(err.Error(), "no trajectories table") {
		t.Fatalf("without trajectories: %v", err)
	}
}
