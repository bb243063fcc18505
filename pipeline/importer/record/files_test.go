package record

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheckComponent(t *testing.T) {
	for s, want := range map[string]string{
		"chrome": "", "libreoffice_calc": "", "bb5e4c0d-f964-439c-97b6-bdb9747de3f4": "", "a.b": "", "ünïcode": "",
		"": "empty", ".": `"." or ".."`, "..": `"." or ".."`, "../x": "'/'", "a/b": "'/'", `a\b`: `'\'`,
		"a\x00b": "NUL", "a\nb": "control character", "a\x7fb": "control character", "\xff": "UTF-8",
		" a": "white space", "a\t": "control character", strings.Repeat("x", MaxComponent+1): "longer than",
		strings.Repeat("x", MaxComponent): "",
	} {
		err := CheckComponent(s)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", s, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: got %v, want an error saying %s", s, err, want)
		}
	}
}

// finishes fails the test when fn hangs (a liveness guard, not a timing
// assertion).
func finishes(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("hangs")
	}
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	os.WriteFile(ok, []byte("12345"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(ok, 5); err != nil || string(b) != "12345" {
		t.Fatalf("%q %v", b, err)
	}
	for _, c := range []struct {
		path string
		max  int64
		is   error
		want string
	}{
		{ok, 4, ErrTooLarge, "is 5 bytes"},
		{dir, 100, ErrNotRegular, "directory"},
		{fifo, 100, ErrNotRegular, "FIFO"},
		{"/dev/zero", 100, ErrNotRegular, "device"},
		// /proc files say they are empty and are not: the read itself
		// stops at the cap.
		{"/proc/self/maps", 10, ErrTooLarge, "more than 10 bytes"},
	} {
		var err error
		finishes(t, func() { _, err = ReadRegular(c.path, c.max) })
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %v saying %q", c.path, err, c.is, c.want)
		}
	}
	if _, err := ReadRegular(filepath.Join(dir, "absent"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	// A path that turns into a FIFO after the Stat check: the open does
	// not block and the opened file is checked again.
	var err error
	finishes(t, func() { _, err = readOpened(fifo, 100) })
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("opened FIFO: %v", err)
	}
}

func TestPNGIsCheckedWhole(t *testing.T) {
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 7, 3)))
	good := buf.Bytes()
	if _, _, err := PNGSize(good); err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(good, []byte("IDAT"))
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"flipped data byte": {flip(good, i+6), "CRC"},
		"flipped CRC":       {flip(good, i+4+int(good[i-1])), "CRC"},
		"cut in IDAT":       {append(append([]byte{}, good[:i+6]...), good[len(good)-12:]...), "truncated"},
		"trailing bytes":    {append(append([]byte{}, good...), 0), "after IEND"},
		"no IDAT":           {append(append([]byte{}, good[:8+25]...), good[len(good)-12:]...), "no IDAT"},
	} {
		if _, err := ImageBlob(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %s", name, err, c.want)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0x20
	return c
}
