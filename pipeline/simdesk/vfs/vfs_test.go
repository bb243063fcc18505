package vfs

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestFS(t *testing.T) {
	fs := NewHome()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fs.Mkdir(Home+"/a/b", true))
	must(fs.Write(Home+"/a/b/x.txt", "x"))
	must(fs.Write(Home+"/a.txt", "sibling that sorts between a and a/"))
	must(fs.Write(Home+"/a/y.txt", "y"))
	kids, err := fs.Children(Home + "/a")
	if err != nil || len(kids) != 2 || kids[0].Name() != "b" || kids[1].Name() != "y.txt" {
		t.Fatalf("children %v %v", kids, err)
	}
	must(fs.Move(Home+"/a", Home+"/Documents/a"))
	if _, ok := fs.Stat(Home + "/Documents/a/b/x.txt"); !ok {
		t.Fatal("move lost a nested file")
	}
	if _, ok := fs.Stat(Home + "/a.txt"); !ok {
		t.Fatal("move took a sibling with a common prefix")
	}
	must(fs.Copy(Home+"/Documents/a", Home+"/Desktop/a"))
	if err := fs.Move(Home+"/Desktop/a", Home+"/Desktop/a/b/c"); !errors.Is(err, ErrBadPath) {
		t.Fatalf("move into itself: %v", err)
	}
	if err := fs.Remove(Home+"/Desktop/a", false); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("remove non-empty: %v", err)
	}
	must(fs.Remove(Home+"/Desktop/a", true))
	if err := fs.Remove(Home, true); err == nil {
		t.Fatal("removed home")
	}
	if err := fs.Write(Home+"/nowhere/x", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("write without parent: %v", err)
	}
	must(fs.Validate())
	c := fs.Clone()
	must(c.Write(Home+"/only-in-clone", ""))
	if _, ok := fs.Stat(Home + "/only-in-clone"); ok {
		t.Fatal("clone shares entries")
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{"~": Home, "~/a/../b": Home + "/b", "Documents/x": Home + "/Documents/x", "/tmp//y/": "/tmp/y"} {
		if got, err := Clean(in); err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "  ", "a\x00b", "x\ny"} {
		if _, err := Clean(bad); err == nil {
			t.Errorf("Clean(%q) accepted", bad)
		}
	}
	if Short(Home+"/x") != "~/x" || Short("/etc") != "/etc" {
		t.Fatal("Short")
	}
}

// TestBounds: doubling a folder again and again stops at the disk's size.
func TestBounds(t *testing.T) {
	fs := NewHome()
	if err := fs.Write(Home+"/big", strings.Repeat("x", MaxFileBytes)); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 64 && err == nil; i++ {
		err = fs.Copy(Home+"/big", Home+"/big"+strconv.Itoa(i))
	}
	if !errors.Is(err, ErrNoSpace) || fs.TotalBytes() > MaxTotalBytes {
		t.Fatalf("%v, %d bytes", err, fs.TotalBytes())
	}
	if err := fs.Mkdir(Home+"/d", false); err != nil {
		t.Fatal(err)
	}
	err = nil
	for i := 0; err == nil; i++ {
		err = fs.Mkdir(Home+"/d/"+strconv.Itoa(i), false)
	}
	if !errors.Is(err, ErrNoSpace) || len(fs.Entries) != MaxEntries {
		t.Fatalf("%v, %d entries", err, len(fs.Entries))
	}
	if err := fs.Validate(); err != nil {
		t.Fatal(err)
	}
}
