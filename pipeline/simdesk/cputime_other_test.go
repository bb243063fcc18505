//go:build !unix

package simdesk

import "time"

func cpuTime() time.Duration { return 0 }
