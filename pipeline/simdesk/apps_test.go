package simdesk

import (
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk/action"
)

// ui drives a desktop the way an agent does: by widget id (through the
// view tree, like reading the accessibility tree) and keyboard.
type ui struct {
	t *testing.T
	d *Desktop
}

func (u ui) act(s string) {
	u.t.Helper()
	a, err := action.Parse(s)
	if err != nil {
		u.t.Fatal(err)
	}
	if msg := u.d.Apply(a); msg != "" {
		u.t.Fatalf("%s: %s", s, msg)
	}
}

func (u ui) click(kind, id string) {
	u.t.Helper()
	a, err := clickID(u.d, kind, id)
	if err != nil {
		u.t.Fatal(err)
	}
	if msg := u.d.Apply(a); msg != "" {
		u.t.Fatalf("%s %s: %s", kind, id, msg)
	}
}

func (u ui) typ(s string) {
	u.t.Helper()
	if msg := u.d.Apply(action.TypeAction(s)); msg != "" {
		u.t.Fatal(msg)
	}
}

func setupUI(t *testing.T, steps ...SetupStep) ui {
	d := newDesk(t, 3)
	if err := d.ApplySetup(BuildSetup(steps...)); err != nil {
		t.Fatal(err)
	}
	return ui{t, d}
}

func TestEditorFindReplaceAndUnsavedPrompt(t *testing.T) {
	u := setupUI(t, createFile("~/n.txt", "a foo and foo\nfoo\n"), openFile("~/n.txt"))
	u.act("hotkey ctrl h")
	u.typ("foo")
	u.act("key tab")
	u.typ("bar\n")
	if got := u.d.S.Editor.Buf.Text(); got != "a bar and bar\nbar\n" || !u.d.S.Editor.Dirty {
		t.Fatalf("after replace: %q dirty=%v", got, u.d.S.Editor.Dirty)
	}
	if !strings.Contains(u.d.S.Editor.Dialog.Info, "Replaced 3") {
		t.Fatalf("info %q", u.d.S.Editor.Dialog.Info)
	}
	u.act("key escape")
	if title := (editorApp{}).title(&u.d.S); title != "*n.txt - Text Editor" {
		t.Fatalf("title %q", title)
	}
	u.click("click", "editor/close")
	if u.d.S.Editor.Dialog == nil || u.d.S.Editor.Dialog.Kind != "unsaved" {
		t.Fatal("closing with unsaved changes did not ask")
	}
	u.click("click", "editor/dlg:btn:ok")
	if u.d.S.window("editor") != nil {
		t.Fatal("editor still open after Save")
	}
	if got, _ := u.d.S.FS.Read("/home/user/n.txt"); got != "a bar and bar\nbar\n" {
		t.Fatalf("saved %q", got)
	}
}

