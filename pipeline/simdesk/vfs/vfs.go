// Package vfs is the simulator's in-memory file system: a sorted list of
// entries (folders and text files) under one home folder, with the path rules
// shared by the simulator, its setup steps and its judges.
//
// It is a plain value: copying the Entries slice copies the file system, and
// its JSON form is deterministic because entries are kept sorted by path.
package vfs

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// Home is the simulated user's home folder; "~" expands to it.
const Home = "/home/user"

// Errors returned by file system operations; wrap-compatible with errors.Is.
var (
	ErrNotFound = errors.New("no such file or folder")
	ErrExists   = errors.New("file or folder already exists")
	ErrNotDir   = errors.New("not a folder")
	ErrIsDir    = errors.New("is a folder")
	ErrBadPath  = errors.New("bad path")
	ErrNotEmpty = errors.New("folder not empty")
	ErrNoSpace  = errors.New("no space left on device")
)

// MaxFileBytes bounds a file's content so that no input can blow up state.
const MaxFileBytes = 1 << 20

// MaxEntries and MaxTotalBytes bound the whole file system, so that no
// sequence of copies or writes (a shell line doubling a folder again and
// again) can blow up state: past them writes fail with ErrNoSpace.
const (
	MaxEntries    = 20000
	MaxTotalBytes = 32 << 20
)

// TotalBytes is the size of all file contents.
func (fs *FS) TotalBytes() int {
	n := 0
	for i := range fs.Entries {
		n += len(fs.Entries[i].Content)
	}
	return n
}

// Entry is one file or folder.
type Entry struct {
	Path    string `json:"path"`
	Dir     bool   `json:"dir,omitempty"`
	Content string `json:"content,omitempty"`
}

// Name returns the entry's base name.
func (e Entry) Name() string { return path.Base(e.Path) }

// Clean resolves p to an absolute, clean path: "~" and "~/x" expand to the
// home folder, relative paths are taken relative to home. Paths that leave
// the root or contain control characters are rejected.
func Clean(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", fmt.Errorf("%w: empty", ErrBadPath)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("%w: %q has a control character", ErrBadPath, p)
		}
	}
	switch {
	case p == "~":
		p = Home
	case strings.HasPrefix(p, "~/"):
		p = Home + p[1:]
	case !strings.HasPrefix(p, "/"):
		p = Home + "/" + p
	}
	return path.Clean(p), nil
}

// Short renders an absolute path with the home folder as "~", for titles and
// instructions.
func Short(p string) string {
	if p == Home {
		return "~"
	}
	if strings.HasPrefix(p, Home+"/") {
		return "~" + p[len(Home):]
	}
	return p
}

// ValidName reports whether name can be a single path element.
func ValidName(name string) error {
	switch {
	case name == "" || strings.TrimSpace(name) == "":
		return fmt.Errorf("%w: empty name", ErrBadPath)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is reserved", ErrBadPath, name)
	case strings.ContainsAny(name, "/\\"):
		return fmt.Errorf("%w: %q contains a slash", ErrBadPath, name)
	case len(name) > 200:
		return fmt.Errorf("%w: name longer than 200 bytes", ErrBadPath)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: %q has a control character", ErrBadPath, name)
		}
	}
	return nil
}

// FS is the file system: entries sorted by path. The root "/" is implicit.
type FS struct {
	Entries []Entry `json:"entries"`
}

// NewHome returns a file system with the home folder and its usual folders.
func NewHome() FS {
	var fs FS
	for _, d := range []string{"/home", Home, Home + "/Desktop", Home + "/Documents", Home + "/Downloads", Home + "/Pictures"} {
		fs.Entries = append(fs.Entries, Entry{Path: d, Dir: true})
	}
	sort.Slice(fs.Entries, func(i, j int) bool { return fs.Entries[i].Path < fs.Entries[j].Path })
	return fs
}

// Clone returns an independent copy.
func (fs FS) Clone() FS {
	return FS{Entries: append([]Entry(nil), fs.Entries...)}
}

func (fs *FS) find(p string) (int, bool) {
	i := sort.Search(len(fs.Entries), func(i int) bool { return fs.Entries[i].Path >= p })
	return i, i < len(fs.Entries) && fs.Entries[i].Path == p
}

// Stat returns the entry at p (already clean). The root is a folder.
func (fs *FS) Stat(p string) (Entry, bool) {
	if p == "/" {
		return Entry{Path: "/", Dir: true}, true
	}
	i, ok := fs.find(p)
	if !ok {
		return Entry{}, false
	}
	return fs.Entries[i], true
}

