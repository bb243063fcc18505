// Package view renders the pages researchers look at episodes with: a
// trajectory (every step's screenshot with its action drawn on it, the
// response, the accessibility tree, the step's tokens and trainable part),
// a rollout group side by side, and a task with its pass-rate history.
//
// The same renderer serves two places: `cualake view` writes static pages
// that open from disk (screenshots written once, by hash, into a blobs/
// folder beside them), and `cualake ui` renders them live. Links says
// where a page's links and images point in each.
package view

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Page kinds, as used in links and file names.
const (
	KindTrajectory = "trajectory"
	KindGroup      = "group"
	KindTask       = "task"
)

// Links says where a page's links point: other pages, and blobs (images).
type Links interface {
	Page(kind, id string) string
	Blob(hash, mime string) string
}

// Options are what a render needs besides the data.
type Options struct {
	Links      Links
	Tokenizers Tokenizers // nil: token ids are shown undecoded
	Snapshot   string     // the snapshot id the page was rendered from
	// Note is a line under the header (how to re-render, where it is served).
	Note string
}

// PageName is the file name of a static page: kind-ID.html with every
// character outside [A-Za-z0-9._-] replaced by "_" and, when any was, 8
// hex digits of the id's sha256 appended so that distinct ids never share
// a file ("files-003@it001#02" -> "trajectory-files-003_it001_02-1a2b3c4d.html").
func PageName(kind, id string) string {
	return kind + "-" + safeName(id) + ".html"
}

func safeName(id string) string {
	var b strings.Builder
	changed := id == ""
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			changed = true
		}
	}
	s := b.String()
	if len(s) > 120 {
		s, changed = s[:120], true
	}
	if changed {
		sum := sha256.Sum256([]byte(id))
		s += "-" + hex.EncodeToString(sum[:4])
	}
	return s
}

// BlobDir is the folder, beside the static pages, that holds their
// screenshots, one file per hash.
const BlobDir = "blobs"

// BlobFile is a blob's file name in BlobDir ("" for mime types that are
// not images, which pages embed instead).
func BlobFile(hash, mime string) string {
	ext := map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}[strings.ToLower(strings.TrimSpace(strings.Split(mime, ";")[0]))]
	if ext == "" {
		return ""
	}
	return hash + ext
}

// StaticLinks are the links of pages written by `cualake view`: pages by
// PageName under Prefix (relative to the page that links: "" between
// viewer pages, "view/" from a report in the folder above), blobs in
// BlobDir beside the pages.
type StaticLinks struct{ Prefix string }

// Page implements Links.
func (s StaticLinks) Page(kind, id string) string { return s.Prefix + PageName(kind, id) }

// Blob implements Links.
func (s StaticLinks) Blob(hash, mime string) string {
	if f := BlobFile(hash, mime); f != "" {
		return s.Prefix + BlobDir + "/" + f
	}
	return ""
}

// IDColumns maps the result columns that hold ids to the page kind they
// link to, for tables in reports and notebooks.
var IDColumns = map[string]string{"trajectory_id": KindTrajectory, "group_id": KindGroup, "task_id": KindTask}

// IDLink returns a function for notebook tables: the link of a value in an
// id column ("" for other columns and empty values).
func IDLink(l Links) func(column, value string) string {
	return func(column, value string) string {
		kind, ok := IDColumns[column]
		if !ok || value == "" || value == "NULL" {
			return ""
		}
		return l.Page(kind, value)
	}
}
