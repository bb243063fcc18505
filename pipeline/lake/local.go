package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/cualake/cualake/pipeline/outfile"
)

// tmpMarker names files being written; they are invisible to List and
// removed by gc.
const tmpMarker = ".tmp-"

// Local is a Storage over a folder on a POSIX filesystem.
type Local struct{ root string }

// NewLocal returns a Storage rooted at dir (created if needed).
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("lake %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("lake %s: %w", dir, err)
	}
	return &Local{root: abs}, nil
}

// Root is the folder holding the lake.
func (l *Local) Root() string { return l.root }

func (l *Local) String() string { return l.root }

func (l *Local) path(key string) (string, error) {
	clean := filepath.ToSlash(filepath.Clean(key))
	if key == "" || strings.HasPrefix(clean, "../") || clean == ".." || filepath.IsAbs(key) {
		return "", fmt.Errorf("lake %s: key %q escapes the lake", l.root, key)
	}
	return filepath.Join(l.root, filepath.FromSlash(clean)), nil
}

func notExist(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", key, ErrNotExist)
	}
	return err
}

// Get implements Storage.
func (l *Local) Get(_ context.Context, key string) ([]byte, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	return b, notExist(key, err)
}

// Open implements Storage.
func (l *Local) Open(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, notExist(key, err)
	}
	return f, nil
}

// Size implements Storage.
func (l *Local) Size(_ context.Context, key string) (int64, error) {
	p, err := l.path(key)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return 0, notExist(key, err)
	}
	return st.Size(), nil
}

// writeTemp writes data to a fresh temporary file beside p and syncs it.
func writeTemp(p string, data []byte) (string, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+tmpMarker+"*")
	if err != nil {
		return "", err
	}
	// CreateTemp makes 0600; a lake shared by a group needs the umask's mode.
	if err := f.Chmod(outfile.FileMode()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// PutIfAbsent implements Storage: the bytes go to a temporary file, which is
// then hard-linked to the final name. link(2) fails if the name exists, so
// the create is exclusive and a reader never sees a partial object.
func (l *Local) PutIfAbsent(_ context.Context, key string, data []byte) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	tmp, err := writeTemp(p, data)
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", key, ErrExist)
		}
		return fmt.Errorf("write %s: %w", key, err)
	}
	return syncDir(filepath.Dir(p))
}

// PutFile implements Storage.
func (l *Local) PutFile(_ context.Context, key, localPath string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	// Callers stage with os.CreateTemp (0600); give the file the umask's mode.
	if err := os.Chmod(localPath, outfile.FileMode()); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if err := os.Rename(localPath, p); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return syncDir(filepath.Dir(p))
}

// CompareAndSwap implements Storage. An flock on a side file serialises
// writers; the kernel drops it if the holder dies, so a killed process never
// leaves the ref locked.
func (l *Local) CompareAndSwap(_ context.Context, key string, prev, next []byte) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(p+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close anyway
	cur, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if prev != nil {
			return fmt.Errorf("%s: %w: it does not exist", key, ErrConflict)
		}
	case err != nil:
		return fmt.Errorf("read %s: %w", key, err)
	default:
		if prev == nil || !bytes.Equal(cur, prev) {
			return fmt.Errorf("%s: %w: it holds %q", key, ErrConflict, strings.TrimSpace(string(cur)))
		}
	}
	tmp, err := writeTemp(p, next)
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", key, err)
	}
	return syncDir(filepath.Dir(p))
}

// Delete implements Storage.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// List implements Storage.
func (l *Local) List(_ context.Context, prefix string) ([]string, error) {
	var out []string
	start := filepath.Join(l.root, filepath.FromSlash(prefix))
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.Contains(d.Name(), tmpMarker) || strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	sort.Strings(out)
	return out, nil
}

// LocalPath implements Storage.
func (l *Local) LocalPath(_ context.Context, key string) (string, error) { return l.path(key) }

// TempDir implements Storage: staging inside the lake keeps PutFile a
// same-filesystem rename.
func (l *Local) TempDir() string { return filepath.Join(l.root, "tmp") }

// inNestedLake says whether path, a file under the lake's root, lies in a
// folder below the root that holds a lake marker of its own.
func (l *Local) inNestedLake(path string) bool {
	for d := filepath.Dir(path); d != l.root && strings.HasPrefix(d, l.root+string(filepath.Separator)); d = filepath.Dir(d) {
		if holdsMarker(d) {
			return true
		}
	}
	return false
}

// Leftovers lists temporary files that interrupted writes left behind.
func (l *Local) Leftovers() ([]string, error) {
	var out []string
	err := filepath.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.Contains(d.Name(), tmpMarker) || filepath.Base(filepath.Dir(p)) == "tmp") {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

func removeFile(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// forgetRef removes what a deleted ref leaves in the folder: its
// compare-and-swap lock file and the folders of its name that are now
// empty, up to stop (so that a later ref may be named like one of them).
func (l *Local) forgetRef(key, stop string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p + ".lock"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s.lock: %w", key, err)
	}
	root, err := l.path(strings.TrimSuffix(stop, "/"))
	if err != nil {
		return err
	}
	for d := filepath.Dir(p); d != root && strings.HasPrefix(d, root+string(filepath.Separator)); d = filepath.Dir(d) {
		if err := os.Remove(d); err != nil {
			// Not empty (another ref lives there) or already gone: stop.
			break
		}
	}
	return nil
}
