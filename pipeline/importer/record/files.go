package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/cualake/cualake/pipeline/infile"
)

// DefaultMaxFileBytes caps one file an input names (a screenshot, a log, a
// task file) unless the import sets another cap.
const DefaultMaxFileBytes = 64 << 20

// Errors of ReadRegular, for errors.Is: infile's. The messages that wrap
// them say what the file is and start with "is", so callers write "NAME " +
// err.
var (
	ErrNotRegular = infile.ErrNotRegular
	ErrTooLarge   = infile.ErrTooLarge
)

// refused is a file ReadRegular will not read.
type refused = infile.Refused

// kindOf names what a non-regular file is.
func kindOf(m fs.FileMode) string { return infile.Kind(m) }

func checkRegular(st fs.FileInfo, max int64) error {
	if !st.Mode().IsRegular() {
		return &refused{Msg: fmt.Sprintf("is %s, want a regular file", kindOf(st.Mode())), Kind: ErrNotRegular}
	}
	if st.Size() > max {
		return tooLarge(fmt.Sprintf("is %d bytes", st.Size()), max)
	}
	return nil
}

func tooLarge(what string, max int64) error {
	return &refused{Msg: fmt.Sprintf("%s, over the cap of %d bytes (cualake import --max-file-bytes raises it)", what, max), Kind: ErrTooLarge}
}

// ReadRegular reads the file at path when it is a regular file (a symbolic
// link to one is followed) of at most max bytes. FIFOs, devices, sockets
// and directories are refused with ErrNotRegular before they are opened,
// since reading one may block forever (a FIFO) or never end (/dev/zero),
// and larger files with ErrTooLarge. The file is opened non-blocking and
// checked again, so a path swapped for a FIFO after the first check cannot
// hang the read either, and the read stops at max+1 bytes, so a file that
// grows (or claims to be empty, as /proc files do) cannot exceed the cap.
func ReadRegular(path string, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxFileBytes
	}
	max = min(max, math.MaxInt64-1) // the read takes max+1 bytes
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(st, max); err != nil {
		return nil, err
	}
	return readOpened(path, max)
}

// readOpened is ReadRegular after the path was checked.
func readOpened(path string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO without a writer would otherwise block.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkRegular(st, max); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(int(st.Size()) + 1)
	if _, err := buf.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > max {
		return nil, tooLarge(fmt.Sprintf("has more than %d bytes", max), max)
	}
	return buf.Bytes(), nil
}

// FileReason is the reason a reject gives for a file ReadRegular refused or
// could not read: "NAME is a named pipe (FIFO), want a regular file",
// "NAME does not exist", or the error itself.
func FileReason(name string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return name + " does not exist"
	case errors.Is(err, ErrNotRegular), errors.Is(err, ErrTooLarge):
		return name + " " + err.Error()
	}
	return err.Error()
}

// MaxComponent bounds a name used as one path component, leaving room for
// a suffix such as ".json" within the usual 255-byte file name limit.
const MaxComponent = 200

// CheckComponent checks that s can be one path component of a folder
// layout (a domain, a task or trajectory id): not empty, not "." or "..",
// no '/' or '\', no NUL or other control characters, no white space at
// either end, valid UTF-8 and at most MaxComponent bytes. The error is the
// reason, worded to follow the field's name.
func CheckComponent(s string) error {
	switch {
	case s == "":
		return errors.New("is empty")
	case s == "." || s == "..":
		return fmt.Errorf("is %q: \".\" or \"..\" cannot be a folder name", s)
	case !utf8.ValidString(s):
		return errors.New("is not valid UTF-8")
	case len(s) > MaxComponent:
		return fmt.Errorf("is %d bytes, longer than %d", len(s), MaxComponent)
	case strings.ContainsRune(s, 0):
		return errors.New("contains NUL")
	case strings.ContainsRune(s, '/'):
		return fmt.Errorf("%q contains '/'", s)
	case strings.ContainsRune(s, '\\'):
		return fmt.Errorf("%q contains '\\'", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%q contains a control character (%U)", s, r)
		}
	}
	if strings.TrimSpace(s) != s {
		return fmt.Errorf("%q begins or ends with white space", s)
	}
	return nil
}
