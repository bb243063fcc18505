package judge

import (
	"errors"
	"strings"
	"testing"
)

// fakeSource is a tiny in-memory Source.
type fakeSource struct {
	files    map[string]string
	dirs     map[string][]string
	settings map[string]any
	mail     []Mail
	term     string
}

func (f *fakeSource) Stat(p string) (bool, bool, error) {
	if _, ok := f.dirs[p]; ok {
		return true, true, nil
	}
	_, ok := f.files[p]
	return ok, false, nil
}

func (f *fakeSource) ReadFile(p string) (string, error) {
	s, ok := f.files[p]
	if !ok {
		return "", ErrNotFound
	}
	return s, nil
}

func (f *fakeSource) ListDir(p string) ([]string, error) {
	d, ok := f.dirs[p]
	if !ok {
		return nil, ErrNotFound
	}
	return d, nil
}

func (f *fakeSource) Setting(k string) (any, error) {
	v, ok := f.settings[k]
	if !ok {
		return nil, ErrNotFound
	}
	return v, nil
}
func (f *fakeSource) SentMail() ([]Mail, error)          { return f.mail, nil }
func (f *fakeSource) Windows() (string, []string, error) { return "files", []string{"files"}, nil }
func (f *fakeSource) Editor() (EditorInfo, error)        { return EditorInfo{}, ErrUnsupported }
func (f *fakeSource) Clipboard() (string, error)         { return "", nil }
func (f *fakeSource) Terminal() (string, error)          { return f.term, nil }

func src() *fakeSource {
	return &fakeSource{
		files: map[string]string{
			"/home/user/a.txt": "Hello World\n",
			"/home/user/s.csv": "Item,Amount\npens,10\npaper,2.5\n,=SUM(B2:B3)\n",
		},
		dirs:     map[string][]string{"/home/user/D": {"b", "a"}},
		settings: map[string]any{"display.dark_mode": true, "sound.volume": 40.0, "general.language": "Deutsch"},
		mail:     []Mail{{To: "x@y.z", Subject: "Old"}, {To: "a@b.c", Subject: "Re: Plan", Body: "Yes\n> quoted", Attachments: []string{"/home/user/a.txt"}}},
	}
}

func score(t *testing.T, spec string, s Source) float64 {
	t.Helper()
	j, err := Compile(spec)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	r, err := j.Evaluate(s)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	return r.Score
}

