package cli

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutOfRangeFlagsAreUsageErrors: numbers outside a flag's range are
// refused before anything runs, with a usage error naming the flag (and
// its range), instead of running silently (a negative limit as "all", an
// int32 wrap-around, a checkpoint-only flag ignored by another policy).
func TestOutOfRangeFlagsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUALAKE_LAKE", filepath.Join(dir, "lake"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout", "--limit-tasks", "-3"}, "--limit-tasks is -3, want >= 0"},
		{[]string{"rollout", "--workers", "0"}, "--workers is 0, want 1..1024"},
		{[]string{"rollout", "--workers", "-1"}, "--workers is -1, want 1..1024"},
		{[]string{"rollout", "--iteration", "-5"}, "--iteration is -5, want -1..2147483647"},
		{[]string{"rollout", "--iteration", "2147483648"}, "--iteration is 2147483648, want -1..2147483647"},
		{[]string{"rollout", "--policy", "oracle", "-k", "0"}, "--k is 0, want 1..1048576"},
		{[]string{"rollout", "--policy", "random", "--delta", "0"}, "--delta is 0, want 1..1048576"},
		{[]string{"rollout", "--policy", "oracle", "--redraws", "-1"}, "--redraws is -1, want >= 0"},
		{[]string{"rollout", "--policy", "oracle", "--context", "bogus"}, `--context "bogus": want window, step or trajectory`},
		{[]string{"segment", "--workers", "-3"}, "--workers is -3, want 1..1024"},
		{[]string{"segment", "--k", "9223372036854775807", "--delta", "1"}, "K (--k) and Delta (--delta) in 1..1048576"},
		{[]string{"segment", "--image-tokens", "-1"}, "FixedTokens (--image-tokens) is -1, want 0..16384"},
		{[]string{"segment", "--image-tokens", "10000000", "--mode", "trajectory"}, "FixedTokens (--image-tokens) is 10000000, want 0..16384"},
		{[]string{"segment", "--min-pixels", "9000000000000000000", "--max-pixels", "9100000000000000000"}, "MinPixels (--min-pixels) is 9000000000000000000, want 0..33177600"},
		{[]string{"export", "verl", "--batch", "-5", filepath.Join(dir, "out.parquet")}, "--batch is -5, want -1..2147483647"},
		{[]string{"verify", "--limit", "-1"}, "--limit is -1, want >= 0"},
		{[]string{"verify", "--window", "0"}, "--window is 0, want >= 1"},
		{[]string{"verify", "--steps", "0"}, "--steps is 0, want >= 1"},
		{[]string{"sample", "--sampler", "dtac", "--replay-cap", "4294967297"}, "--replay-cap is 4294967297, want 1..2147483647"},
		{[]string{"sample", "--sampler", "dtac", "--max-stale", "2147483648"}, "--max-stale is 2147483648, want 0..2147483647"},
		{[]string{"sample", "--sampler", "dtac", "--ics-ratio", "-1"}, "ICSRatio (--ics-ratio) is -1, want [0, 1]"},
		{[]string{"sample", "--p-min", "0.9", "--p-max", "0.1"}, "--p-min/--p-max: pool bounds [0.9, 0.1]"},
	} {
		out, err := run(t, tc.args...)
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (%s), want a usage error containing %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "--alpha") || strings.Contains(err.Error(), "{")) {
			t.Errorf("%s: %v blames another flag or dumps a struct", strings.Join(tc.args, " "), err)
		}
	}
	// Qwen2.5-VL's 14-pixel patches: the pixel bounds follow the token side
	// unless given, so the defaults stay within the token bound (and the
	// run goes on to open the lake, which does not exist here)
	for _, args := range [][]string{{"segment", "--patch-size", "14"}, {"segment", "--patch-size", "8", "--merge-size", "1"}} {
		_, err := run(t, args...)
		if err == nil || strings.Contains(err.Error(), "image spec") {
			t.Errorf("%s: %v, want it past the image spec (to the missing lake)", strings.Join(args, " "), err)
		}
	}
}
