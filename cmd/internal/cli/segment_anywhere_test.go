package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/tokenizer"
)

// TestSegmentFromAnyDirectory runs `segment` from a folder outside the
// checkout (no go.mod above it) with the tokenizer only in the user cache
// folder, where `make setup` puts it; and with an empty cache the error
// names the places looked in and the command that fetches it.
func TestSegmentFromAnyDirectory(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatalf("%v (the tests need the Qwen3 tokenizer: run make setup)", err)
	}
	real, err := tokenizer.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "lake")
	segmentFixture(t, dir, tok, false)

	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv(tokenizer.EnvTokenizer, "")
	t.Setenv("CUALAKE_LAKE", "")
	elsewhere := t.TempDir()
	t.Chdir(elsewhere) // like /tmp: no checkout, no go.mod above

	_, err = run(t, "segment", "--lake", dir, "--mode", "trajectory", "--json")
	want := filepath.Join(cache, "cualake", "tokenizer", filepath.FromSlash(tokenizer.PackageRelPath), filepath.FromSlash(tokenizer.ModelRelPath))
	if !errors.Is(err, tokenizer.ErrNotFound) || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "$"+tokenizer.EnvTokenizer) || !strings.Contains(err.Error(), "make setup") {
		t.Fatalf("segment with an empty cache: %v; want an error naming %s, $%s and `make setup`", err, want, tokenizer.EnvTokenizer)
	}

	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, want); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "segment", "--lake", dir, "--mode", "trajectory", "--json")
	if err != nil {
		t.Fatalf("segment from %s: %v\n%s", elsewhere, err, out)
	}
	var res segmentOut
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if res.Summary.Items != 5 {
		t.Fatalf("segment from another directory made %d items, want 5 (one per non-empty trajectory)\n%s", res.Summary.Items, out)
	}
}
