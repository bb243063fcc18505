package segment

import (
	"errors"
	"fmt"

	"github.com/cualake/cualake/pipeline/advantage"
	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/lake"
)

// ImageSpec says how many pad tokens a screenshot takes (Qwen-VL's
// smart_resize, or a fixed count); it is the chat template's.
type ImageSpec = chat.ImageSpec

// Mode is how trajectories become training items; the values are those of
// segments.mode.
type Mode string

// The three modes.
const (
	ModeTrajectory Mode = "trajectory"
	ModeStep       Mode = "step"
	ModeWindow     Mode = "window"
)

// Modes lists the modes in help order.
var Modes = []Mode{ModeTrajectory, ModeStep, ModeWindow}

// Defaults of ScaleCUA (K = Delta = 5) and of EvoCUA-1.5's sliding window.
const (
	DefaultK      = 5
	DefaultDelta  = 5
	DefaultWindow = 5
	// MaxK bounds K, Delta and Window: far more screenshots than any
	// context holds, and small enough that K + Delta cannot overflow.
	MaxK = 1 << 20
	// DefaultFileRows is the number of rows of a segments data file. Files
	// are cut by rows, not tokens, because a sharded run's fragments merge
	// through lake.SortedWriter, which cuts every fixed number of rows; the
	// unsharded run must cut the same way. Items hold thousands to tens of
	// thousands of tokens (about 9 bytes each in memory), so a file holds
	// a few million tokens, and the few files in flight stay small in memory.
	// (`lake merge` opens every fragment file at once and reads up to 512
	// rows of each, so with 256-row files it holds the whole table; that
	// is lake.SortedWriter's to fix, by opening sorted sources lazily.)
	DefaultFileRows = 256
)

// DefaultSystem is the system prompt rendered at the top of every item.
const DefaultSystem = "You are a computer-use agent. Each user turn shows a screenshot of the desktop; " +
	"answer with your reasoning and exactly one action on the 1000x1000 grid."

// ErrParams marks parameters outside their domain.
var ErrParams = errors.New("bad segment parameters")

// Params configure a segment run. The zero value is not valid; start from
// DefaultParams.
type Params struct {
	Mode Mode
	// K is the number of screenshots a window keeps after pruning and Delta
	// the removal threshold: a window item holds at most K + Delta
	// screenshots (window mode).
	K, Delta int
	// Window is w, the number of previous turns step mode keeps in full.
	Window int
	// Image says how many tokens a screenshot takes.
	Image ImageSpec
	// System is the system prompt.
	System string
	// Workers segment trajectories in parallel (<= 0: one). The output does
	// not depend on it.
	Workers int
	// Quarantine sends bad trajectories to the rejects table instead of
	// failing the run.
	Quarantine bool
	// FileRows is the number of rows per segments data file (<= 0:
	// DefaultFileRows, at most lake.MaxFileRows).
	FileRows int
	// Advantage is how a trajectory's GRPO group advantage A_i reaches its
	// items: advantage.ModeGRPO shares A_i by every item (ScaleCUA appendix
	// D), advantage.ModeSTEPO gives each of the |T_i| step items A_i/|T_i|
	// (EvoCUA-1.5 eq. 10; step mode only). "" means grpo.
	Advantage advantage.Mode
	// View is what a turn shows besides its screenshot ("" is ViewPlain).
	View View
}

// AdvantageMode is the assignment the run uses ("" is grpo).
func (p Params) AdvantageMode() advantage.Mode {
	if p.Advantage == "" {
		return advantage.ModeGRPO
	}
	return p.Advantage
}

// DefaultParams returns the window mode with ScaleCUA's defaults.
func DefaultParams() Params {
	return Params{Mode: ModeWindow, K: DefaultK, Delta: DefaultDelta, Window: DefaultWindow,
		Image: chat.DefaultImageSpec(), System: DefaultSystem}
}

// Validate checks the parameters' domains.
func (p Params) Validate() error {
	switch p.Mode {
	case ModeTrajectory, ModeStep, ModeWindow:
	default:
		return fmt.Errorf("%w: mode %q, want trajectory, step or window", ErrParams, p.Mode)
	}
	if p.Mode == ModeWindow && (p.K < 1 || p.Delta < 1 || p.K > MaxK || p.Delta > MaxK) {
		return fmt.Errorf("%w: window mode needs K (--k) and Delta (--delta) in 1..%d, got K=%d Delta=%d", ErrParams, MaxK, p.K, p.Delta)
	}
	if p.Mode == ModeStep && (p.Window < 0 || p.Window > MaxK) {
		return fmt.Errorf("%w: step mode needs a window (--window) in 0..%d, got %d", ErrParams, MaxK, p.Window)
	}
	switch p.AdvantageMode() {
	case advantage.ModeGRPO:
	case advantage.ModeSTEPO:
		if p.Mode != ModeStep {
			return fmt.Errorf("%w: --advantage stepo splits A_i over step items; it needs --mode step, not %s", ErrParams, p.Mode)
		}
	default:
		return fmt.Errorf("%w: advantage %q, want grpo or stepo", ErrParams, p.Advantage)
	}
	if !p.View.valid() {
		return fmt.Errorf("%w: view %q, want plain or pointer", ErrParams, p.View)
	}
	if p.FileRows > lake.MaxFileRows {
		return fmt.Errorf("%w: %d rows per file, at most %d", ErrParams, p.FileRows, lake.MaxFileRows)
	}
	if err := p.Image.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrParams, err)
	}
	return nil
}

// ExpectedItems is the number of items a trajectory of T turns gives:
// 1 in trajectory mode, T in step mode, and in window mode
// 1 + ceil(max(0, T - K - Delta) / Delta): the first item trains the first
// K + Delta turns, each later one Delta more turns, because after pruning
// the stream restarts with K + 1 screenshots and saves again when the
// (K + Delta + 1)-th arrives. A trajectory without turns gives no item.
func ExpectedItems(p Params, turns int) int {
	if turns <= 0 {
		return 0
	}
	switch p.Mode {
	case ModeStep:
		return turns
	case ModeWindow:
		over := turns - p.K - p.Delta
		if over <= 0 {
			return 1
		}
		return 1 + (over+p.Delta-1)/p.Delta
	}
	return 1
}