// IsDir reports whether p is an existing folder.
func (fs *FS) IsDir(p string) bool {
	e, ok := fs.Stat(p)
	return ok && e.Dir
}

// Read returns the content of the file at p.
func (fs *FS) Read(p string) (string, error) {
	e, ok := fs.Stat(p)
	switch {
	case !ok:
		return "", fmt.Errorf("read %s: %w", p, ErrNotFound)
	case e.Dir:
		return "", fmt.Errorf("read %s: %w", p, ErrIsDir)
	}
	return e.Content, nil
}

func (fs *FS) insert(e Entry) {
	i, _ := fs.find(e.Path)
	fs.Entries = append(fs.Entries, Entry{})
	copy(fs.Entries[i+1:], fs.Entries[i:])
	fs.Entries[i] = e
}

func (fs *FS) checkParent(p string) error {
	parent := path.Dir(p)
	if !fs.IsDir(parent) {
		if _, ok := fs.Stat(parent); ok {
			return fmt.Errorf("%s: %w", parent, ErrNotDir)
		}
		return fmt.Errorf("%s: %w", parent, ErrNotFound)
	}
	return nil
}

// Write creates or replaces the file at p; its folder must exist.
func (fs *FS) Write(p, content string) error {
	if len(content) > MaxFileBytes {
		return fmt.Errorf("write %s: content of %d bytes exceeds %d", p, len(content), MaxFileBytes)
	}
	if p == "/" {
		return fmt.Errorf("write /: %w", ErrIsDir)
	}
	i, exists := fs.find(p)
	if exists && fs.Entries[i].Dir {
		return fmt.Errorf("write %s: %w", p, ErrIsDir)
	}
	old := 0
	if exists {
		old = len(fs.Entries[i].Content)
	}
	if len(content) > old && fs.TotalBytes()-old+len(content) > MaxTotalBytes {
		return fmt.Errorf("write %s: %w (the simulated disk holds %d bytes)", p, ErrNoSpace, MaxTotalBytes)
	}
	if exists {
		fs.Entries[i].Content = content
		return nil
	}
	if len(fs.Entries) >= MaxEntries {
		return fmt.Errorf("write %s: %w (the simulated disk holds %d entries)", p, ErrNoSpace, MaxEntries)
	}
	if err := fs.checkParent(p); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	fs.insert(Entry{Path: p, Content: content})
	return nil
}

// Mkdir creates the folder p; with parents it creates missing ancestors and
// accepts an existing folder.
func (fs *FS) Mkdir(p string, parents bool) error {
	if e, ok := fs.Stat(p); ok {
		if parents && e.Dir {
			return nil
		}
		return fmt.Errorf("mkdir %s: %w", p, ErrExists)
	}
	if parents {
		if err := fs.Mkdir(path.Dir(p), true); err != nil {
			return err
		}
	} else if err := fs.checkParent(p); err != nil {
		return fmt.Errorf("mkdir %s: %w", p, err)
	}
	if len(fs.Entries) >= MaxEntries {
		return fmt.Errorf("mkdir %s: %w (the simulated disk holds %d entries)", p, ErrNoSpace, MaxEntries)
	}
	fs.insert(Entry{Path: p, Dir: true})
	return nil
}

