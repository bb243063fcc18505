package simdesk

import (
	"fmt"
	"path"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// fileDoc is an app that edits one file-backed document (the text editor,
// the sheet): both share the open, save-as and unsaved-changes dialogs.
type fileDoc interface {
	proceed(d *Desktop, then string)
	load(d *Desktop, p string) bool
	save(d *Desktop, p string) error
	saveAsDialog(d *Desktop, then string)
}

// docDialogDone applies cmd to the document dialog in *slot, for a document
// currently saved at cur ("" when never saved). It reports false for a
// dialog kind or command it does not handle, which the app then handles.
func docDialogDone(d *Desktop, a fileDoc, slot **Dialog, cur, cmd string) bool {
	dl := *slot
	switch {
	case cmd == "cancel" || dl.Kind == "error":
		*slot = nil
	case dl.Kind == "unsaved" && cmd == "discard":
		*slot = nil
		a.proceed(d, dl.Then)
	case dl.Kind == "unsaved" && cmd == "ok":
		*slot = nil
		if cur == "" {
			a.saveAsDialog(d, dl.Then)
			return true
		}
		if err := a.save(d, cur); err != nil {
			*slot = &Dialog{Kind: "error", Error: "Cannot save: " + errText(err)}
			return true
		}
		a.proceed(d, dl.Then)
	case dl.Kind == "open" && cmd == "ok":
		p, err := vfs.Clean(dl.Field.Text)
		if err != nil {
			dl.Error = "Invalid path"
			return true
		}
		if d.S.FS.IsDir(p) {
			dl.Field.SetText(vfs.Short(p) + "/")
			dl.Pick, dl.Scroll = "", 0
			return true
		}
		if _, ok := d.S.FS.Stat(p); !ok {
			dl.Error = "No such file: " + vfs.Short(p)
			return true
		}
		*slot = nil
		a.load(d, p)
	case dl.Kind == "save_as" && cmd == "ok":
		p, err := vfs.Clean(dl.Field.Text)
		if err == nil && strings.HasSuffix(strings.TrimSpace(dl.Field.Text), "/") {
			err = fmt.Errorf("a file name is needed")
		}
		if err == nil {
			err = vfs.ValidName(path.Base(p))
		}
		if err == nil {
			err = a.save(d, p)
		}
		if err != nil {
			dl.Error = "Cannot save: " + errText(err)
			return true
		}
		then := dl.Then
		*slot = nil
		if then != "" {
			a.proceed(d, then)
		}
	default:
		return false
	}
	return true
}
