package simdesk

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

func TestShellOperators(t *testing.T) {
	d := newDesk(t, 1)
	cases := []struct {
		line, out string
		code      int
	}{
		{"mkdir -p ~/Desktop/photos && mkdir -p ~/Desktop/cpjpg", "", 0},
		{"mkdir -p d && ls d", "", 0},
		{"false && echo no || echo yes", "yes\n", 0},
		{"true || echo no; echo after", "after\n", 0},
		{"echo hi | cat", "hi\n", 0},
		{"echo one > ~/o.txt && echo two >> ~/o.txt && cat ~/o.txt", "one\ntwo\n", 0},
		{"cat ~/missing 2>/dev/null || echo gone", "gone\n", 0},
		{"cat ~/missing", "", 1},
		{"sourceDir=\"/home/user/Desktop/\"\nmkdir -p \"$sourceDir\"/dir1/dir2\nmkdir -p \"$sourceDir\"/dir3/dir4", "", 0},
		{"cd ~/Desktop && pwd && touch t.txt && ls", "/home/user/Desktop\ncpjpg\ndir1\ndir3\nphotos\nt.txt\ntodo.txt\n", 0},
		{"export X=1; echo $X ${X}2 '$X'", "1 12 $X\n", 0},
		{"echo -n a; echo -e 'b\\tc'", "ab\tc\n", 0},
		{"chmod +x ~/o.txt && echo ok", "ok\n", 0},
		{"chmod +x ~/nope.sh", "", 1},
		{"ls ~/Desktop/*.txt", "/home/user/Desktop/t.txt\n/home/user/Desktop/todo.txt\n", 0},
		{"mkdir /home/test1", "", 1}, // a user without root
		{"echo x 2>&1 >/dev/null", "", 0},
	}
	for _, c := range cases {
		r := d.RunShell(c.line)
		if r.Unsupported != "" || r.Output != c.out || r.ReturnCode != c.code {
			t.Errorf("%q: %+v, want output %q code %d", c.line, r, c.out, c.code)
		}
	}
	if !d.S.FS.IsDir(vfs.Home+"/Desktop/dir1/dir2") || !d.S.FS.IsDir(vfs.Home+"/Desktop/dir3/dir4") || !d.S.FS.IsDir(vfs.Home+"/d") {
		t.Fatal("folders missing")
	}
	if _, ok := d.S.FS.Stat("/home/test1"); ok {
		t.Fatal("created a folder outside home")
	}
	// No operator ever becomes a file or folder.
	for _, e := range d.S.FS.Entries {
		switch path := e.Name(); path {
		case "&&", "||", "|", ";", ">", ">>", "ls":
			t.Fatalf("stray entry %s", e.Path)
		}
	}
}

// TestShellRefusesAndChangesNothing: a line the simulator cannot run in
// full is refused before anything runs.
func TestShellRefusesAndChangesNothing(t *testing.T) {
	d := newDesk(t, 1)
	before, _ := d.MarshalState()
	for _, line := range []string{
		"mkdir -p ~/x && curl http://example.com",
		"mkdir -p ~/x; echo pw | sudo -S apt update -y",
		"mkdir -p ~/x && cat $(ls)",
		"mkdir -p ~/x && (cd /tmp; ls)",
		"mkdir -p ~/x & sleep 1",
		"mkdir -p ~/x && if [ -f a ]; then echo; fi",
		"mkdir -p ~/x && ls -l",
		"mkdir -p ~/x && libreoffice --convert-to csv ~/a.xlsx",
		"mkdir -p ~/x && cat <<EOF\nhi\nEOF",
		"mkdir -p ~/x && gsettings set org.gnome.desktop.notifications show-banners true",
	} {
		r := d.RunShell(line)
		if r.Unsupported == "" {
			t.Errorf("%q ran: %+v", line, r)
		}
	}
	for _, argv := range [][]string{{"curl", "x"}, {"mkdir", "-p", "~/x", "&&", "ls"}, {"python", "script.py"}, {"/bin/bash", "-c", "mkdir -p ~/x && curl x"}} {
		r := d.RunCommand(argv)
		if r.Unsupported == "" {
			t.Errorf("%q ran: %+v", argv, r)
		}
		if argv[0] == "curl" && !strings.Contains(r.Unsupported, "[Errno 2] No such file or directory: 'curl'") {
			t.Errorf("unknown program not in subprocess's words: %s", r.Unsupported)
		}
	}
	after, _ := d.MarshalState()
	if !bytes.Equal(before, after) {
		t.Fatal("a refused command changed the state")
	}
}

