package verify

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Check kinds: what a criterion is about, which tells the builtin Probe
// where the evidence is and the learned policy what kind of doubt it is.
const (
	KindExists   = "exists"    // a file or folder exists at Path
	KindAbsent   = "absent"    // nothing exists at Path
	KindNoExtIn  = "no_ext_in" // folder Path holds no file ending in Want
	KindContent  = "content"   // file Path holds exactly Want (surrounding space ignored)
	KindIncludes = "includes"  // file Path contains Want
	KindExcludes = "excludes"  // file Path does not contain Want
	KindSaved    = "saved"     // the document (Path, or whichever is open) has no unsaved changes
	KindSetting  = "setting"   // setting Key holds Want
	KindMail     = "mail"      // the newest sent message's Field matches Want
	KindCell     = "cell"      // sheet Path: cell Cell shows Want (or its formula is Want when Raw)
	KindLookup   = "lookup"    // sheet Path: the Column of the row labelled Row is Want
	KindSorted   = "sorted"    // sheet Path is sorted by Column (Want "asc" or "desc") under its header
	KindTable    = "table"     // sheet Path holds exactly the rows in Want (JSON)
	KindClaim    = "claim"     // the agent's report that the task is infeasible is right
	KindGeneric  = "generic"   // anything the builtin Judge could not make concrete
)

// kindGroups map kinds to the groups the policy's features use.
var kindGroups = []struct {
	name  string
	kinds []string
}{
	{"files", []string{KindExists, KindAbsent, KindNoExtIn}},
	{"content", []string{KindContent, KindIncludes, KindExcludes}},
	{"saved", []string{KindSaved}},
	{"setting", []string{KindSetting}},
	{"mail", []string{KindMail}},
	{"sheet", []string{KindCell, KindLookup, KindSorted, KindTable}},
	{"claim", []string{KindClaim}},
	{"generic", []string{KindGeneric, ""}},
}

func kindGroup(kind string) int {
	for i, g := range kindGroups {
		for _, k := range g.kinds {
			if k == kind {
				return i
			}
		}
	}
	return len(kindGroups) - 1
}

// Check is a criterion in machine-readable form: the builtin Judge writes
// it next to the text, and the builtin Probe knows where to look from it.
type Check struct {
	Kind   string `json:"kind"`
	Path   string `json:"path,omitempty"` // absolute simulator path
	Key    string `json:"key,omitempty"`  // setting key
	Field  string `json:"field,omitempty"`
	Cell   string `json:"cell,omitempty"`
	Row    string `json:"row,omitempty"`
	Column string `json:"column,omitempty"`
	Raw    bool   `json:"raw,omitempty"`
	Want   string `json:"want,omitempty"`
	Where  string `json:"where,omitempty"` // where the evidence is, for people and prompts
}

// Lean sources: where a tentative status for an uncertain criterion came
// from.
const (
	LeanNone    = ""
	LeanStale   = "stale"   // an earlier screenshot showed it, the last one does not
	LeanHistory = "history" // the action history suggests it (text typed, save pressed)
)

// Criterion is one concrete task-success condition with its status. Its
// JSON is what the verifications table's criteria column holds: criterion,
// status, evidence (blob hashes of screenshots that support the status),
// plus the note of who decided it and how, and the check when the builtin
// Judge wrote it.
type Criterion struct {
	Text     string   `json:"criterion"`
	Status   string   `json:"status"`
	Evidence []string `json:"evidence,omitempty"`
	Note     string   `json:"note,omitempty"`
	Check    *Check   `json:"check,omitempty"`

	// What the screen and history suggest when Status is uncertain; the
	// policy and the guess fallback use it.
	lean    int    // +1 success, -1 failure, 0 unknown
	leanSrc string // LeanStale, LeanHistory or LeanNone
	tried   bool   // the Probe looked and could not decide
}

func (c *Criterion) kind() string {
	if c.Check == nil {
		return KindGeneric
	}
	return c.Check.Kind
}

// Statuses lists the criteria's statuses.
func Statuses(cs []Criterion) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Status
	}
	return out
}

// CriteriaJSON renders criteria for the verifications table; an invalid
// attempt records its reason instead.
func CriteriaJSON(cs []Criterion, invalid string) string {
	if invalid != "" {
		b, _ := json.Marshal([]map[string]string{{"criterion": "invalid Judge output", "status": Uncertain, "note": invalid}})
		return string(b)
	}
	if cs == nil {
		cs = []Criterion{}
	}
	b, err := json.Marshal(cs)
	if err != nil {
		return "[]"
	}
	return string(b)
}

func cloneCriteria(cs []Criterion) []Criterion {
	out := make([]Criterion, len(cs))
	for i, c := range cs {
		c.Evidence = append([]string(nil), c.Evidence...)
		out[i] = c
	}
	return out
}

// FormatCriteria writes criteria in the paper's text form, one numbered
// line each: "1. <criterion>:<status>".
func FormatCriteria(cs []Criterion) string {
	var b strings.Builder
	for i, c := range cs {
		fmt.Fprintf(&b, "%d. %s:%s\n", i+1, c.Text, c.Status)
	}
	return b.String()
}