func TestMetrics(t *testing.T) {
	cases := []struct {
		spec string
		want float64
	}{
		{`{"func":"exact_match","result":{"type":"file_content","path":"~/a.txt"},"expected":{"type":"rule","rules":{"expected":"Hello World\n"}}}`, 1},
		{`{"func":"exact_match","result":{"type":"file_content","path":"~/a.txt"},"expected":{"type":"rule","rules":{"expected":"hello world"}},"options":{"ignore_case":true,"strip":true}}`, 1},
		{`{"func":"exact_match","result":{"type":"file_content","path":"~/a.txt"},"expected":{"type":"rule","rules":{"expected":"hello world"}}}`, 0},
		{`{"func":"exact_match","result":{"type":"file_content","path":"~/missing"},"expected":{"type":"rule","rules":{"expected":""}}}`, 0},
		{`{"func":"fuzzy_match","result":{"type":"vm_file","path":"~/a.txt","dest":"a.txt"},"expected":{"type":"rule","rules":{"expected":"Hello Wrld\n"}}}`, 1},
		{`{"func":"check_include_exclude","result":{"type":"file_content","path":"~/a.txt"},"expected":{"type":"rule","rules":{"include":["World"],"exclude":["Mars"]}}}`, 1},
		{`{"func":"check_include_exclude","result":{"type":"file_content","path":"~/a.txt"},"expected":{"type":"rule","rules":{"exclude":["Hello"]}}}`, 0},
		{`{"func":"compare_number","result":{"type":"sheet_cell","path":"~/s.csv","cell":"B4"},"expected":{"type":"rule","rules":{"expected":12.5}}}`, 1},
		{`{"func":"compare_number","result":{"type":"sheet_cell","path":"~/s.csv","cell":"B4"},"expected":{"type":"rule","rules":{"expected":13}},"options":{"tolerance":0.6}}`, 1},
		{`{"func":"compare_number","result":{"type":"sheet_cell","path":"~/s.csv","cell":"B4"},"expected":{"type":"rule","rules":{"expected":13}}}`, 0},
		{`{"func":"exact_match","result":{"type":"sheet_cell_raw","path":"~/s.csv","cell":"b4"},"expected":{"type":"rule","rules":{"expected":"=sum(b2:b3)"}},"options":{"ignore_case":true}}`, 1},
		{`{"func":"compare_table","result":{"type":"sheet_table","path":"~/s.csv"},"expected":{"type":"rule","rules":{"expected":[["Item","Amount"],["pens",10],["paper","2.50"],["","12.5"]]}}}`, 1},
		{`{"func":"compare_table","result":{"type":"sheet_table","path":"~/s.csv"},"expected":{"type":"rule","rules":{"expected":[["Item","Amount"],["pens",11]]}}}`, 0},
		{`{"func":"is_true","result":{"type":"setting","key":"display.dark_mode"}}`, 1},
		{`{"func":"is_false","result":{"type":"file_exists","path":"~/nope"}}`, 1},
		{`{"func":"is_true","result":{"type":"folder_exists","path":"~/D"}}`, 1},
		{`{"func":"is_true","result":{"type":"file_exists","path":"~/D"}}`, 0},
		{`{"func":"compare_list","result":{"type":"dir_listing","path":"~/D"},"expected":{"type":"rule","rules":{"expected":["a","b"]}}}`, 1},
		{`{"func":"match_in_list","result":{"type":"setting","key":"general.language"},"expected":{"type":"rule","rules":{"expected":["English","Deutsch"]}}}`, 1},
		{`{"func":"exact_match","result":{"type":"sent_mail","field":"subject"},"expected":{"type":"rule","rules":{"expected":"Re: Plan"}}}`, 1},
		{`{"func":"exact_match","result":{"type":"sent_mail","field":"subject","index":0},"expected":{"type":"rule","rules":{"expected":"Old"}}}`, 1},
		{`{"func":"compare_list","result":{"type":"sent_mail","field":"attachments"},"expected":{"type":"rule","rules":{"expected":["/home/user/a.txt"]}}}`, 1},
		{`{"func":"compare_number","result":{"type":"sent_mail_count"},"expected":{"type":"rule","rules":{"expected":2}}}`, 1},
		{`{"func":"exact_match","result":{"type":"active_window"},"expected":{"type":"rule","rules":{"expected":"files"}}}`, 1},
		{`{"func":["is_true","is_true"],"result":[{"type":"setting","key":"display.dark_mode"},{"type":"file_exists","path":"~/nope"}],"expected":[null,null],"conj":"or"}`, 1},
		{`{"func":["is_true","is_true"],"result":[{"type":"setting","key":"display.dark_mode"},{"type":"file_exists","path":"~/nope"}],"expected":[null,null]}`, 0},
		{`{"func":"exact_match","result":{"type":"file_content","path":"~/a.txt"},"expected":{"type":"file_content","path":"~/a.txt"}}`, 1},
		{`{"func":"infeasible"}`, 0},
	}
	for _, c := range cases {
		if got := score(t, c.spec, src()); got != c.want {
			t.Errorf("%s: score %v, want %v", c.spec, got, c.want)
		}
	}
}

// A final fail scores 1 on infeasible tasks and 0 on feasible ones, as in
// OSWorld.
func TestTerminalFail(t *testing.T) {
	s := src()
	s.term = "fail"
	if score(t, `{"func":"infeasible"}`, s) != 1 {
		t.Fatal("fail on an infeasible task should score 1")
	}
	if score(t, `{"func":"is_true","result":{"type":"setting","key":"display.dark_mode"}}`, s) != 0 {
		t.Fatal("fail on a feasible task should score 0")
	}
}

