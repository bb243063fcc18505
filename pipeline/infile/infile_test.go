package infile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadRefusesDevicesFIFOsFoldersAndHugeFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.sql")
	if err := os.WriteFile(big, make([]byte, 101), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		is         error
	}{
		{"/dev/zero", "/dev/zero is a character device, want a regular file", ErrNotRegular},
		{fifo, fifo + " is a named pipe (FIFO), want a regular file", ErrNotRegular},
		{dir, dir + " is a directory, want a regular file", ErrNotRegular},
		{big, big + " is 101 bytes, over the limit of 100 bytes", ErrTooLarge},
		{filepath.Join(dir, "none"), "no such file", fs.ErrNotExist},
	} {
		done := make(chan error, 1)
		go func() { _, err := Read(tc.path, 100); done <- err }()
		select {
		case err := <-done:
			if err == nil || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read(%s) = %v, want %v containing %q", tc.path, err, tc.is, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) hangs", tc.path)
		}
	}
	if _, err := Open("/dev/zero"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open(/dev/zero) = %v, want ErrNotRegular", err)
	}
	if err := Check(big, 0); err != nil {
		t.Errorf("Check(big, no limit) = %v", err)
	}
	// A file that claims size 0 (as /proc files do) is still read only up
	// to the limit.
	if st, err := os.Stat("/proc/self/maps"); err == nil && st.Size() == 0 {
		if _, err := Read("/proc/self/maps", 8); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Read(/proc/self/maps, 8) = %v, want ErrTooLarge", err)
		}
	}
	ok := filepath.Join(dir, "ok.sql")
	os.WriteFile(ok, []byte("select 1"), 0o600)
	if b, err := Read(ok, 100); err != nil || string(b) != "select 1" {
		t.Errorf("Read(ok) = %q, %v", b, err)
	}
	if link := filepath.Join(dir, "link.sql"); os.Symlink(ok, link) == nil {
		if b, err := Read(link, 100); err != nil || string(b) != "select 1" {
			t.Errorf("Read(link to ok) = %q, %v", b, err)
		}
	}
}
