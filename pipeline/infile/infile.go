// Package infile opens a file the user named as an input (a query file, a
// notebook, an experiment, a JSONL log) without trusting it to be one:
// anything but a regular file is refused before it is read, since reading
// /dev/zero never ends and a FIFO without a writer blocks forever, and a
// regular file is read only up to a limit the caller sets, so a huge file
// is an error naming it rather than an out-of-memory crash. ReadAll reads
// an input already open (standard input, which the user chose explicitly,
// so it may be a pipe) under the same kind of limit.
package infile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
)

// MaxText bounds a text input read whole: an SQL file, a notebook, an
// experiment's YAML. Real ones are kilobytes.
const MaxText = 4 << 20

// Errors for errors.Is; the messages that wrap them name the file.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file over the size limit")
)

// Refused is a file a reader will not read: "PATH is a character device,
// want a regular file"; errors.Is matches its sentinel (ErrNotRegular or
// ErrTooLarge). The importer's record package words its own.
type Refused struct {
	Msg  string
	Kind error
}

func (e *Refused) Error() string        { return e.Msg }
func (e *Refused) Is(target error) bool { return target == e.Kind }

// Kind names what a non-regular file is ("a character device").
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file (mode " + m.String() + ")"
}

// check refuses a non-regular file, and one over max bytes when max > 0.
func check(path string, st fs.FileInfo, max int64) error {
	if !st.Mode().IsRegular() {
		return &Refused{fmt.Sprintf("%s is %s, want a regular file", path, Kind(st.Mode())), ErrNotRegular}
	}
	if max > 0 && st.Size() > max {
		return &Refused{fmt.Sprintf("%s is %d bytes, over the limit of %d bytes", path, st.Size(), max), ErrTooLarge}
	}
	return nil
}

// Check says whether path (a symbolic link is followed) is a regular file
// of at most max bytes (max <= 0: any size), for inputs another package
// reads. Errors from os.Stat are returned as they are (fs.ErrNotExist).
func Check(path string, max int64) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return check(path, st, max)
}

// Open opens path for reading when it is a regular file, for inputs that
// are streamed (whose reader bounds what it holds). The file is opened
// non-blocking and checked again, so a path swapped for a FIFO after the
// first check cannot hang the open.
func Open(path string) (*os.File, error) {
	if err := Check(path, 0); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = check(path, st, 0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Read reads path whole when it is a regular file of at most max bytes
// (max > 0). The read stops at max+1 bytes, so a file that grows, or that
// claims a size of 0 as /proc files do, cannot exceed the limit either.
func Read(path string, max int64) ([]byte, error) {
	if max <= 0 {
		return nil, fmt.Errorf("infile.Read %s: limit %d, want > 0", path, max)
	}
	if err := Check(path, max); err != nil {
		return nil, err
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, max)
}

// ReadAll reads r whole up to max bytes (max > 0), for an input already
// open, such as standard input; name is what errors call it. More than
// max bytes is a Refused error (ErrTooLarge).
func ReadAll(r io.Reader, name string, max int64) ([]byte, error) {
	if max <= 0 || max == math.MaxInt64 {
		return nil, fmt.Errorf("infile.ReadAll %s: limit %d, want 1..MaxInt64-1", name, max)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(r, max+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(buf.Len()) > max {
		return nil, &Refused{fmt.Sprintf("%s has more than %d bytes, over the limit", name, max), ErrTooLarge}
	}
	return buf.Bytes(), nil
}
