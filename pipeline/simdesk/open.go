package simdesk

import "strings"

// isSheetPath reports whether a file opens in the Sheet app.
func isSheetPath(p string) bool { return strings.HasSuffix(strings.ToLower(p), ".csv") }

// openFile opens a file in the app for its type, as a double click in the
// file manager does: .csv files in Sheet, everything else in the editor. A
// document with unsaved changes is not dropped: its app asks first.
func (d *Desktop) openFile(p string) {
	if _, ok := d.S.FS.Stat(p); !ok || d.S.FS.IsDir(p) {
		return
	}
	if isSheetPath(p) {
		d.openApp("sheet")
		if d.S.Sheet.Path == p {
			return
		}
		if (sheetApp{}).guard(d, "open:"+p) {
			(sheetApp{}).load(d, p)
		}
		return
	}
	d.openApp("editor")
	if d.S.Editor.Path == p {
		return
	}
	if (editorApp{}).guard(d, "open:"+p) {
		(editorApp{}).load(d, p)
	}
}

// openPath opens a file in its app or a folder in the file manager.
func (d *Desktop) openPath(p string) {
	if d.S.FS.IsDir(p) {
		d.openApp("files")
		(filesApp{}).navigate(&d.S, p)
		return
	}
	d.openFile(p)
}