// TestEditorGoToLineAndSelectToEnd: Ctrl+G moves the caret to the start of
// a numbered line (refusing a number outside the document), shift+end
// selects the rest of the line, typing replaces the selection, a caret move
// drops it, and cut takes it to the clipboard.
func TestEditorGoToLineAndSelectToEnd(t *testing.T) {
	u := setupUI(t, createFile("~/n.txt", "1. one\n2. two\n3. three"), openFile("~/n.txt"))
	b := &u.d.S.Editor.Buf
	u.act("hotkey ctrl g")
	u.typ("9\n")
	if dl := u.d.S.Editor.Dialog; dl == nil || dl.Kind != "goto" || !strings.Contains(dl.Error, "1 to 3") {
		t.Fatalf("line 9 of 3: dialog %+v", dl)
	}
	u.act("hotkey ctrl a")
	u.typ("2\n")
	if u.d.S.Editor.Dialog != nil || b.Line != 1 || b.Col != 0 {
		t.Fatalf("after Go to Line 2: dialog %+v, caret %d:%d", u.d.S.Editor.Dialog, b.Line, b.Col)
	}
	u.act("hotkey shift end")
	if b.Sel != len("2. two") {
		t.Fatalf("shift+end selected %d runes, want %d", b.Sel, len("2. two"))
	}
	// The selection is drawn: a highlight as wide as the selected runes.
	highlit := 0
	if n := u.d.View().Find("editor/text"); n != nil {
		for _, c := range n.Children {
			if c.Role == RolePanel && c.Style == cAccentLight {
				highlit = c.Rect.Dx()
			}
		}
	}
	if highlit != len("2. two")*charW {
		t.Fatalf("selection highlight %d px wide, want %d", highlit, len("2. two")*charW)
	}
	u.typ("2. TWO!")
	if got := b.Text(); got != "1. one\n2. TWO!\n3. three" || b.Sel != 0 || !u.d.S.Editor.Dirty {
		t.Fatalf("typing over the selection: %q sel=%d", got, b.Sel)
	}
	// A caret move drops the selection; delete then removes one rune.
	u.act("hotkey ctrl g")
	u.typ("3\n")
	u.act("hotkey shift end")
	u.act("key right")
	u.act("key delete")
	if got := b.Text(); got != "1. one\n2. TWO!\n3 three" {
		t.Fatalf("delete after a caret move: %q", got)
	}
	// Cut takes a selection to the clipboard.
	u.act("key home")
	u.act("hotkey shift end")
	u.act("hotkey ctrl x")
	if got := b.Text(); got != "1. one\n2. TWO!\n" || u.d.S.Clipboard != "3 three" {
		t.Fatalf("cut: text %q clipboard %q", got, u.d.S.Clipboard)
	}
}

func TestSheetFormulaSortAndNameBox(t *testing.T) {
	u := setupUI(t, createFile("~/s.csv", "Name,Score\nb,3\na,10\nc,1\n"), openFile("~/s.csv"))
	u.click("click", "sheet/cell:B5")
	u.typ("=SUM(B2:B4)\n")
	if v := u.d.S.Sheet.Data.Evaluator().Value(4, 1); v.String() != "14" {
		t.Fatalf("B5 = %s", v)
	}
	u.click("click", "sheet/col:A")
	u.click("click", "sheet/menu:Data")
	u.click("click", "sheet/pop:sort_asc")
	if got := u.d.S.Sheet.Data.CSV(); !strings.HasPrefix(got, "Name,Score\na,10\nb,3\nc,1\n") {
		t.Fatalf("sorted %q", got)
	}
	u.click("click", "sheet/namebox")
	u.typ("Z150\n")
	if u.d.S.Sheet.Row != 149 || u.d.S.Sheet.Col != 25 || u.d.View().Find("sheet/cell:J150") == nil {
		t.Fatalf("name box went to %d,%d", u.d.S.Sheet.Row, u.d.S.Sheet.Col)
	}
	u.typ("x\t")
	u.act("hotkey ctrl s")
	if got, _ := u.d.S.FS.Read("/home/user/s.csv"); !strings.Contains(got, "x") || u.d.S.Sheet.Dirty {
		t.Fatal("save lost the edit")
	}
}

func TestSettingsRefusesBadValueAndScrolls(t *testing.T) {
	u := setupUI(t, openApp("settings"))
	u.click("click", "settings/page:network")
	u.click("click", "settings/set:network.proxy_port")
	u.act("hotkey ctrl a")
	u.typ("eighty\n")
	if u.d.S.Settings.Message == "" || u.d.S.Settings.Edit == nil {
		t.Fatal("a non-numeric port was accepted")
	}
	u.act("hotkey ctrl a")
	u.typ("8080\n")
	if v, _ := u.d.S.SettingValue("network.proxy_port"); v != "8080" {
		t.Fatalf("port %v", v)
	}
	u.click("click", "settings/page:privacy")
	if u.d.View().Find("settings/set:privacy.firewall") != nil {
		t.Fatal("the last privacy row is visible without scrolling")
	}
	u.act("scroll down 5 600 500")
	if u.d.View().Find("settings/set:privacy.firewall") == nil {
		t.Fatal("scrolling did not reveal the last row")
	}
	u.click("click", "settings/set:privacy.lock_after")
	u.click("click", "settings/pop:opt:privacy.lock_after:4")
	if v, _ := u.d.S.SettingValue("privacy.lock_after"); v != "Never" {
		t.Fatalf("lock_after %v", v)
	}
}

