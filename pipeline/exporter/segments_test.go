package exporter

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// segmentTypes are DuckDB's types of a segments export, before the image
// column of the mode.
var segmentTypes = []string{
	"segment_id VARCHAR", "trajectory_id VARCHAR", "task_id VARCHAR", "group_id VARCHAR", "index INTEGER", "mode VARCHAR",
	"input_ids INTEGER[]", "loss_mask TINYINT[]", "logprobs FLOAT[]", "has_logprobs BOOLEAN",
	"prompt_length INTEGER", "response_length INTEGER", "tokens INTEGER", "trainable_tokens INTEGER",
	"image_count INTEGER", "image_tokens INTEGER", "first_step INTEGER", "last_step INTEGER", "trajectory_steps INTEGER",
	"reward DOUBLE", "advantage DOUBLE", "policy_version INTEGER", "tokenizer VARCHAR", "image_hashes VARCHAR[]",
}

// wantImages are the screenshots of f's segments, in order.
func (f *simFixture) wantImages() map[string][]string {
	ok, bad := f.turns[trajOK], f.turns[trajBad]
	return map[string][]string{
		trajOK + "/0":  ok[0:2],
		trajOK + "/1":  ok[1:],
		trajBad + "/0": bad,
	}
}

// TestSegmentsExport: every field a trainer needs, the real advantages,
// logprobs null only where none were recorded, and each item's screenshots
// in order, as hashes and as files written once.
func TestSegmentsExport(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	dir := filepath.Join(t.TempDir(), "segs")
	rep, err := Segments(ctx, f.l, f.m, dir, SegmentsOptions{})
	if err != nil || rep.Rows != 3 || rep.Images != ImagesFiles {
		t.Fatalf("%+v %v", rep, err)
	}
	db := duck(t)
	file := filepath.Join(dir, "segments.parquet")
	checkTypes(t, db, file, append(segmentTypes, "image_paths VARCHAR[]")...)
	want := f.wantImages()
	distinct := map[string]bool{}
	for i, r := range parquetRows(t, db, file) {
		s := f.segs[i]
		if r["segment_id"] != s.SegmentID || r["trajectory_id"] != s.TrajectoryID || r["task_id"] != "A" || r["mode"] != "window" ||
			r["index"] != s.Index || r["first_step"] != s.FirstStep || r["last_step"] != s.LastStep || r["trajectory_steps"] != s.TrajectorySteps ||
			r["advantage"] != s.Advantage || r["reward"] != s.Reward || r["policy_version"] != int32(2) || r["tokenizer"] != s.Tokenizer ||
			r["image_count"] != s.Images || r["prompt_length"] != int32(1) || r["response_length"] != int32(3) || r["has_logprobs"] != s.HasLogprobs {
			t.Fatalf("row %d: %v", i, r)
		}
		if !reflect.DeepEqual(r["input_ids"], []any{10 + s.Index, int32(11), int32(12), int32(13)}) || !reflect.DeepEqual(r["loss_mask"], []any{int8(0), int8(1), int8(0), int8(1)}) {
			t.Fatalf("row %d: ids %v mask %v", i, r["input_ids"], r["loss_mask"])
		}
		if s.HasLogprobs && !reflect.DeepEqual(r["logprobs"], []any{float32(0), float32(-0.5), float32(0), float32(-0.25)}) || !s.HasLogprobs && r["logprobs"] != nil {
			t.Fatalf("row %d: logprobs %v with has_logprobs %v", i, r["logprobs"], s.HasLogprobs)
		}
		var hashes []string
		for k, h := range r["image_hashes"].([]any) {
			hashes = append(hashes, h.(string))
			p := r["image_paths"].([]any)[k].(string)
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil || schemas.HashBytes(b) != h || p != "images/"+h.(string)+".png" {
				t.Fatalf("row %d image %d: %s: %v", i, k, p, err)
			}
			distinct[h.(string)] = true
		}
		if !reflect.DeepEqual(hashes, want[s.SegmentID]) {
			t.Fatalf("row %d: images %v, want %v", i, hashes, want[s.SegmentID])
		}
	}
	files, _ := os.ReadDir(filepath.Join(dir, "images"))
	if len(files) != len(distinct) || rep.ImageFiles != len(distinct) {
		t.Fatalf("%d image files (report %d), want %d, each once", len(files), rep.ImageFiles, len(distinct))
	}

	// Inline: the same hashes, with the bytes in an images column of Image
	// structs, in one file (export verl --segments).
	out := filepath.Join(t.TempDir(), "segments.parquet")
	if vrep, err := Verl(ctx, f.l, f.m, out, VerlOptions{Segments: true, Images: ImagesInline}); err != nil || vrep.Rows != 3 {
		t.Fatalf("%+v %v", vrep, err)
	}
	checkTypes(t, db, out, append(segmentTypes, "images STRUCT(bytes BLOB, path VARCHAR)[]")...)
	for i, r := range parquetRows(t, db, out) {
		imgs := r["images"].([]any)
		if len(imgs) != len(want[f.segs[i].SegmentID]) {
			t.Fatalf("row %d: %d images", i, len(imgs))
		}
		for k, img := range imgs {
			im := img.(map[string]any)
			h := want[f.segs[i].SegmentID][k]
			if schemas.HashBytes(im["bytes"].([]byte)) != h || im["path"] != h+".png" {
				t.Fatalf("row %d image %d: %v", i, k, im["path"])
			}
		}
	}
	if !strings.Contains(parquetKV(t, db, out)[HFMetadataKey], `"images":[{"_type":"Image"}]`) {
		t.Fatal("inline segments lack the Image features")
	}
	// None: hashes only.
	none := filepath.Join(t.TempDir(), "none.parquet")
	if _, err := Verl(ctx, f.l, f.m, none, VerlOptions{Segments: true}); err != nil {
		t.Fatal(err)
	}
	checkTypes(t, db, none, segmentTypes...)
}

// TestSegmentsBadInput: a missing table or blob is an error naming it, and
// no output is left.
func TestSegmentsBadInput(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	base := t.TempDir()
	for _, tc := range []struct {
		m    *lake.Manifest
		want string
	}{
		{f.without(schemas.Segments.Name), "no segments table"},
		{f.without(schemas.Steps.Name), "no steps table"},
		{f.withBlobs(t, func(h string) bool { return h != f.turns[trajBad][2] }), f.turns[trajBad][2]},
	} {
		dir := filepath.Join(base, "out")
		if _, err := Segments(ctx, f.l, tc.m, dir, SegmentsOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("want an error naming %s, got %v", tc.want, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a failed export left %s", dir)
		}
		if es, _ := os.ReadDir(base); len(es) != 0 {
			t.Fatalf("a failed export left %d entries", len(es))
		}
	}
	// A missing blob is fine with --images none: only hashes are written.
	m := f.withBlobs(t, func(string) bool { return false })
	if _, err := Segments(ctx, f.l, m, filepath.Join(base, "none"), SegmentsOptions{Images: ImagesNone}); err != nil {
		t.Fatal(err)
	}
}
