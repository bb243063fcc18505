package exporter

import (
	"context"
	"encoding/json"
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

// llamaFactoryFile is LLaMA-Factory's multimodal ShareGPT layout (OpenAI
// style): a JSON list of {messages: [{role, content}], images: [path]}.
type llamaFactoryFile []struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Images []string `json:"images"`
}

// TestSFTExport: the oracle's successful trajectory as one conversation per
// turn, with the rollout policy's context (sliding window of screenshots,
// older turns as compact action history), every image written once, and a
// dataset_info.json entry, in the documented layouts.
func TestSFTExport(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	dir := filepath.Join(t.TempDir(), "sft")
	rep, err := SFT(ctx, f.l, f.m, dir, SFTOptions{})
	T := len(f.turns[trajOK])
	if err != nil || rep.Trajectories != 1 || rep.Samples != T || rep.Format != SFTLlamaFactory || rep.File != "cualake_sft.json" {
		t.Fatalf("%+v %v", rep, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cualake_sft.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields() // exactly the documented keys
	var data llamaFactoryFile
	if err := dec.Decode(&data); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	steps, _ := lake.ReadTable(ctx, f.l, f.m, schemas.Steps)
	var ok []schemas.Step
	for _, s := range steps {
		if s.TrajectoryID == trajOK {
			ok = append(ok, s)
		}
	}
	for i, d := range data {
		first := max(0, i-2)
		var hist []string
		for k := 0; k < first; k++ {
			hist = append(hist, ok[k].RawAction)
		}
		if len(d.Messages) != 1+2*(i-first+1) || d.Messages[0].Role != "system" || d.Messages[0].Content != PolicySystemPrompt {
			t.Fatalf("sample %d: %d messages %v", i, len(d.Messages), d.Messages)
		}
		if want := TaskIntro(f.a.Instruction, hist) + "\n<image>"; d.Messages[1].Content != want {
			t.Fatalf("sample %d: first user message %q, want %q", i, d.Messages[1].Content, want)
		}
		images := 0
		for k, m := range d.Messages[1:] {
			role := []string{"user", "assistant"}[k%2]
			images += strings.Count(m.Content, "<image>")
			if m.Role != role {
				t.Fatalf("sample %d message %d: role %s, want %s", i, k+1, m.Role, role)
			}
			if role == "assistant" && m.Content != ok[first+k/2].Response {
				t.Fatalf("sample %d message %d: %q", i, k+1, m.Content)
			}
		}
		if images != len(d.Images) || !reflect.DeepEqual(d.Images, imagePaths(f.turns[trajOK][first:i+1])) {
			t.Fatalf("sample %d: %d <image> for images %v", i, images, d.Images)
		}
		for _, p := range d.Images {
			if img, err := os.ReadFile(filepath.Join(dir, p)); err != nil || "images/"+schemas.HashBytes(img)+".png" != p {
				t.Fatalf("sample %d: image %s: %v", i, p, err)
			}
		}
	}
	if len(data) != T {
		t.Fatalf("%d samples, want %d", len(data), T)
	}
	if T <= 3 {
		t.Fatalf("the fixture's trajectory has %d turns; the history needs more than the window", T)
	}
	var info map[string]any
	b, _ = os.ReadFile(filepath.Join(dir, "dataset_info.json"))
	json.Unmarshal(b, &info)
	want := map[string]any{"cualake_sft": map[string]any{"file_name": "cualake_sft.json", "formatting": "sharegpt",
		"columns": map[string]any{"messages": "messages", "images": "images"},
		"tags":    map[string]any{"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant", "system_tag": "system"}}}
	if !reflect.DeepEqual(info, want) {
		t.Fatalf("dataset_info.json:\n%s", b)
	}

	// Classic ShareGPT, chosen by SQL: conversations of {from, value}.
	dir2 := filepath.Join(t.TempDir(), "sharegpt")
	rep, err = SFT(ctx, f.l, f.m, dir2, SFTOptions{Format: SFTShareGPT, Window: 1, Name: "demo",
		Select: "SELECT trajectory_id FROM trajectories WHERE policy = 'random'"})
	if err != nil || rep.Trajectories != 1 || rep.Samples != 3 || rep.File != "demo.json" {
		t.Fatalf("%+v %v", rep, err)
	}
	var conv []struct {
		Conversations []struct {
			From  string `json:"from"`
			Value string `json:"value"`
		} `json:"conversations"`
		Images []string `json:"images"`
	}
	b, _ = os.ReadFile(filepath.Join(dir2, "demo.json"))
	dec = json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&conv); err != nil || len(conv) != 3 {
		t.Fatalf("%v\n%s", err, b)
	}
	c := conv[2].Conversations
	if len(c) != 3 || c[0].From != "system" || c[1].From != "human" || c[2].From != "gpt" || len(conv[2].Images) != 1 ||
		!strings.Contains(c[1].Value, "Earlier actions:\n1. ") || !strings.HasSuffix(c[1].Value, "\n<image>") {
		t.Fatalf("sharegpt sample: %+v", conv[2])
	}
	b, _ = os.ReadFile(filepath.Join(dir2, "dataset_info.json"))
	json.Unmarshal(b, &info)
	e := info["demo"].(map[string]any)
	if e["file_name"] != "demo.json" || !reflect.DeepEqual(e["columns"], map[string]any{"messages": "conversations", "images": "images"}) ||
		!reflect.DeepEqual(e["tags"], map[string]any{"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt", "system_tag": "system"}) {
		t.Fatalf("dataset_info.json:\n%s", b)
	}
}

func imagePaths(hashes []string) []string {
	out := make([]string, len(hashes))
	for i, h := range hashes {
		out[i] = "images/" + h + ".png"
	}
	return out
}

// TestSFTBadInput: missing trajectories of a selection, missing tables and
// missing blobs are errors naming them, and no output folder is left.
func TestSFTBadInput(t *testing.T) {
	ctx := context.Background()
	f := simLake(t)
	base := t.TempDir()
	for _, tc := range []struct {
		m    *lake.Manifest
		opts SFTOptions
		want string
	}{
		{f.m, SFTOptions{Select: "SELECT 'nope#1' AS trajectory_id UNION ALL SELECT '" + trajOK + "'"}, "nope#1"},
		{f.m, SFTOptions{Select: "SELECT task_id, domain FROM tasks"}, "must return trajectory_id"},
		{f.m, SFTOptions{Select: "SELECT * FROM read_csv('/etc/passwd')"}, "--select"},
		{f.m, SFTOptions{Select: "SELECT trajectory_id FROM trajectories WHERE false"}, "no trajectory ids"},
		{f.without(schemas.Steps.Name), SFTOptions{}, "no steps table"},
		{f.without(schemas.Trajectories.Name), SFTOptions{}, "no trajectories table"},
		{f.withBlobs(t, func(h string) bool { return h != f.turns[trajOK][1] }), SFTOptions{}, f.turns[trajOK][1]},
		{f.m, SFTOptions{From: "failure"}, "want success or oracle"},
	} {
		dir := filepath.Join(base, "out")
		if _, err := SFT(ctx, f.l, tc.m, dir, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%+v: want an error naming %q, got %v", tc.opts, tc.want, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a failed export left %s", dir)
		}
		if es, _ := os.ReadDir(base); len(es) != 0 {
			t.Fatalf("a failed export left %d entries", len(es))
		}
	}
	// The oracle's demonstrations are a selection of their own; a snapshot
	// with none is an error.
	if rep, err := SFT(ctx, f.l, f.m, filepath.Join(base, "o"), SFTOptions{From: FromOracle}); err != nil || rep.Trajectories != 1 {
		t.Fatalf("oracle selection: %+v %v", rep, err)
	}
	if _, err := SFT(ctx, f.l, f.without(schemas.Tasks.Name), filepath.Join(base, "t"), SFTOptions{}); err == nil || !strings.Contains(err.Error(), "no tasks table") {
		t.Fatalf("without tasks: %v", err)
	}
}