func TestShellForms(t *testing.T) {
	d := newDesk(t, 1)
	for _, argv := range [][]string{
		{"bash", "-c", "mkdir -p ~/b1 && touch ~/b1/f"},
		{"/bin/bash", "-c", "mkdir -p ~/b2 && touch ~/b2/f"},
		{"sh", "-c", "mkdir -p ~/b3; touch ~/b3/f"},
		{"/usr/bin/env", "bash", "-c", "mkdir -p ~/b4 && touch ~/b4/f"},
		{"env", "A=1", "sh", "-c", "mkdir -p ~/b5 && touch ~/b5/f"},
	} {
		if r := d.RunCommand(argv); r.Unsupported != "" || r.ReturnCode != 0 {
			t.Fatalf("%q: %+v", argv, r)
		}
	}
	for i := 1; i <= 5; i++ {
		if _, ok := d.S.FS.Stat(vfs.Home + "/b" + string(rune('0'+i)) + "/f"); !ok {
			t.Fatalf("b%d/f missing", i)
		}
	}
	// A script file of the simulated file system runs through the shell.
	if err := d.setupCreateFile("~/setup.sh", "#!/bin/bash\nmkdir -p ~/fromscript\necho done\n"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"chmod +x setup.sh && ./setup.sh", "bash ./setup.sh"} {
		if r := d.RunShell(line); r.Unsupported != "" || r.Output != "done\n" || !d.S.FS.IsDir(vfs.Home+"/fromscript") {
			t.Fatalf("%q: %+v", line, r)
		}
	}
	// A script using what the simulator lacks is refused, and what ran
	// before it in the same line is undone.
	if err := d.setupCreateFile("~/bad.sh", "mkdir -p ~/half\ngsettings set a b c\n"); err != nil {
		t.Fatal(err)
	}
	if r := d.RunShell("mkdir -p ~/before && bash bad.sh"); r.Unsupported == "" || d.S.FS.IsDir(vfs.Home+"/before") || d.S.FS.IsDir(vfs.Home+"/half") {
		t.Fatalf("refused script left changes: %+v", r)
	}
	// python -c prints.
	if r := d.RunCommand([]string{"python", "-c", "import platform; print(platform.system())"}); r.Output != "Linux\n" || r.ReturnCode != 0 {
		t.Fatalf("platform: %+v", r)
	}
	if r := d.RunShell(`python3 -c "import platform; print(platform.machine())"`); r.Output != "x86_64\n" {
		t.Fatalf("machine: %+v", r)
	}
	if r := d.RunCommand([]string{"python", "-c", "import os; os.system('ls')"}); r.ReturnCode != 1 || !strings.Contains(r.Error, "os.system") {
		t.Fatalf("python outside the subset: %+v", r)
	}
}

func TestShellArchives(t *testing.T) {
	d := newDesk(t, 1)
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "profile/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "profile/prefs.js", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5})
	tw.Write([]byte("prefs"))
	tw.Close()
	gz.Close()
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("proj/main.py")
	w.Write([]byte("print(1)\n"))
	zw.Close()
	if err := d.setupCreateFile("~/p.tar.gz", tgz.String()); err != nil {
		t.Fatal(err)
	}
	if err := d.setupCreateFile("~/Downloads/proj.zip", zb.String()); err != nil {
		t.Fatal(err)
	}
	r := d.RunCommand([]string{"tar", "-xzv", "--recursive-unlink", "-f", "/home/user/p.tar.gz", "-C", "/home/user/"})
	if r.ReturnCode != 0 || !strings.Contains(r.Output, "profile/prefs.js") {
		t.Fatalf("tar: %+v", r)
	}
	if s, _ := d.S.FS.Read(vfs.Home + "/profile/prefs.js"); s != "prefs" {
		t.Fatalf("tar extracted %q", s)
	}
	r = d.RunCommand([]string{"/bin/bash", "-c", "cd /home/user/Downloads && unzip -q proj.zip && rm -rf proj.zip"})
	if r.ReturnCode != 0 {
		t.Fatalf("unzip: %+v", r)
	}
	if s, _ := d.S.FS.Read(vfs.Home + "/Downloads/proj/main.py"); s != "print(1)\n" {
		t.Fatalf("unzip extracted %q", s)
	}
	if _, ok := d.S.FS.Stat(vfs.Home + "/Downloads/proj.zip"); ok {
		t.Fatal("rm after unzip did not run")
	}
	if r := d.RunCommand([]string{"tar", "-xzf", "/home/user/missing.tar.gz"}); r.ReturnCode != 2 || r.Unsupported != "" {
		t.Fatalf("missing archive: %+v", r)
	}
	if r := d.RunCommand([]string{"tar", "-czf", "out.tgz", "profile"}); r.Unsupported == "" {
		t.Fatalf("tar -c ran: %+v", r)
	}
}

