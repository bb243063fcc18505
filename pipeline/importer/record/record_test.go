package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"testing"
)

func TestKeyLine(t *testing.T) {
	raw := []byte("{\n  \"a\": 1,\n  \"ev\": {\n    \"func\": [\"x\"],\n    \"result\": [\n      {\"t\": 1},\n      {\"t\": 2}\n    ]\n  }\n}")
	for _, c := range []struct {
		path []string
		line int
	}{{[]string{"a"}, 2}, {[]string{"ev"}, 3}, {[]string{"ev", "func"}, 4}, {[]string{"ev", "result", "1", "t"}, 7}, {[]string{"nope"}, 1}, {[]string{"ev", "nope"}, 3}} {
		if got := KeyLine(raw, c.path...); got != c.line {
			t.Errorf("%v: line %d, want %d", c.path, got, c.line)
		}
	}
}

func TestImageBlob(t *testing.T) {
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 7, 3)))
	b, err := ImageBlob(buf.Bytes())
	if err != nil || b.Width != 7 || b.Height != 3 || b.Mime != "image/png" || b.Size != int64(buf.Len()) {
		t.Fatalf("%+v %v", b, err)
	}
	if _, err := ImageBlob(buf.Bytes()[:buf.Len()-5]); err == nil {
		t.Fatal("truncated PNG accepted")
	}
	if _, err := ImageBlob([]byte("GIF89a")); !errors.Is(err, ErrNotImage) {
		t.Fatal(err)
	}
}

func TestSafeName(t *testing.T) {
	for name, ok := range map[string]bool{"step_1_20240418@120301.png": true, "sub/a.png": true, "": false, "../a.png": false,
		"a/../../b": false, "/etc/passwd": false, `C:\x.png`: false, `..\x`: false} {
		if SafeName(name) != ok {
			t.Errorf("%q: want %v", name, ok)
		}
	}
}

func TestFromJSON(t *testing.T) {
	var v struct{ N int }
	raw := []byte("{\n\"N\": \"x\"}")
	e := FromJSON("f.json", 1, "tasks", raw, json.Unmarshal(raw, &v))
	if e.Line != 2 || e.Field != "N" || e.Raw != string(raw) {
		t.Fatalf("%+v", e)
	}
	raw = []byte("{\n\n  oops}")
	e = FromJSON("f.json", 10, "tasks", raw, json.Unmarshal(raw, &v))
	if e.Line != 12 || e.Field != "json" {
		t.Fatalf("%+v", e)
	}
	if got := e.Error(); got != "f.json:12: field json: "+e.Reason {
		t.Fatal(got)
	}
}