func TestMailValidatesRecipients(t *testing.T) {
	u := setupUI(t, openApp("mail"))
	u.click("click", "mail/compose")
	u.typ("not an address")
	u.click("click", "mail/send")
	if c := u.d.S.Mail.Compose; c == nil || !strings.Contains(c.Error, "Invalid address") || len(u.d.S.Mail.Sent) != 0 {
		t.Fatal("sent to an invalid address")
	}
	u.click("triple_click", "mail/to")
	u.typ("a@x.org ,b@y.org")
	u.act("key tab")
	u.act("key tab")
	u.typ("Hi\nline one\nline two")
	u.act("hotkey ctrl enter")
	if len(u.d.S.Mail.Sent) != 1 || u.d.S.Mail.Sent[0].To != "a@x.org, b@y.org" || u.d.S.Mail.Sent[0].Body != "line one\nline two" {
		t.Fatalf("sent %+v", u.d.S.Mail.Sent)
	}
}

func TestFilesContextMenuCopyAndWindowDrag(t *testing.T) {
	u := setupUI(t, createFile("~/Documents/r.txt", "r"), openApp("files"))
	u.click("click", "files/place:/home/user/Documents")
	u.click("right_click", "files/item:r.txt")
	u.click("click", "files/pop:copy")
	u.click("right_click", "files/list")
	u.click("click", "files/pop:paste")
	if got, err := u.d.S.FS.Read("/home/user/Documents/r (2).txt"); err != nil || got != "r" {
		t.Fatalf("copy: %q %v", got, err)
	}
	w := *u.d.S.window("files")
	title := u.d.View().Find("files/title").Center()
	x, y := gridPoint(u.d, title)
	if msg := u.d.Apply(action.DragAction(x, y, x+50, y+40)); msg != "" {
		t.Fatal(msg)
	}
	if nw := u.d.S.window("files"); nw.X <= w.X || nw.Y <= w.Y {
		t.Fatalf("window did not move: %+v -> %+v", w, *nw)
	}
	// Double-clicking a .csv opens it in Sheet.
	u.act("key escape")
	if err := u.d.ApplySetup(BuildSetup(createFile("~/Documents/t.csv", "1,2\n"))); err != nil {
		t.Fatal(err)
	}
	u.click("double_click", "files/item:t.csv")
	if u.d.S.Focused() != "sheet" || u.d.S.Sheet.Path != "/home/user/Documents/t.csv" {
		t.Fatalf("focus %s, sheet %s", u.d.S.Focused(), u.d.S.Sheet.Path)
	}
}

func TestPyAutoGUICommandsOnDesktop(t *testing.T) {
	d := newDesk(t, 1)
	res := d.RunCommand([]string{"python", "-c", "import pyautogui; pyautogui.FAILSAFE = False; pyautogui.click(60, 16); pyautogui.hotkey('ctrl', 'shift', 'n'); pyautogui.typewrite('Made\\n')"})
	if res.ReturnCode != 0 {
		t.Fatal(res.Error)
	}
	if !d.S.FS.IsDir("/home/user/Made") {
		t.Fatal("pyautogui script did not create the folder")
	}
	if res := d.RunCommand([]string{"python", "-c", "pyautogui.launchMissiles()"}); res.ReturnCode == 0 {
		t.Fatal("unknown function accepted")
	}
	if res := d.RunCommand([]string{"rm", "-rf", "/"}); res.ReturnCode == 0 {
		t.Fatal("removing the root succeeded")
	}
	if res := d.RunCommand([]string{"cat", "~/Desktop/todo.txt"}); !strings.Contains(res.Output, "plants") {
		t.Fatalf("cat: %+v", res)
	}
}
