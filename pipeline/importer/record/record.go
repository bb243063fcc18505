// Package record holds what every importer shares: the error that names a bad
// input record (file, line, field), the episode handed from a reader to the
// committer, the Sink readers write to, and content-addressed image blobs.
package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/cualake/cualake/schemas"
)

// Error is one bad input record. Readers return it for data problems; any
// other error is an I/O or internal failure that stops the import.
type Error struct {
	File   string // the input file, as found under the path the user gave
	Line   int    // 1-based line of the record or offending field; 0 when the whole file is meant
	Field  string // the offending field ("json" for a syntax error)
	Reason string
	Raw    string // the record as read (a line, a task file), kept for quarantine
	Table  string // the table the record was meant for
}

// Error formats the error as FILE:LINE: field FIELD: REASON.
func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("%s: field %s: %s", loc, e.Field, e.Reason)
}

// Reject returns the quarantine row for e.
// String columns must hold UTF-8 (DuckDB refuses anything else), so invalid
// bytes of a raw record are replaced and the reason says so.
func (e *Error) Reject(stage string) schemas.Reject {
	v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	reason := e.Reason
	if !utf8.ValidString(e.Raw) {
		reason += " (raw record is not UTF-8; invalid bytes replaced by U+FFFD)"
	}
	return schemas.Reject{Stage: stage, Source: v(e.File), Line: int32(e.Line), Table: e.Table, Field: v(e.Field), Reason: v(reason), Raw: v(e.Raw)}
}

// Episode is one trajectory with its steps and the blobs they reference, as a
// reader produced it. Blobs may repeat within and across episodes; the
// committer stores each hash once.
type Episode struct {
	Trajectory schemas.Trajectory
	Steps      []schemas.Step
	Blobs      []schemas.Blob
	// Where the reader found it, for a reject that names it (a conflicting
	// duplicate): the file, the 1-based line (0 for a whole folder) and
	// the record as read.
	File string
	Line int
	Raw  []byte
}

// Sink receives what a reader parsed, in a deterministic order. Only
// KnownTrajectory may be called concurrently.
type Sink interface {
	// Task adds one parsed, valid task.
	Task(t schemas.Task) error
	// Episode adds one parsed, valid episode. An episode whose trajectory id
	// is known may carry only its trajectory id.
	Episode(e *Episode) error
	// Reject records one bad input record.
	Reject(e *Error) error
	// KnownTrajectory reports whether the lake already holds the trajectory,
	// so a reader can skip loading its screenshots.
	KnownTrajectory(id string) bool
	// Progress reports work done out of total (units are the reader's).
	Progress(done, total int)
}

// LineAt returns the 1-based line holding byte offset off of b.
func LineAt(b []byte, off int64) int {
	if off < 0 {
		off = 0
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return bytes.Count(b[:off], []byte{'\n'}) + 1
}

var (
	fieldInMsg   = regexp.MustCompile(`field ([A-Za-z0-9_.\[\]/]+)`)
	unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)
)

// FromValidation turns a schemas validator error into a record error, taking
// the field name from the validator's message.
func FromValidation(file string, line int, table, raw string, err error) *Error {
	field := "row"
	reason := strings.TrimPrefix(err.Error(), schemas.ErrInvalidRow.Error()+": ")
	if m := fieldInMsg.FindStringSubmatch(reason); m != nil {
		field = m[1]
		if strings.HasPrefix(reason, m[0]+" ") {
			reason = strings.TrimPrefix(reason, m[0]+" ")
		}
	}
	return &Error{File: file, Line: line, Field: field, Reason: reason, Raw: raw, Table: table}
}

// FromJSON turns an encoding/json decode error of raw into a record error
// naming the line and, for type errors, the field.
func FromJSON(file string, base int, table string, raw []byte, err error) *Error {
	e := &Error{File: file, Line: base, Field: "json", Reason: err.Error(), Raw: string(raw), Table: table}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		e.Line = base + LineAt(raw, se.Offset) - 1
		e.Reason = "invalid JSON: " + se.Error()
	case errors.As(err, &te):
		e.Line = base + LineAt(raw, te.Offset) - 1
		if te.Field != "" {
			e.Field = te.Field
		}
		e.Reason = fmt.Sprintf("is JSON %s, want %s", te.Value, goTypeName(te.Type.String()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		e.Reason = "invalid JSON: the record ends inside a value"
	default:
		if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
			e.Field = m[1]
			if e.Field == "" {
				e.Field = `""` // an empty key still needs a visible name
			}
			e.Reason = "unknown field"
		}
	}
	return e
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["), strings.Contains(t, "struct"):
		return "an object"
	}
	return t
}
