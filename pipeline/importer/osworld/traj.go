package osworld

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cualake/cualake/pipeline/importer/record"
	"github.com/cualake/cualake/schemas"
)

// TrajLine is one line of an OSWorld traj.jsonl.
type TrajLine struct {
	StepNum        int32
	Timestamp      string          // action_timestamp, e.g. 20240418@120301
	Action         json.RawMessage // a pyautogui string, DONE/FAIL/WAIT, or a computer_13 object
	Response       string          // the model's response (non-string responses as JSON)
	Reward         float64
	Done           bool
	ScreenshotFile string
	Rest           string // JSON object of every other field (info, natural_language_action, ...)
	Error          string // set for the {"Error": "..."} line of a crashed episode
}

// IsError reports whether the line marks a crashed episode.
func (l *TrajLine) IsError() bool { return l.Error != "" }

// columned fields have their own step columns; the rest is kept in Rest.
var columned = map[string]bool{"step_num": true, "action_timestamp": true, "action": true, "response": true,
	"reward": true, "done": true, "screenshot_file": true}

// ParseTrajLine parses one traj.jsonl line; line is its 1-based number in
// file, for errors.
func ParseTrajLine(file string, line int, raw []byte) (TrajLine, error) {
	bad := func(field, format string, a ...any) (TrajLine, error) {
		return TrajLine{}, &record.Error{File: file, Line: line, Field: field, Reason: fmt.Sprintf(format, a...), Raw: string(raw), Table: schemas.Steps.Name}
	}
	if !utf8.Valid(raw) {
		return bad("json", "line is not valid UTF-8")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		e := record.FromJSON(file, line, schemas.Steps.Name, raw, err)
		e.Line = line
		return TrajLine{}, e
	}
	if m == nil {
		return bad("json", "want a JSON object")
	}
	if e, ok := m["Error"]; ok {
		if _, has := m["step_num"]; !has {
			var msg string
			if json.Unmarshal(e, &msg) != nil {
				msg = compact(e)
			}
			if strings.TrimSpace(msg) == "" {
				msg = "error"
			}
			return TrajLine{Error: msg}, nil
		}
	}
	var l TrajLine
	sn, ok := m["step_num"]
	if !ok {
		return bad("step_num", "is missing")
	}
	var f float64
	if err := json.Unmarshal(sn, &f); err != nil || f != math.Trunc(f) || f < 0 || f > 1e9 {
		return bad("step_num", "is %s, want a non-negative integer", clip(sn))
	}
	l.StepNum = int32(f)
	if v, ok := m["action_timestamp"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &l.Timestamp); err != nil {
			return bad("action_timestamp", "is %s, want a string", clip(v))
		}
	}
	a, ok := m["action"]
	if !ok {
		return bad("action", "is missing")
	}
	if t := bytes.TrimSpace(a); len(t) > 0 && t[0] != '"' && t[0] != '{' && string(t) != "null" {
		return bad("action", "is %s, want a string or an object", clip(a))
	}
	l.Action = a
	if v, ok := m["response"]; ok && string(v) != "null" {
		if json.Unmarshal(v, &l.Response) != nil {
			l.Response = compact(v) // some agents log structured responses
		}
	}
	if v, ok := m["reward"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &l.Reward); err != nil {
			return bad("reward", "is %s, want a number", clip(v))
		}
	}
	if v, ok := m["done"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &l.Done); err != nil {
			return bad("done", "is %s, want true or false", clip(v))
		}
	}
	if v, ok := m["screenshot_file"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &l.ScreenshotFile); err != nil {
			return bad("screenshot_file", "is %s, want a file name", clip(v))
		}
		if !record.SafeName(l.ScreenshotFile) {
			return bad("screenshot_file", "%q is not a file inside the episode folder", l.ScreenshotFile)
		}
	}
	rest := map[string]json.RawMessage{}
	for k, v := range m {
		if !columned[k] {
			rest[k] = v
		}
	}
	b, err := json.Marshal(rest) // sorted keys: deterministic
	if err != nil {
		return bad("json", "%v", err)
	}
	l.Rest = string(b)
	return l, nil
}

// ParseResult parses result.txt: one number, the evaluator's score.
func ParseResult(file string, raw []byte) (float64, error) {
	s := strings.TrimSpace(string(raw))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, &record.Error{File: file, Line: 1, Field: "result", Reason: fmt.Sprintf("is %q, want one finite number", clipS(s)), Raw: string(raw), Table: schemas.Trajectories.Name}
	}
	return v, nil
}

func clip(b []byte) string { return clipS(string(b)) }

func clipS(s string) string {
	if len(s) <= 60 {
		return s
	}
	cut := 60
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
