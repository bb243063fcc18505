package exporter

import (
	"bytes"
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

var imageTypes = []string{
	"data_source VARCHAR",
	`prompt STRUCT("role" VARCHAR, "content" VARCHAR)[]`,
	`images STRUCT(bytes BLOB, path VARCHAR)[]`,
	"ability VARCHAR",
	"reward_model STRUCT(style VARCHAR, ground_truth VARCHAR)",
	`extra_info STRUCT(split VARCHAR, "index" BIGINT, task_id VARCHAR, "domain" VARCHAR, app VARCHAR, instruction VARCHAR, setup VARCHAR, feasible BOOLEAN, "source" VARCHAR, origin VARCHAR, image_hash VARCHAR, image_source VARCHAR, seed BIGINT)`,
}

// TestVerlImages: rows in verl's multimodal form carry the task's first
// screenshot (from the rollout with the smallest id, else rendered by the
// simulator), one <image> per image, and the features datasets reads.
func TestVerlImages(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	out := filepath.Join(t.TempDir(), "pool.parquet")
	// C (imported chrome) has no screenshot: refused by default, naming it,
	// and nothing is written.
	if _, err := Verl(ctx, f.l, f.m, out, VerlOptions{}); !errors.Is(err, ErrNoImage) || !strings.Contains(err.Error(), "(C)") {
		t.Fatalf("export with a task without screenshot: %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused export left a file: %v", err)
	}
	rep, err := Verl(ctx, f.l, f.m, out, VerlOptions{SkipWithoutImage: true})
	if err != nil || rep.Rows != 2 || rep.Skipped != 1 || rep.FromRollouts != 1 || rep.Rendered != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	db := duck(t)
	checkTypes(t, db, out, imageTypes...)
	rendered, err := RenderInitial(&f.b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		hash, source string
		seed         int64
		png          []byte
	}{
		"A": {f.turns[trajOK][0], "rollout:" + trajOK, 7, f.blobs[f.turns[trajOK][0]]},
		"B": {rendered.Hash, "simdesk", RenderSeed, rendered.Bytes},
	}
	rows := parquetRows(t, db, out)
	for i, r := range rows {
		ex := r["extra_info"].(map[string]any)
		id := ex["task_id"].(string)
		w := want[id]
		imgs := r["images"].([]any)
		img := imgs[0].(map[string]any)
		prompt := r["prompt"].([]any)
		sys, user := prompt[0].(map[string]any), prompt[1].(map[string]any)
		task := map[string]schemas.Task{"A": f.a, "B": f.b}[id]
		if len(imgs) != 1 || !bytes.Equal(img["bytes"].([]byte), w.png) || img["path"] != w.hash+".png" || schemas.HashBytes(img["bytes"].([]byte)) != w.hash {
			t.Fatalf("row %d (%s): image %v, want the %s screenshot %s", i, id, img["path"], w.source, w.hash)
		}
		if len(prompt) != 2 || sys["role"] != "system" || sys["content"] != PolicySystemPrompt || user["role"] != "user" ||
			user["content"] != "Task: "+task.Instruction+"\n<image>" || strings.Count(user["content"].(string), ImageToken) != len(imgs) {
			t.Fatalf("row %d: prompt %v", i, prompt)
		}
		if ex["image_hash"] != w.hash || ex["image_source"] != w.source || ex["seed"] != w.seed || ex["index"] != int64(i) ||
			r["ability"] != task.Domain || r["data_source"] != "cualake/"+task.Domain || ex["setup"] != task.Setup {
			t.Fatalf("row %d: %v / %v", i, r["ability"], ex)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	// The features metadata datasets reads: images a list of Image.
	var meta struct {
		Info struct {
			Features map[string]json.RawMessage `json:"features"`
		} `json:"info"`
	}
	kv := parquetKV(t, db, out)
	if err := json.Unmarshal([]byte(kv[HFMetadataKey]), &meta); err != nil {
		t.Fatalf("huggingface metadata %q: %v", kv[HFMetadataKey], err)
	}
	feats := meta.Info.Features
	if string(feats["images"]) != `[{"_type":"Image"}]` || string(feats["data_source"]) != `{"dtype":"string","_type":"Value"}` ||
		string(feats["prompt"]) != `[{"role":{"dtype":"string","_type":"Value"},"content":{"dtype":"string","_type":"Value"}}]` ||
		!strings.Contains(string(feats["extra_info"]), `"seed":{"dtype":"int64","_type":"Value"}`) {
		t.Fatalf("features %s", kv[HFMetadataKey])
	}
	// Deterministic, and --text-only keeps the old form.
	again := filepath.Join(t.TempDir(), "again.parquet")
	if _, err := Verl(ctx, f.l, f.m, again, VerlOptions{SkipWithoutImage: true}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Fatal("two exports of one snapshot differ")
	}
	text := filepath.Join(t.TempDir(), "text.parquet")
	if rep, err := Verl(ctx, f.l, f.m, text, VerlOptions{TextOnly: true}); err != nil || rep.Rows != 3 {
		t.Fatalf("%+v %v", rep, err)
	}
	checkTypes(t, db, text, textOnlyTypes...)
	for _, r := range parquetRows(t, db, text) {
		if r["extra_info"].(map[string]any)["task_id"] == "C" && (r["ability"] != "chrome" || r["extra_info"].(map[string]any)["app"] != "chrome") {
			t.Fatalf("C: ability %v, extra_info %v", r["ability"], r["extra_info"])
		}
	}
}

// TestVerlMissingBlob: a screenshot the blobs table lacks is an error
// naming its hash, and the existing output is left as it was.
func TestVerlMissingBlob(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	gone := f.turns[trajOK][0]
	m := f.withBlobs(t, func(h string) bool { return h != gone })
	out := filepath.Join(t.TempDir(), "pool.parquet")
	os.WriteFile(out, []byte("earlier export"), 0o644)
	if _, err := Verl(ctx, f.l, m, out, VerlOptions{SkipWithoutImage: true}); !errors.Is(err, lake.ErrNotExist) || !strings.Contains(err.Error(), gone) {
		t.Fatalf("export with a missing blob: %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "earlier export" {
		t.Fatalf("the output now holds %q", b)
	}
	if es, _ := os.ReadDir(filepath.Dir(out)); len(es) != 1 {
		t.Fatalf("%d entries beside the output, want 1", len(es))
	}
}
