//go:build unix

package simdesk

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time, so benchmarks can report
// cost per step even on a machine busy with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
