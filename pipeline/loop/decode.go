package loop

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// DecodeYAML decodes b into v strictly: unknown keys are errors, and so is
// a fractional number for an integer field. The YAML decoder alone turns
// `iterations: 1.5` into 1, which would run a config nobody wrote. The
// error names the key.
func DecodeYAML(b []byte, v any) error {
	if err := yaml.UnmarshalWithOptions(b, v, yaml.Strict()); err != nil {
		return fmt.Errorf("%s", yaml.FormatError(err, false, true))
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err
	}
	return checkIntegers("", doc, reflect.TypeOf(v))
}

// checkIntegers walks doc beside the Go type t by the fields' yaml names
// and refuses a non-integral number where t holds an integer.
func checkIntegers(key string, doc any, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if f, ok := doc.(float64); ok && (f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f)) {
			return fmt.Errorf("%s is %s, want an integer", orTop(key), strconv.FormatFloat(f, 'g', -1, 64))
		}
	case reflect.Struct:
		m, ok := doc.(map[string]any)
		if !ok {
			return nil // the strict decode has judged its shape
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if sub, ok := m[name]; ok && f.IsExported() && name != "" && name != "-" {
				if err := checkIntegers(join(key, name), sub, f.Type); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if s, ok := doc.([]any); ok {
			for i, e := range s {
				if err := checkIntegers(fmt.Sprintf("%s[%d]", orTop(key), i), e, t.Elem()); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if m, ok := doc.(map[string]any); ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if err := checkIntegers(join(key, k), m[k], t.Elem()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

func orTop(key string) string {
	if key == "" {
		return "the document"
	}
	return key
}
