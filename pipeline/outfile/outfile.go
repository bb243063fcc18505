// Package outfile writes a file or folder the user named (--out FILE, an
// export DIR) without destroying anything that was there.
//
//   - A regular file is replaced atomically (a temporary file beside it,
//     renamed over it), keeping its permission bits; a new file gets
//     0666 &^ umask.
//   - A device, FIFO or socket (/dev/null, /dev/stdout, a named pipe) is
//     written through, never renamed over.
//   - A symbolic link is followed: the file it points at is replaced and the
//     link kept. A dangling link is refused.
//   - A directory is never replaced by a file, and a directory output goes
//     only where nothing is or an empty directory is, staged under a private
//     temporary name and renamed into place.
//   - Nothing is written inside a cualake lake folder: one found by its
//     marker file above the output, or one the caller names.
//
// The package also owns the process's default file modes (FileMode,
// DirMode), so that files made with os.CreateTemp (always 0600) end up
// readable the way the umask says, for outputs and lake files alike.
package outfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// LakeMarker is the file at the root of every cualake lake folder
// (pipeline/lake's marker; a test there keeps the two in step).
const LakeMarker = "lake.json"

// ErrInsideLake is returned for an output path inside a lake folder.
var ErrInsideLake = errors.New("inside a lake folder")

// ErrExists is returned for an output that would destroy what is there: a
// directory where a file goes, or a non-empty directory or a file where a
// directory goes.
var ErrExists = errors.New("already exists")

// umask is read once, at init, while no other goroutine can be creating
// files: syscall.Umask can only read the mask by setting it.
var umask = func() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m) & fs.ModePerm
}()

// FileMode is the mode a new file gets in this process: 0666 &^ umask
// (0644 by default).
func FileMode() fs.FileMode { return 0o666 &^ umask }

// DirMode is the mode a new directory gets in this process: 0777 &^ umask
// (0755 by default).
func DirMode() fs.FileMode { return 0o777 &^ umask }

// WriteBytes writes b to path; see Write.
func WriteBytes(path string, b []byte, lakes ...string) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}, lakes...)
}

// Write writes the output file path with write, following the package's
// rules: a regular file is replaced atomically, a device or FIFO is written
// through, a symbolic link is followed, and a directory, a dangling link or
// a path inside a lake folder (found by its marker, or one of lakes) is
// refused with an error naming the path. Missing parent folders are
// created. The writer handed to write is not an io.Closer.
func Write(path string, write func(io.Writer) error, lakes ...string) error {
	if path == "" {
		return errors.New("output path is empty")
	}
	target, kernel, err := follow(path)
	if err != nil {
		return err
	}
	if kernel {
		// /dev/stdout and kin lead through /proc to things no path names
		// (pipe:[123]); only the kernel can follow them, so open them as
		// they are. Appending keeps what a `>>` redirection holds.
		return writeThrough(path, path, os.O_APPEND, write)
	}
	real, err := resolve(target)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := outsideLakes(path, real, lakes); err != nil {
		return err
	}
	if target != path {
		// A link inside a lake must not be a way to write there either.
		if err := outsideLakes(path, filepath.Join(mustResolve(filepath.Dir(path)), filepath.Base(path)), lakes); err != nil {
			return err
		}
	}
	st, err := os.Lstat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return replace(path, real, FileMode(), write)
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case st.IsDir():
		return fmt.Errorf("%s is a directory: %w; name a file", path, ErrExists)
	case st.Mode().IsRegular():
		return replace(path, real, st.Mode().Perm(), write)
	default:
		return writeThrough(path, real, 0, write)
	}
}

