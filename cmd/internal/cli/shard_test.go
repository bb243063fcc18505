package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/lake/s3store"
	"github.com/cualake/cualake/pipeline/lake/storagetest"
)

// runSnapshot runs a --json command and returns the snapshot it reports.
func runSnapshot(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res struct{ Snapshot string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Snapshot == "" {
		t.Fatalf("no snapshot in %q (%v)", out, err)
	}
	return res.Snapshot
}

// shardedRollout runs the N shards of a rollout (in reverse order, as a
// cluster might finish them) and merges them.
func shardedRollout(t *testing.T, lakeURL, in string, n int, args ...string) string {
	t.Helper()
	for i := n - 1; i >= 0; i-- {
		a := append([]string{"rollout", "--lake", lakeURL, "--json", "--shard", fmt.Sprintf("%d/%d", i, n)}, args...)
		if in != "" {
			a = append(a, "--in", in)
		}
		out, err := run(t, a...)
		if err != nil || !strings.Contains(out, `"fragment"`) {
			t.Fatalf("shard %d/%d: %v\n%s", i, n, err, out)
		}
	}
	if in == "" {
		in = "empty"
	}
	return runSnapshot(t, "lake", "merge", "--lake", lakeURL, "--stage", "rollout", "--in", in, "--shards", fmt.Sprint(n), "--clean", "--json")
}

var (
	oracleArgs = []string{"--policy", "oracle", "--n", "2", "--limit-tasks", "7", "--seed", "3", "--workers", "2"}
	randomArgs = []string{"--policy", "random", "--n", "2", "--max-turns", "4", "--limit-tasks", "7", "--seed", "9", "--workers", "2"}
)

func TestShardedRolloutEqualsUnsharded(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "ref")
	want1 := runSnapshot(t, append([]string{"rollout", "--lake", ref, "--json"}, oracleArgs...)...)
	want2 := runSnapshot(t, append([]string{"rollout", "--lake", ref, "--json"}, randomArgs...)...)
	for _, n := range []int{1, 2, 3, 7} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("n", n))
		got := shardedRollout(t, dir, "", n, oracleArgs...)
		if got != want1 {
			t.Fatalf("N=%d: merged snapshot %s, unsharded %s", n, got, want1)
		}
		if n == 3 || n == 7 {
			// A second iteration on a non-empty input (known screenshots
			// are not stored again).
			if got := shardedRollout(t, dir, got, n, randomArgs...); got != want2 {
				t.Fatalf("N=%d, second rollout: merged %s, unsharded %s", n, got, want2)
			}
		}
		if out, err := run(t, "lake", "verify", "--lake", dir); err != nil {
			t.Fatalf("N=%d: verify: %v\n%s", n, err, out)
		}
	}
}

func TestShardRefusalsAndRerun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if _, err := run(t, "rollout", "--shard", "3/3"); ExitCode(err) != ExitUsage {
		t.Fatalf("--shard 3/3: %v", err)
	}
	args := []string{"rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "4", "--tree-only", "--workers", "1"}
	if out, err := run(t, append(args, "--shard", "0/2")...); err != nil || !strings.Contains(out, "cualake lake merge --stage rollout --in empty --shards 2") {
		t.Fatalf("shard 0/2: %v\n%s", err, out)
	}
	out, err := run(t, "lake", "merge", "--stage", "rollout", "--in", "empty")
	if err == nil || ExitCode(err) != ExitFailure || !strings.Contains(err.Error(), "shard(s) 1 of 2 missing") {
		t.Fatalf("merge with a missing shard: %v\n%s", err, out)
	}
	if out, _ := run(t, "lake", "log"); !strings.Contains(out, "no snapshots") {
		t.Fatalf("a shard or a refused merge committed:\n%s", out)
	}
	// A failed shard is re-run alone: it replaces its own fragment.
	for i := 0; i < 2; i++ {
		if out, err := run(t, append(args, "--shard", "1/2")...); err != nil {
			t.Fatalf("shard 1/2: %v\n%s", err, out)
		}
	}
	if out, err := run(t, "lake", "fragments"); err != nil || !strings.Contains(out, "2 of 2 shards") {
		t.Fatalf("fragments: %v\n%s", err, out)
	}
	if out, err := run(t, "lake", "merge", "--stage", "rollout", "--in", "empty"); err != nil || !strings.Contains(out, "merged 2 shards of rollout") {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	// Whole-input stages refuse --shard through the shared helper.
	app := &cli.App{Flags: []cli.Flag{shardFlag}, Action: func(c *cli.Context) error {
		_, err := parseShard(c, "sample")
		return err
	}}
	err = app.RunContext(context.Background(), []string{"x", "--shard", "0/2"})
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "sample cannot be sharded") {
		t.Fatalf("sample --shard: %v", err)
	}
}

func TestLakeMergeIsRegistered(t *testing.T) {
	for _, c := range App().Commands {
		if c.Name != "lake" {
			continue
		}
		found := 0
		for _, s := range c.Subcommands {
			if s.Name == "merge" || s.Name == "fragments" {
				found++
			}
		}
		if found != 2 {
			t.Fatalf("lake has %d of merge and fragments", found)
		}
		return
	}
	t.Fatal("no lake command")
}

// TestS3Lake runs the CLI against a lake on a loopback S3 server: a sharded
// rollout merged there equals an unsharded one in a folder, and query
// answers through the cache.
func TestS3Lake(t *testing.T) {
	srv := storagetest.StartVersityGW(t)
	srv.SetEnv(t)
	cache := t.TempDir()
	t.Setenv("CUALAKE_CACHE", cache)
	u, _ := url.Parse("s3://cualake-test/lake")
	st, err := s3store.FromURL(u, lake.OpenOptions{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	const lakeURL = "s3://cualake-test/lakes/one"
	if out, err := run(t, "lake", "init", "--lake", lakeURL); err != nil || !strings.Contains(out, "lake ready at "+lakeURL) {
		t.Fatalf("init: %v\n%s", err, out)
	}
	ref := filepath.Join(t.TempDir(), "ref")
	want := runSnapshot(t, append([]string{"rollout", "--lake", ref, "--json"}, oracleArgs...)...)
	if got := shardedRollout(t, lakeURL, "", 3, oracleArgs...); got != want {
		t.Fatalf("merged on S3 %s, unsharded in a folder %s", got, want)
	}
	out, err := run(t, "query", "--lake", lakeURL, "--cache", t.TempDir(), "--format", "csv",
		"select count(*) as n, count(distinct task_id) as tasks, bool_and(reward = 1) as ok from trajectories")
	if err != nil || out != "n,tasks,ok\n14,7,true\n" {
		t.Fatalf("query on S3: %q %v", out, err)
	}
	if out, err := run(t, "lake", "verify", "--lake", lakeURL); err != nil {
		t.Fatalf("verify on S3: %v\n%s", err, out)
	}
	if out, err := run(t, "lake", "log", "--lake", lakeURL, "--cache-max", "1MiB"); err != nil || !strings.Contains(out, want[:12]) {
		t.Fatalf("log on S3: %v\n%s", err, out)
	}
	if _, err := run(t, "lake", "log", "--lake", "s3://no-such-bucket/x"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing bucket: %v", err)
	}
}
