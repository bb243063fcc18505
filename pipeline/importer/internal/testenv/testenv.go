// Package testenv locates test inputs shared by the importer and exporter
// tests.
package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// RepoRoot walks up from the working directory to the folder holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}

// OSWorldSample returns the OSWorld task sample at ../shared/data/osworld
// next to the repository, skipping the test when it is absent.
func OSWorldSample(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "..", "shared", "data", "osworld")
	if _, err := os.Stat(filepath.Join(dir, "examples")); err != nil {
		t.Skipf("OSWorld task sample not found at %s (it lives next to the repository as shared/data/osworld): %v", dir, err)
	}
	return dir
}

// Testdata returns pipeline/importer/testdata.
func Testdata(t testing.TB) string {
	t.Helper()
	return filepath.Join(RepoRoot(t), "pipeline", "importer", "testdata")
}

// Finishes runs fn and fails the test when it has not returned after
// limit. It guards against a hang (a read of a FIFO, of /dev/zero), so
// limit is generous; it is no timing assertion.
func Finishes(t testing.TB, limit time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("still running after %v: the code under test hangs", limit)
	}
}
