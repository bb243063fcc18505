// Package schemas is the single source of truth for every table of a cualake
// lake: one Go row type per table, from which the Parquet and Arrow schemas
// are derived, plus the table's version, key, sort order and row validator.
package schemas

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// ErrInvalidRow marks a row that fails its table's validator.
var ErrInvalidRow = errors.New("invalid row")

// Table describes one table: its name, schema version, row type and the
// functions that give rows a deterministic order and check them.
type Table[T any] struct {
	// Name is the table name, used as the SQL view name and folder name.
	Name string
	// Version is the schema version; bump it when columns change.
	Version int
	// Key lists the columns that identify a row, in sort order.
	Key []string
	// Partition is the column a release export partitions by ("" for none).
	Partition string
	// Doc says in one line what a row is.
	Doc string
	// KeyOf returns the row's key, used for sorting and duplicate detection.
	KeyOf func(*T) string
	// Less orders rows; files are written in this order so that identical
	// rows give identical bytes.
	Less func(a, b *T) bool
	// Validate checks one row; errors name the offending field.
	Validate func(*T) error
	// ContentAddressed marks a table whose key is a hash of the row's
	// content (blobs): two commits that append disjoint keys to it cannot
	// invalidate each other, so a commit that only appended rebases over a
	// concurrent append instead of failing (pipeline/lake Commit).
	ContentAddressed bool
}

// Info is the type-erased view of a table, for code that handles every table
// alike (the lake's manifests, `query --schema`, exports).
type Info struct {
	Name             string
	Version          int
	Key              []string
	Partition        string
	Doc              string
	RowType          reflect.Type
	ContentAddressed bool
}

// Info returns the type-erased description of t.
func (t *Table[T]) Info() Info {
	var zero T
	return Info{Name: t.Name, Version: t.Version, Key: t.Key, Partition: t.Partition, Doc: t.Doc, RowType: reflect.TypeOf(zero),
		ContentAddressed: t.ContentAddressed}
}

// Arrow returns the table's Arrow schema, derived from the row type.
func (i Info) Arrow() *arrow.Schema { return ArrowSchemaOf(i.RowType) }

// Sort orders rows by the table's sort order, stably so that equal keys keep
// their input order.
func (t *Table[T]) Sort(rows []T) {
	sort.SliceStable(rows, func(a, b int) bool { return t.Less(&rows[a], &rows[b]) })
}

// ValidateAll checks every row and returns the first error, naming the table,
// the row index and its key.
func (t *Table[T]) ValidateAll(rows []T) error {
	for i := range rows {
		if err := t.Validate(&rows[i]); err != nil {
			return fmt.Errorf("%s row %d (key %q): %w", t.Name, i, t.KeyOf(&rows[i]), err)
		}
	}
	return nil
}

var registry = map[string]Info{}

func register[T any](t *Table[T]) *Table[T] {
	if _, dup := registry[t.Name]; dup {
		panic("schemas: table registered twice: " + t.Name) // programming error at init
	}
	registry[t.Name] = t.Info()
	return t
}

// All returns every table, sorted by name.
func All() []Info {
	out := make([]Info, 0, len(registry))
	for _, i := range registry {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Lookup returns the table with the given name.
func Lookup(name string) (Info, bool) {
	i, ok := registry[name]
	return i, ok
}

// Columns returns the column names of a row type, in schema order.
func Columns(rt reflect.Type) []string {
	var out []string
	for i := 0; i < rt.NumField(); i++ {
		if name := columnName(rt.Field(i)); name != "" {
			out = append(out, name)
		}
	}
	return out
}

func columnName(f reflect.StructField) string {
	tag := f.Tag.Get("parquet")
	if tag == "-" || !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

// Field-level checks shared by the validators. Each returns an error that
// names the field.

func required(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%w: field %s is required", ErrInvalidRow, field)
	}
	return nil
}

func oneOf(field, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%w: field %s is %q, want one of %s", ErrInvalidRow, field, v, strings.Join(allowed, ", "))
}

func finite(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%w: field %s is %v, want a finite number", ErrInvalidRow, field, v)
	}
	return nil
}

func rate(field string, v float64) error {
	if err := finite(field, v); err != nil {
		return err
	}
	if v < 0 || v > 1 {
		return fmt.Errorf("%w: field %s is %v, want a rate in [0,1]", ErrInvalidRow, field, v)
	}
	return nil
}

func optRate(field string, v *float64) error {
	if v == nil {
		return nil
	}
	return rate(field, *v)
}

func nonNegative(field string, v int64) error {
	if v < 0 {
		return fmt.Errorf("%w: field %s is %d, want >= 0", ErrInvalidRow, field, v)
	}
	return nil
}

func validJSON(field, v string, allowEmpty bool) error {
	if v == "" && allowEmpty {
		return nil
	}
	if !jsonValid(v) {
		return fmt.Errorf("%w: field %s is not valid JSON", ErrInvalidRow, field)
	}
	return nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
