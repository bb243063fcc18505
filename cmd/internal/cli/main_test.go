package cli

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for cualake when a test runs
// stages as child processes (experiment run --workers 2): with
// CUALAKE_TEST_CHILD=1 it is the command line, not the tests.
func TestMain(m *testing.M) {
	if os.Getenv("CUALAKE_TEST_CHILD") == "1" {
		Main(App())
		os.Exit(0)
	}
	os.Exit(m.Run())
}