func TestCompileErrorsNameTheField(t *testing.T) {
	cases := []struct{ spec, want string }{
		{`{"func":"frobnicate","result":{"type":"file_content","path":"~/a"}}`, `func: unknown metric "frobnicate"`},
		{`{"func":["is_true","frob"],"result":[{"type":"file_exists","path":"~/a"},{"type":"file_exists","path":"~/a"}],"expected":[null,null]}`, `func[1]: unknown metric`},
		{`{"func":"is_true","result":{"type":"teleport"}}`, `result.type: unknown getter "teleport"`},
		{`{"func":"is_true","result":{"type":"file_exists"}}`, `result.path: required`},
		{`{"func":"is_true","result":{"type":"file_exists","path":"~/a","colour":1}}`, `result.colour: unknown parameter`},
		{`{"func":"exact_match","result":{"type":"file_content","path":"~/a"}}`, `expected: required`},
		{`{"func":"exact_match","result":{"type":"file_content","path":"~/a"},"expected":{"type":"rule","rules":{}}}`, `expected.rules.expected: required`},
		{`{"func":"compare_number","result":{"type":"file_content","path":"~/a"},"expected":{"type":"rule","rules":{"expected":"x"}}}`, `want a number`},
		{`{"func":"check_include_exclude","result":{"type":"file_content","path":"~/a"},"expected":{"type":"file_content","path":"~/b"}}`, `needs a rule`},
		{`{"func":"is_true","result":{"type":"sheet_cell","path":"~/a","cell":"AA1"}}`, `result.cell`},
		{`{"func":"is_true","result":{"type":"sent_mail","field":"bcc"}}`, `result.field`},
		{`{"func":"is_true","result":{"type":"rule","rules":{"expected":1}}}`, `only for expected`},
		{`{"func":["is_true"],"result":[{"type":"file_exists","path":"~/a"},{"type":"file_exists","path":"~/a"}]}`, `result: has 2 items for 1 funcs`},
		{`{"func":"is_true","result":{"type":"file_exists","path":"~/a"},"conj":"xor"}`, `conj`},
		{`{"func":"is_true","result":{"type":"file_exists","path":"~/a"},"options":{"fuzz":1}}`, `options`},
		{`{"func":"is_true","result":{"type":"file_exists","path":"~/a"},"postconfig":5}`, `postconfig`},
		{`{"result":{"type":"file_exists","path":"~/a"}}`, `func: required`},
		{`not json`, `invalid judge spec`},
		{`{"func":"infeasible","result":{"type":"file_exists","path":"~/a"}}`, `takes no result`},
	}
	for _, c := range cases {
		err := Check(c.spec)
		if err == nil || !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%s) = %v, want an ErrSpec containing %q", c.spec, err, c.want)
		}
	}
}

// TestPostconfig: OSWorld's evaluator.postconfig compiles; the judge keeps
// the steps for the environment to run before judging.
func TestPostconfig(t *testing.T) {
	j, err := Compile(`{"func":"is_true","result":{"type":"file_exists","path":"~/a"},"postconfig":[{"type":"sleep","parameters":{"seconds":0.5}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if j.Postconfig != `[{"type":"sleep","parameters":{"seconds":0.5}}]` || !strings.HasSuffix(j.Spec(), `"postconfig":`+j.Postconfig+"}") {
		t.Fatalf("postconfig %q, spec %s", j.Postconfig, j.Spec())
	}
	if again, err := Compile(j.Spec()); err != nil || again.Spec() != j.Spec() {
		t.Fatalf("spec does not round-trip: %v", err)
	}
	if j, _ := Compile(`{"func":"is_true","result":{"type":"file_exists","path":"~/a"},"postconfig":[]}`); j.Postconfig != "" {
		t.Fatalf("empty postconfig kept: %q", j.Postconfig)
	}
}

func TestBuildAndPaths(t *testing.T) {
	spec := Build("and",
		Criterion{Func: "is_true", Result: &Getter{Type: "file_exists", Path: "~/b.txt"}},
		Criterion{Func: "exact_match", Result: &Getter{Type: "file_content", Path: "~/a.txt"}, Expected: &Getter{Type: "rule", Rules: &Rules{Expected: "x"}}, Options: Options{Strip: true}})
	j, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if j.Spec() != spec && j.Spec() == "" {
		t.Fatal("spec lost")
	}
	again, _ := Compile(j.Spec())
	if again.Spec() != j.Spec() {
		t.Fatal("canonical spec is not stable")
	}
	if got := strings.Join(j.Paths(), " "); got != "/home/user/a.txt /home/user/b.txt" {
		t.Fatalf("paths %q", got)
	}
	// Getters the source cannot serve are errors, not silent zeros.
	_, err = mustCompile(t, `{"func":"is_false","result":{"type":"editor_dirty"}}`).Evaluate(src())
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("want ErrUnsupported, got %v", err)
	}
}

func mustCompile(t *testing.T, spec string) *Judge {
	t.Helper()
	j, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestSimilarity(t *testing.T) {
	if Similarity("kitten", "sitting") < 0.57 || Similarity("kitten", "sitting") > 0.58 || Similarity("", "") != 1 || Similarity("a", "") != 0 {
		t.Fatal("similarity")
	}
}
