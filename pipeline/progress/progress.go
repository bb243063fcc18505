// Package progress reports long work: a redrawn bar on a terminal, plain
// lines otherwise (CI logs, files), never both.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar reports progress of a counted task. It is safe for concurrent use;
// a nil *Bar does nothing, so callers need no checks.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	label    string
	total    int
	done     int
	start    time.Time
	last     time.Time
	interval time.Duration
	drawn    int // done at the last draw
}

// New returns a bar writing to w (usually os.Stderr). Plain-line mode prints
// at most every 2 seconds; quiet returns nil.
func New(w io.Writer, label string, total int, quiet bool) *Bar {
	if quiet {
		return nil
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	iv := 2 * time.Second
	if tty {
		iv = 100 * time.Millisecond
	}
	return &Bar{w: w, tty: tty, label: label, total: total, start: time.Now(), interval: iv}
}

// Add records n more units done.
func (b *Bar) Add(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	if now := time.Now(); now.Sub(b.last) >= b.interval || b.done == b.total {
		b.last = now
		b.draw(now)
	}
}

// SetTotal changes the expected total.
func (b *Bar) SetTotal(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.total = n
	b.mu.Unlock()
}

func (b *Bar) draw(now time.Time) {
	b.drawn = b.done
	el := now.Sub(b.start)
	eta := ""
	// No estimate before 1% is done: the first units carry the start-up
	// (opening the lake, loading a model), and one unit of thousands
	// extrapolates to hours.
	if b.total > 0 && b.done > 0 && b.done < b.total && b.done*100 >= b.total {
		left := time.Duration(float64(el) * float64(b.total-b.done) / float64(b.done))
		eta = fmt.Sprintf(", %s left", left.Round(time.Second))
	}
	if b.tty {
		width := 30
		fill := 0
		if b.total > 0 {
			fill = min(width, width*b.done/b.total)
		}
		fmt.Fprintf(b.w, "\r%s [%s%s] %d/%d (%s%s)  ", b.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill),
			b.done, b.total, el.Round(time.Second), eta)
		return
	}
	fmt.Fprintf(b.w, "%s: %d/%d (%s%s)\n", b.label, b.done, b.total, el.Round(time.Second), eta)
}

// Done finishes the bar.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn != b.done || b.done == 0 {
		b.draw(time.Now())
	}
	if b.tty {
		fmt.Fprintln(b.w)
	}
}