// Children returns the direct children of folder p: folders first, then
// files, each by name.
func (fs *FS) Children(p string) ([]Entry, error) {
	if !fs.IsDir(p) {
		if _, ok := fs.Stat(p); ok {
			return nil, fmt.Errorf("list %s: %w", p, ErrNotDir)
		}
		return nil, fmt.Errorf("list %s: %w", p, ErrNotFound)
	}
	prefix := p + "/"
	if p == "/" {
		prefix = "/"
	}
	start := sort.Search(len(fs.Entries), func(i int) bool { return fs.Entries[i].Path >= prefix })
	var out []Entry
	for i := start; i < len(fs.Entries) && strings.HasPrefix(fs.Entries[i].Path, prefix); i++ {
		if !strings.Contains(fs.Entries[i].Path[len(prefix):], "/") {
			out = append(out, fs.Entries[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Dir != out[j].Dir {
			return out[i].Dir
		}
		return out[i].Name() < out[j].Name()
	})
	return out, nil
}

// under returns the indices of p and every entry below it.
func (fs *FS) under(p string) []int {
	var idx []int
	if i, ok := fs.find(p); ok {
		idx = append(idx, i)
	}
	prefix := p + "/"
	start := sort.Search(len(fs.Entries), func(i int) bool { return fs.Entries[i].Path >= prefix })
	for i := start; i < len(fs.Entries) && strings.HasPrefix(fs.Entries[i].Path, prefix); i++ {
		idx = append(idx, i)
	}
	return idx
}

// Remove deletes p; a non-empty folder needs recursive.
func (fs *FS) Remove(p string, recursive bool) error {
	if p == "/" || p == Home || p == "/home" {
		return fmt.Errorf("remove %s: %w: protected folder", p, ErrBadPath)
	}
	if _, ok := fs.Stat(p); !ok {
		return fmt.Errorf("remove %s: %w", p, ErrNotFound)
	}
	idx := fs.under(p)
	if len(idx) > 1 && !recursive {
		return fmt.Errorf("remove %s: %w", p, ErrNotEmpty)
	}
	drop := make(map[int]bool, len(idx))
	for _, i := range idx {
		drop[i] = true
	}
	kept := fs.Entries[:0]
	for i, e := range fs.Entries {
		if !drop[i] {
			kept = append(kept, e)
		}
	}
	fs.Entries = kept
	return nil
}

// Move renames src to dst (with everything under it); dst must not exist
// and its folder must.
func (fs *FS) Move(src, dst string) error {
	if src == dst {
		return nil
	}
	e, ok := fs.Stat(src)
	if !ok {
		return fmt.Errorf("move %s: %w", src, ErrNotFound)
	}
	if src == "/" || src == Home || src == "/home" {
		return fmt.Errorf("move %s: %w: protected folder", src, ErrBadPath)
	}
	if e.Dir && strings.HasPrefix(dst, src+"/") {
		return fmt.Errorf("move %s into itself: %w", src, ErrBadPath)
	}
	if _, ok := fs.Stat(dst); ok {
		return fmt.Errorf("move to %s: %w", dst, ErrExists)
	}
	if err := fs.checkParent(dst); err != nil {
		return fmt.Errorf("move to %s: %w", dst, err)
	}
	var moved []Entry
	for _, i := range fs.under(src) {
		m := fs.Entries[i]
		m.Path = dst + m.Path[len(src):]
		moved = append(moved, m)
	}
	if err := fs.Remove(src, true); err != nil {
		return err
	}
	for _, m := range moved {
		fs.insert(m)
	}
	return nil
}

// Copy copies src (with everything under it) to dst, which must not exist.
func (fs *FS) Copy(src, dst string) error {
	if _, ok := fs.Stat(src); !ok {
		return fmt.Errorf("copy %s: %w", src, ErrNotFound)
	}
	if strings.HasPrefix(dst, src+"/") {
		return fmt.Errorf("copy %s into itself: %w", src, ErrBadPath)
	}
	if _, ok := fs.Stat(dst); ok {
		return fmt.Errorf("copy to %s: %w", dst, ErrExists)
	}
	if err := fs.checkParent(dst); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	var copies []Entry
	bytes := 0
	for _, i := range fs.under(src) {
		m := fs.Entries[i]
		m.Path = dst + m.Path[len(src):]
		copies = append(copies, m)
		bytes += len(m.Content)
	}
	if len(fs.Entries)+len(copies) > MaxEntries || fs.TotalBytes()+bytes > MaxTotalBytes {
		return fmt.Errorf("copy %s: %w (the simulated disk holds %d entries, %d bytes)", src, ErrNoSpace, MaxEntries, MaxTotalBytes)
	}
	for _, m := range copies {
		fs.insert(m)
	}
	return nil
}

// Validate checks that entries are sorted, unique, clean and rooted in
// existing folders; RestoreState relies on it.
func (fs *FS) Validate() error {
	if len(fs.Entries) > MaxEntries || fs.TotalBytes() > MaxTotalBytes {
		return fmt.Errorf("%d entries, %d bytes: %w", len(fs.Entries), fs.TotalBytes(), ErrNoSpace)
	}
	for i, e := range fs.Entries {
		c, err := Clean(e.Path)
		if err != nil || c != e.Path || e.Path == "/" {
			return fmt.Errorf("entry %d: %w: %q is not a clean absolute path", i, ErrBadPath, e.Path)
		}
		if i > 0 && fs.Entries[i-1].Path >= e.Path {
			return fmt.Errorf("entry %d: %q out of order or duplicated", i, e.Path)
		}
		if e.Dir && e.Content != "" {
			return fmt.Errorf("entry %d: folder %q has content", i, e.Path)
		}
		if parent := path.Dir(e.Path); parent != "/" && !fs.IsDir(parent) {
			return fmt.Errorf("entry %d: %q has no parent folder", i, e.Path)
		}
	}
	return nil
}
