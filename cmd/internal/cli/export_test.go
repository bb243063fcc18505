package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // exports are read back by DuckDB, not by the code that wrote them

	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

func duckQuery(t *testing.T, db *sql.DB, q string) [][]any {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// TestExportEndToEnd runs the pipeline on the simulator (pool, random
// rollouts that end in mixed rewards, oracle demonstrations, step
// segments) and checks each export as a trainer would see it, through
// DuckDB and the documented JSON layouts.
func TestExportEndToEnd(t *testing.T) {
	if _, err := tokenizer.Default(); err != nil {
		t.Fatalf("the segment stage needs the Qwen3 tokenizer (make setup installs it): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	for _, args := range [][]string{
		{"lake", "init"},
		{"simdesk", "pool"},
		{"rollout", "--policy", "random", "--n", "4", "--limit-tasks", "3", "--max-turns", "4", "--seed", "1", "--workers", "2"},
		{"rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "3", "--iteration", "1", "--seed", "1", "--workers", "2"},
		{"segment", "--mode", "step", "--window", "2", "--workers", "2"},
	} {
		if out, err := run(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	out := t.TempDir()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lakeFiles := func(table string) string {
		return "read_parquet(" + lit(filepath.Join(dir, "data", table, "*.parquet")) + ")"
	}

	// export verl: every row carries a real screenshot, the rolled-out
	// tasks' the first one of their smallest trajectory.
	pool := filepath.Join(out, "pool.parquet")
	if o, err := run(t, "export", "verl", "--json", pool); err != nil || !strings.Contains(o, `"images_from_rollouts": 3`) {
		t.Fatalf("export verl: %s %v", o, err)
	}
	types := duckQuery(t, db, "SELECT column_type FROM (DESCRIBE SELECT images, prompt FROM read_parquet("+lit(pool)+"))")
	if fmt.Sprint(types) != `[[STRUCT(bytes BLOB, path VARCHAR)[]] [STRUCT("role" VARCHAR, "content" VARCHAR)[]]]` {
		t.Fatalf("verl types %v", types)
	}
	bad := duckQuery(t, db, `SELECT extra_info.task_id FROM read_parquet(`+lit(pool)+`)
		WHERE len(images) != 1 OR sha256(images[1].bytes) != extra_info.image_hash OR images[1].path != extra_info.image_hash || '.png'
		   OR len(string_split(prompt[2].content, '<image>')) != 2 OR NOT starts_with(images[1].bytes::VARCHAR, '\x89PNG')`)
	if len(bad) != 0 {
		t.Fatalf("rows whose image is not their screenshot: %v", bad)
	}
	rolled := duckQuery(t, db, `SELECT count(*) FROM read_parquet(`+lit(pool)+`) p JOIN (
		SELECT tr.task_id, arg_min(s.observation, tr.trajectory_id) AS first FROM `+lakeFiles("trajectories")+` tr
		JOIN `+lakeFiles("steps")+` s ON s.trajectory_id = tr.trajectory_id AND s.step = 0 GROUP BY 1) f
		ON f.task_id = p.extra_info.task_id WHERE p.extra_info.image_hash = f.first AND p.extra_info.image_source LIKE 'rollout:%'`)
	if rolled[0][0] != int64(3) {
		t.Fatalf("%v rows carry their rollout's first screenshot, want 3", rolled)
	}

	// export segments: advantages non-zero exactly where the group's
	// rewards differ, logprobs null exactly where none were recorded, and
	// every image file there.
	segs := filepath.Join(out, "segs")
	if o, err := run(t, "export", "segments", segs); err != nil {
		t.Fatalf("export segments: %s %v", o, err)
	}
	sf := lit(filepath.Join(segs, "segments.parquet"))
	check := duckQuery(t, db, `WITH g AS (SELECT group_id, max(reward) > min(reward) AS mixed FROM `+lakeFiles("trajectories")+` GROUP BY 1)
		SELECT count(*) FILTER (WHERE (s.advantage != 0) != g.mixed), count(*) FILTER (WHERE g.mixed),
		       count(*) FILTER (WHERE (s.logprobs IS NULL) = s.has_logprobs), count(*)
		FROM read_parquet(`+sf+`) s JOIN g USING (group_id)`)
	if check[0][0] != int64(0) || check[0][1] == int64(0) || check[0][2] != int64(0) {
		t.Fatalf("segments: %v (advantage wrong, mixed-group rows, logprobs wrong, rows)", check)
	}
	// Each item's screenshots are those its stream shows, in order: as many
	// as its <|vision_start|> tokens, and in step mode (window 2) the
	// screenshots of steps last_step-2 .. last_step.
	tok, _ := tokenizer.Default()
	vs, ok := tok.TokenID("<|vision_start|>")
	if !ok {
		t.Fatal("the tokenizer has no <|vision_start|>")
	}
	wrong := duckQuery(t, db, fmt.Sprintf(`WITH want AS (
		SELECT s.segment_id, list(st.observation ORDER BY st.step) AS shots FROM read_parquet(`+sf+`) s
		JOIN `+lakeFiles("steps")+` st ON st.trajectory_id = s.trajectory_id AND st.step BETWEEN greatest(0, s.last_step - 2) AND s.last_step
		GROUP BY 1)
		SELECT s.segment_id FROM read_parquet(`+sf+`) s JOIN want USING (segment_id)
		WHERE s.image_hashes != want.shots OR len(list_filter(s.input_ids, x -> x = %d)) != len(s.image_hashes) OR s.image_count != len(s.image_hashes)`, vs))
	if len(wrong) != 0 {
		t.Fatalf("segments whose image_hashes are not their screenshots: %v", wrong)
	}
	// Window mode (K = Delta = 1, ScaleCUA's Algorithm 2): item i keeps the
	// screenshots from turn i * Delta on, at most K + Delta of them.
	if o, err := run(t, "segment", "--mode", "window", "--k", "1", "--delta", "1", "--workers", "2"); err != nil {
		t.Fatalf("segment window: %s %v", o, err)
	}
	win := filepath.Join(out, "win")
	if o, err := run(t, "export", "segments", "--images", "none", win); err != nil {
		t.Fatalf("export segments --images none: %s %v", o, err)
	}
	wf := lit(filepath.Join(win, "segments.parquet"))
	wrong = duckQuery(t, db, `SELECT s.segment_id FROM read_parquet(`+wf+`) s
		LEFT JOIN `+lakeFiles("steps")+` st ON st.trajectory_id = s.trajectory_id AND st.step = s."index"
		WHERE st.observation IS NULL OR s.image_hashes[1] != st.observation OR len(s.image_hashes) > 2 OR s."mode" != 'window'`)
	items := duckQuery(t, db, `SELECT count(*), count(*) FILTER (WHERE "index" > 0) FROM read_parquet(`+wf+`)`)
	if len(wrong) != 0 || items[0][1] == int64(0) {
		t.Fatalf("window items whose screenshots are not turns index.. : %v (items %v)", wrong, items)
	}
	files := duckQuery(t, db, `SELECT DISTINCT unnest(image_paths) FROM read_parquet(`+sf+`)`)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(segs, f[0].(string)))
		if err != nil || "images/"+schemas.HashBytes(b)+".png" != f[0] {
			t.Fatalf("segment image %v: %v", f[0], err)
		}
	}
	if es, _ := os.ReadDir(filepath.Join(segs, "images")); len(es) != len(files) || len(files) == 0 {
		t.Fatalf("%d image files for %d distinct paths", len(es), len(files))
	}

	// export sft: a LLaMA-Factory dataset whose images all exist.
	sft := filepath.Join(out, "sft")
	if o, err := run(t, "export", "sft", "--format", "llamafactory", "--from", "oracle", sft); err != nil || !strings.Contains(o, "of 3 trajectory") {
		t.Fatalf("export sft: %s %v", o, err)
	}
	var info map[string]struct {
		FileName string `json:"file_name"`
	}
	b, _ := os.ReadFile(filepath.Join(sft, "dataset_info.json"))
	if err := json.Unmarshal(b, &info); err != nil || info["cualake_sft"].FileName != "cualake_sft.json" {
		t.Fatalf("dataset_info.json: %v\n%s", err, b)
	}
	var data []struct {
		Messages []struct{ Role, Content string }
		Images   []string
	}
	b, _ = os.ReadFile(filepath.Join(sft, "cualake_sft.json"))
	if err := json.Unmarshal(b, &data); err != nil || len(data) == 0 {
		t.Fatalf("sft data: %v", err)
	}
	for i, d := range data {
		n := 0
		for _, m := range d.Messages {
			n += strings.Count(m.Content, "<image>")
		}
		if n != len(d.Images) || d.Messages[len(d.Messages)-1].Role != "assistant" {
			t.Fatalf("sample %d: %d <image> for %d images", i, n, len(d.Images))
		}
		for _, p := range d.Images {
			if _, err := os.Stat(filepath.Join(sft, p)); err != nil {
				t.Fatalf("sample %d: %v", i, err)
			}
		}
	}
	// A selection naming a missing trajectory: an error naming it, nothing written.
	if _, err := run(t, "export", "sft", "--select", "select 'ghost' as trajectory_id", filepath.Join(out, "sft2")); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("sft with a missing trajectory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "sft2")); err == nil {
		t.Fatal("a failed sft export left its folder")
	}

	// export hf: steps with the Image feature and the features metadata.
	hf := filepath.Join(out, "hf")
	if o, err := run(t, "export", "hf", "--table", "steps", hf); err != nil {
		t.Fatalf("export hf: %s %v", o, err)
	}
	shard := lit(filepath.Join(hf, "data", "train-00000-of-00001.parquet"))
	got := duckQuery(t, db, `SELECT count(*) FILTER (WHERE sha256(observation.bytes) || '.png' != observation.path), count(*) FROM read_parquet(`+shard+`)`)
	steps := duckQuery(t, db, "SELECT count(*) FROM "+lakeFiles("steps"))
	if got[0][0] != int64(0) || got[0][1] != steps[0][0] {
		t.Fatalf("hf shard: %v, steps %v", got, steps)
	}
	kv := duckQuery(t, db, `SELECT decode(value) FROM parquet_kv_metadata(`+shard+`) WHERE key = 'huggingface'`)
	if len(kv) != 1 || !strings.Contains(kv[0][0].(string), `"observation":{"_type":"Image"}`) {
		t.Fatalf("hf metadata %v", kv)
	}

	// export verdicts, and the usage errors.
	if o, err := run(t, "export", "verdicts", filepath.Join(out, "verdicts.json")); err != nil || !strings.Contains(o, "15 trajectory") {
		t.Fatalf("export verdicts: %s %v", o, err)
	}
	for _, args := range [][]string{
		{"export", "hf", filepath.Join(out, "x")},
		{"export", "verl", "--images", "inline", filepath.Join(out, "x.parquet")},
		{"export", "verl", "--segments", "--images", "files", filepath.Join(out, "x.parquet")},
		{"export", "segments", "--images", "pixels", filepath.Join(out, "x")},
		{"export", "sft", "--format", "alpaca", filepath.Join(out, "x")},
	} {
		if _, err := run(t, args...); err == nil || ExitCode(err) != 2 {
			t.Fatalf("%v: %v, want a usage error", args, err)
		}
	}
}