// WriteDir makes the output directory dir with fill, which writes the
// contents into the staging folder it is given. dir must be absent or an
// empty directory (a symbolic link to one is followed); an existing file, a
// non-empty directory or a path inside a lake folder (found by its marker,
// or one of lakes) is refused with an error naming the path. The staging
// folder is a fresh os.MkdirTemp beside dir, renamed onto dir at the end
// (rename replaces an empty directory atomically); on failure only the
// staging folder is removed.
func WriteDir(dir string, fill func(staging string) error, lakes ...string) error {
	if dir == "" {
		return errors.New("output directory is empty")
	}
	real, err := resolve(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if err := outsideLakes(dir, real, lakes); err != nil {
		return err
	}
	perm := DirMode()
	st, err := os.Lstat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("%s: %w", dir, err)
	case st.Mode()&fs.ModeSymlink != 0:
		l, _ := os.Readlink(real)
		return fmt.Errorf("%s is a symbolic link to %s, which does not exist; remove the link or create the folder", dir, l)
	case !st.IsDir():
		return fmt.Errorf("%s exists and is not a directory: %w; name a new or empty folder", dir, ErrExists)
	default:
		empty, err := isEmptyDir(real)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if !empty {
			return fmt.Errorf("%s is not empty: %w; name a new or empty folder", dir, ErrExists)
		}
		perm = st.Mode().Perm()
	}
	parent := filepath.Dir(real)
	if err := os.MkdirAll(parent, 0o777); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(real)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(staging)
		}
	}()
	if err := os.Chmod(staging, perm); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if err := fill(staging); err != nil {
		return err
	}
	// syscall.Rename, not os.Rename: os.Rename refuses any existing
	// directory, while rename(2) replaces an empty one atomically and fails
	// (ENOTEMPTY) if something appeared in it meanwhile.
	if err := syscall.Rename(staging, real); err != nil {
		return fmt.Errorf("%s: rename %s: %w", dir, staging, err)
	}
	done = true
	return nil
}

// CheckOutsideLakes returns an error wrapping ErrInsideLake if path is
// inside a lake folder: one holding the lake marker at or above path's
// resolved location, or one of lakes.
func CheckOutsideLakes(path string, lakes ...string) error {
	real, err := resolve(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return outsideLakes(path, real, lakes)
}

// replace writes a temporary file beside real and renames it over real.
func replace(path, real string, perm fs.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(real)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(real)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(struct{ io.Writer }{f}); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(f.Name(), real); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	renamed = true
	return nil
}

// writeThrough opens an existing file for writing, without creating or
// truncating it (a device or FIFO has nothing to truncate).
func writeThrough(path, real string, flag int, write func(io.Writer) error) error {
	f, err := os.OpenFile(real, os.O_WRONLY|flag, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := write(struct{ io.Writer }{f}); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// follow walks the symbolic links at path to the file they lead to. kernel
// is true when a link lies under /dev or /proc (/dev/stdout ->
// /proc/self/fd/1 -> pipe:[123]), whose targets only the kernel can open. A
// dangling link is an error naming path and where it points.
func follow(path string) (target string, kernel bool, err error) {
	p := path
	for hops := 0; hops < 40; hops++ {
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if p != path {
				return "", false, fmt.Errorf("%s is a symbolic link to %s, which does not exist; remove the link or create its target", path, p)
			}
			return p, false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("%s: %w", path, err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return p, false, nil
		}
		abs := mustResolve(filepath.Dir(p))
		if under(abs, "/dev") || under(abs, "/proc") {
			return p, true, nil
		}
		l, err := os.Readlink(p)
		if err != nil {
			return "", false, fmt.Errorf("%s: %w", path, err)
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(abs, l) // relative to the link's real folder, as the kernel reads it
		}
		p = l
	}
	return "", false, fmt.Errorf("%s: too many levels of symbolic links", path)
}

// resolve returns p absolute with every symbolic link in its existing part
// evaluated; components that do not exist yet are kept as written.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	dir, rest := abs, ""
	for {
		r, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// mustResolve is resolve for paths that name existing folders; on an error
// it returns p absolute, which errs on the side of the lexical path.
func mustResolve(p string) string {
	if r, err := resolve(p); err == nil {
		return r
	}
	abs, _ := filepath.Abs(p)
	return abs
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// outsideLakes checks real (the resolved form of the user's path) against
// every folder from real up to the root for a lake marker, and against each
// of lakes.
func outsideLakes(path, real string, lakes []string) error {
	for _, l := range lakes {
		if l == "" {
			continue
		}
		root, err := resolve(l)
		if err != nil {
			return fmt.Errorf("lake %s: %w", l, err)
		}
		if under(real, root) {
			return fmt.Errorf("%s is in the lake %s: %w; write outputs outside the lake", path, l, ErrInsideLake)
		}
	}
	for d := real; ; d = filepath.Dir(d) {
		if IsLake(d) {
			return fmt.Errorf("%s is in the lake %s: %w; write outputs outside the lake", path, d, ErrInsideLake)
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// IsLake says whether dir holds a cualake lake marker: a small regular file
// whose kind is "cualake" (an unrelated lake.json does not count).
func IsLake(dir string) bool {
	p := filepath.Join(dir, LakeMarker)
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() > 4096 {
		return false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	var m struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(b, &m) == nil && m.Kind == "cualake"
}

func isEmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}
