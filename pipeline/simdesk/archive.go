package simdesk

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// tar -x and unzip extract archives that are files of the simulated file
// system (uploaded by a setup step) into it. Entries are bounded by
// vfs.MaxFileBytes each and maxArchiveBytes in all; links, devices and
// paths that leave the target folder are refused, as archive safety asks.

const (
	maxArchiveEntries = 10000
	maxArchiveBytes   = 32 << 20
)

// tarOpts are the parsed options of tar -x.
type tarOpts struct {
	gzip, verbose, unlink bool
	file, dir             string
}

func parseTar(args []string) (tarOpts, error) {
	var o tarOpts
	extract := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", unsupported("option %s needs a value", a)
			}
			i++
			return args[i], nil
		}
		switch {
		case a == "--recursive-unlink":
			o.unlink = true
		case a == "--extract" || a == "--get":
			extract = true
		case a == "--gzip" || a == "--gunzip":
			o.gzip = true
		case a == "--verbose":
			o.verbose = true
		case strings.HasPrefix(a, "--file="):
			o.file = strings.TrimPrefix(a, "--file=")
		case strings.HasPrefix(a, "--directory="):
			o.dir = strings.TrimPrefix(a, "--directory=")
		case a == "--file" || a == "--directory":
			v, err := next()
			if err != nil {
				return o, err
			}
			if a == "--file" {
				o.file = v
			} else {
				o.dir = v
			}
		case strings.HasPrefix(a, "--"):
			return o, unsupported("option %s", a)
		case strings.HasPrefix(a, "-") || (i == 0 && a != "" && strings.Trim(a, "xzvfC") == ""):
			letters := strings.TrimPrefix(a, "-")
			for j := 0; j < len(letters); j++ {
				switch letters[j] {
				case 'x':
					extract = true
				case 'z':
					o.gzip = true
				case 'v':
					o.verbose = true
				case 'f', 'C':
					// The value is the rest of the word or the next word.
					v := letters[j+1:]
					if v == "" {
						var err error
						if v, err = next(); err != nil {
							return o, err
						}
					}
					if letters[j] == 'f' {
						o.file = v
					} else {
						o.dir = v
					}
					j = len(letters)
				default:
					return o, unsupported("option -%c (only extraction: -x, -z, -v, -f, -C)", letters[j])
				}
			}
		default:
			return o, unsupported("extracting named members (%s)", a)
		}
	}
	if !extract {
		return o, unsupported("only extraction (tar -x)")
	}
	if o.file == "" {
		return o, unsupported("tar without -f (standard input)")
	}
	return o, nil
}

func checkTar(args []string, _ int) error {
	_, err := parseTar(args)
	return err
}

// archiveEntry is one member to write.
type archiveEntry struct {
	name string
	dir  bool
	data []byte
}

func runTar(r *shRun, args []string, _ string) int {
	o, _ := parseTar(args) // checked
	src, err := r.path(o.file)
	var content string
	if err == nil {
		content, err = r.d.S.FS.Read(src)
	}
	if err != nil {
		r.errf("tar: %s: Cannot open: %s", o.file, strerror(err))
		r.errf("tar: Error is not recoverable: exiting now")
		return 2
	}
	var rd io.Reader = strings.NewReader(content)
	if o.gzip {
		gz, err := gzip.NewReader(rd)
		if err != nil {
			r.errf("gzip: stdin: not in gzip format")
			r.errf("tar: Child returned status 1")
			return 2
		}
		rd = gz
	}
	tr := tar.NewReader(rd)
	var entries []archiveEntry
	total := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			r.errf("tar: This does not look like a tar archive (%v)", err)
			return 2
		}
		switch h.Typeflag {
		case tar.TypeDir:
			entries = append(entries, archiveEntry{name: h.Name, dir: true})
		case tar.TypeReg:
			if h.Size > vfs.MaxFileBytes {
				r.errf("tar: %s: %d bytes exceed the simulator's %d per file", h.Name, h.Size, vfs.MaxFileBytes)
				return 2
			}
			b, err := io.ReadAll(io.LimitReader(tr, vfs.MaxFileBytes+1))
			if err != nil {
				r.errf("tar: %s: %v", h.Name, err)
				return 2
			}
			total += len(b)
			entries = append(entries, archiveEntry{name: h.Name, data: b})
		case tar.TypeXGlobalHeader:
		default:
			r.errf("tar: %s: links and special files are not supported by the simulator", h.Name)
			return 2
		}
		if len(entries) > maxArchiveEntries || total > maxArchiveBytes {
			r.errf("tar: archive larger than the simulator holds (%d entries, %d bytes)", maxArchiveEntries, maxArchiveBytes)
			return 2
		}
	}
	return r.extract("tar", o.dir, o.verbose, o.unlink, entries)
}