// TestShellHostGuard: commands act on the simulated file system only,
// never on the host's.
func TestShellHostGuard(t *testing.T) {
	host := t.TempDir()
	victim := filepath.Join(host, "keep.txt")
	if err := os.WriteFile(victim, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDesk(t, 1)
	for _, line := range []string{"rm -rf " + host, "mkdir -p " + host + "/made", "echo x > " + victim, "rm -rf /", "rm -rf ~"} {
		d.RunShell(line)
	}
	d.RunCommand([]string{"rm", "-rf", host})
	if b, err := os.ReadFile(victim); err != nil || string(b) != "host" {
		t.Fatalf("the host file changed: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(host, "made")); !os.IsNotExist(err) {
		t.Fatal("a host folder was created")
	}
	if !d.S.FS.IsDir(vfs.Home) {
		t.Fatal("rm -rf ~ removed the simulated home")
	}
}

func TestShellTest(t *testing.T) {
	d := newDesk(t, 1)
	for line, want := range map[string]string{
		"[ -d ~/Desktop ] && echo 'Directory exists.' || echo 'Directory does not exist.'":         "Directory exists.\n",
		"[ -d ~/Desktop/nope ] && echo 'Directory exists.' || echo 'Directory does not exist.'":    "Directory does not exist.\n",
		"[ -f /home/user/Desktop/todo.txt ] && echo 'File exists.' || echo 'File does not exist.'": "File exists.\n",
		"test 3 -gt 2 && test ! -z x && [ a != b ] && echo ok":                                     "ok\n",
	} {
		if r := d.RunShell(line); r.Output != want || r.Unsupported != "" {
			t.Errorf("%s: %+v", line, r)
		}
	}
	if r := d.RunShell("[ -f a -a -f b ]"); r.Unsupported == "" {
		t.Fatalf("-a ran: %+v", r)
	}
}

// FuzzShell: no command line panics, and none changes anything outside
// the user's folders.
func FuzzShell(f *testing.F) {
	for _, s := range []string{"mkdir -p ~/a && ls | cat > ~/b", "echo \"$X\" '${Y}' >> /tmp/x; cd ..; rm -rf *", "tar -xzvf a -C /", "[ -d / ] || echo $(", "a=1\nb=\"$a\"2\nexport c=$b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		d, err := New(DefaultWidth, DefaultHeight, 1)
		if err != nil {
			t.Fatal(err)
		}
		d.RunShell(line)
		for _, e := range d.S.FS.Entries {
			if e.Path != "/home" && e.Path != vfs.Home && !strings.HasPrefix(e.Path, vfs.Home+"/") && e.Path != "/tmp" && !strings.HasPrefix(e.Path, "/tmp/") {
				t.Fatalf("%q made %s", line, e.Path)
			}
		}
		if err := d.S.validate(); err != nil {
			t.Fatalf("%q left an invalid state: %v", line, err)
		}
	})
}

// TestShellBounds: a script that runs itself several times at every level
// stops at the command budget, changing nothing.
func TestShellBounds(t *testing.T) {
	d := newDesk(t, 1)
	// s0 runs s1 ten times, s1 runs s2 ten times, ...: 10^7 commands.
	for i := 0; i < 7; i++ {
		if err := d.setupCreateFile(fmt.Sprintf("~/s%d.sh", i), strings.Repeat(fmt.Sprintf("bash ~/s%d.sh\n", i+1), 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.setupCreateFile("~/s7.sh", "touch ~/t\n"); err != nil {
		t.Fatal(err)
	}
	if r := d.RunShell("bash ~/x.sh"); r.ReturnCode != 127 {
		t.Fatalf("a missing script: %+v", r)
	}
	before, _ := d.MarshalState()
	if r := d.RunShell("bash ~/s0.sh"); r.Unsupported == "" || !strings.Contains(r.Unsupported, "commands in one line") {
		t.Fatalf("%+v", r)
	}
	if after, _ := d.MarshalState(); !bytes.Equal(before, after) {
		t.Fatal("a refused line changed the state")
	}
}
