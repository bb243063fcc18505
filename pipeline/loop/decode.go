package loop

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
)

// DecodeYAML decodes b into v strictly: unknown keys are errors, and so is
// a number that is not an integer, or out of range, for an integer field.
// The YAML decoder alone turns `iterations: 1.5`, `15e-1` or "2.5" into 1
// or 2, and 1e19 into a negative seed: configs nobody wrote. The error
// names the key; withSource adds the offending lines of b (for a file the
// user wrote, not for generated YAML). On error v may be partly filled.
func DecodeYAML(b []byte, v any, withSource bool) error {
	if err := yaml.UnmarshalWithOptions(b, v, yaml.Strict()); err != nil {
		return fmt.Errorf("%s", yaml.FormatError(err, false, withSource))
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
		if !integerValue(doc, t) {
			return fmt.Errorf("%s is %v, want an integer (of Go type %s)", orTop(key), doc, t)
		}
	case reflect.Struct:
		m, ok := doc.(map[string]any)
		if !ok {
			return nil // the strict decode has judged its shape
		}
		for i := 0; i < t.NumField(); i++ {
			// Fields are matched by their yaml name; the config types have
			// no inline or unnamed fields, which this walk would skip.
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

// integerValue says whether a decoded YAML value fits the integer type t
// exactly: an integer in range, or a number (float, or a string such as
// "15e-1" that the decoder would convert) with no fraction and in range.
// A value that is no number at all is left to the strict decoder, which
// has accepted it only if it converts.
func integerValue(doc any, t reflect.Type) bool {
	var f float64
	switch v := doc.(type) {
	case int64:
		return fitsInt(new(big.Float).SetInt64(v), t)
	case uint64:
		return fitsInt(new(big.Float).SetUint64(v), t)
	case int:
		return fitsInt(new(big.Float).SetInt64(int64(v)), t)
	case float64:
		f = v
	case string:
		// base 0 also reads the 0x, 0o and 0b forms the decoder converts
		x, _, err := big.ParseFloat(strings.TrimSpace(v), 0, 256, big.ToNearestEven)
		if err != nil {
			return true
		}
		return fitsInt(x, t)
	default:
		return true
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return false
	}
	return fitsInt(big.NewFloat(f), t)
}

// fitsInt says whether x is an integer that t can hold.
func fitsInt(x *big.Float, t reflect.Type) bool {
	if !x.IsInt() {
		return false
	}
	z := reflect.New(t).Elem()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		u, acc := x.Uint64()
		return acc == big.Exact && !z.OverflowUint(u)
	}
	i, acc := x.Int64()
	return acc == big.Exact && !z.OverflowInt(i)
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