func parseUnzip(args []string) (file, dir string, quiet bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-q" || a == "-qq" || a == "-o" || a == "-oq" || a == "-qo":
			quiet = quiet || strings.Contains(a, "q")
		case a == "-d":
			if i+1 >= len(args) {
				return "", "", false, unsupported("-d needs a folder")
			}
			i++
			dir = args[i]
		case strings.HasPrefix(a, "-"):
			return "", "", false, unsupported("option %s (only -q, -o, -d DIR)", a)
		case file == "":
			file = a
		default:
			return "", "", false, unsupported("extracting named members (%s)", a)
		}
	}
	if file == "" {
		return "", "", false, unsupported("unzip without an archive")
	}
	return file, dir, quiet, nil
}

func checkUnzip(args []string, _ int) error {
	_, _, _, err := parseUnzip(args)
	return err
}

func runUnzip(r *shRun, args []string, _ string) int {
	file, dir, quiet, _ := parseUnzip(args) // checked
	src, err := r.path(file)
	var content string
	if err == nil {
		content, err = r.d.S.FS.Read(src)
	}
	if err != nil {
		r.errf("unzip:  cannot find or open %s, %s.zip or %s.ZIP.", file, file, file)
		return 9
	}
	zr, err := zip.NewReader(bytes.NewReader([]byte(content)), int64(len(content)))
	if err != nil {
		r.errf("  End-of-central-directory signature not found.  %s is not a zipfile.", file)
		return 9
	}
	if len(zr.File) > maxArchiveEntries {
		r.errf("unzip: %s: more than %d entries", file, maxArchiveEntries)
		return 9
	}
	var entries []archiveEntry
	total := 0
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			entries = append(entries, archiveEntry{name: f.Name, dir: true})
			continue
		}
		if !f.Mode().IsRegular() {
			r.errf("unzip: %s: links and special files are not supported by the simulator", f.Name)
			return 9
		}
		if f.UncompressedSize64 > vfs.MaxFileBytes {
			r.errf("unzip: %s: %d bytes exceed the simulator's %d per file", f.Name, f.UncompressedSize64, vfs.MaxFileBytes)
			return 9
		}
		rc, err := f.Open()
		if err != nil {
			r.errf("unzip: %s: %v", f.Name, err)
			return 9
		}
		b, err := io.ReadAll(io.LimitReader(rc, vfs.MaxFileBytes+1))
		rc.Close()
		if err != nil {
			r.errf("unzip: %s: %v", f.Name, err)
			return 9
		}
		total += len(b)
		if total > maxArchiveBytes {
			r.errf("unzip: %s: more than %d bytes in all", file, maxArchiveBytes)
			return 9
		}
		entries = append(entries, archiveEntry{name: f.Name, data: b})
	}
	if !quiet {
		fmt.Fprintf(&r.stdout, "Archive:  %s\n", file)
	}
	return r.extract("unzip", dir, !quiet, false, entries)
}

// extract writes members under dir (the working folder by default),
// creating their folders; a member that would land outside dir is refused
// before anything is written.
func (r *shRun) extract(prog, dir string, verbose, unlink bool, entries []archiveEntry) int {
	base := r.cwd
	if dir != "" {
		p, err := r.path(dir)
		if err != nil || !r.d.S.FS.IsDir(p) {
			r.errf("%s: %s: Cannot open: No such file or directory", prog, dir)
			return 2
		}
		base = p
	}
	type target struct {
		p string
		e archiveEntry
	}
	var targets []target
	for _, e := range entries {
		name := strings.TrimPrefix(e.name, "./")
		if name == "" || name == "." {
			continue
		}
		p := path.Join(base, name)
		if path.IsAbs(name) || (p != base && !strings.HasPrefix(p, base+"/")) {
			r.errf("%s: %s: member name leaves the target folder; nothing extracted", prog, e.name)
			return 2
		}
		if err := r.writable(p); err != nil {
			r.errf("%s: %s: Cannot open: Permission denied", prog, e.name)
			return 2
		}
		targets = append(targets, target{p, e})
	}
	for _, t := range targets {
		if t.e.dir {
			if unlink && r.d.S.FS.IsDir(t.p) {
				_ = r.d.S.FS.Remove(t.p, true) // --recursive-unlink empties it first
			}
			if err := r.d.S.FS.Mkdir(t.p, true); err != nil {
				r.errf("%s: %s: Cannot mkdir: %s", prog, t.e.name, strerror(err))
				return 2
			}
		} else {
			if err := r.d.S.FS.Mkdir(path.Dir(t.p), true); err != nil {
				r.errf("%s: %s: Cannot mkdir: %s", prog, t.e.name, strerror(err))
				return 2
			}
			if err := r.d.S.FS.Write(t.p, string(t.e.data)); err != nil {
				r.errf("%s: %s: Cannot open: %s", prog, t.e.name, strerror(err))
				return 2
			}
		}
		if verbose {
			if prog == "unzip" {
				fmt.Fprintf(&r.stdout, "  inflating: %s\n", t.p)
			} else {
				r.stdout.WriteString(t.e.name + "\n")
			}
		}
	}
	return 0
}
