package exporter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/schemas"
)

// Verdict is one trajectory's recorded outcome, as the verdicts file holds
// it.
type Verdict struct {
	TaskID  string  `json:"task_id"`
	Reward  float64 `json:"reward"`
	Outcome string  `json:"outcome"`
	// Verifier is the verdict of the trajectory's verifier judgment with
	// the smallest strategy name, "" when none was made.
	Verifier string `json:"verifier,omitempty"`
}

// VerdictsFile is the lookup file examples/verl/cualake_reward.py reads in
// its verdicts mode: trajectory id -> verdict. Plain JSON, so the reward
// function needs nothing but Python's standard library.
type VerdictsFile struct {
	Format       string             `json:"format"` // "cualake-verdicts/1"
	Snapshot     string             `json:"snapshot"`
	Trajectories map[string]Verdict `json:"trajectories"`
}

// VerdictsFormat names the verdicts file's layout.
const VerdictsFormat = "cualake-verdicts/1"

// VerdictsReport says what Verdicts wrote.
type VerdictsReport struct {
	Snapshot     string `json:"snapshot"`
	Out          string `json:"out"`
	Trajectories int    `json:"trajectories"`
}

// Verdicts writes the verdicts of every trajectory of snapshot m to the
// file out (by outfile's rules), keys sorted so the same snapshot gives the
// same bytes.
func Verdicts(ctx context.Context, l *lake.Lake, m *lake.Manifest, out string) (*VerdictsReport, error) {
	if _, ok := m.Tables[schemas.Trajectories.Name]; !ok {
		return nil, fmt.Errorf("export verdicts: snapshot %s has no trajectories table", m.ID[:12])
	}
	f := VerdictsFile{Format: VerdictsFormat, Snapshot: m.ID, Trajectories: map[string]Verdict{}}
	err := lake.ScanTable(ctx, l, m, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
		for _, r := range rows {
			f.Trajectories[r.TrajectoryID] = Verdict{TaskID: r.TaskID, Reward: r.Reward, Outcome: r.Outcome}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export verdicts: %w", err)
	}
	best := map[string]string{}
	err = lake.ScanTable(ctx, l, m, schemas.Verifications, 4096, func(rows []schemas.Verification) error {
		for _, r := range rows {
			v, ok := f.Trajectories[r.TrajectoryID]
			if !ok {
				continue
			}
			if s, seen := best[r.TrajectoryID]; !seen || r.Strategy < s {
				best[r.TrajectoryID] = r.Strategy
				v.Verifier = r.Verdict
				f.Trajectories[r.TrajectoryID] = v
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export verdicts: %w", err)
	}
	err = outfile.Write(out, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", " ")
		return enc.Encode(f)
	}, lakeRoots(l)...)
	if err != nil {
		return nil, fmt.Errorf("export verdicts: %w", err)
	}
	return &VerdictsReport{Snapshot: m.ID, Out: out, Trajectories: len(f.Trajectories)}, nil
}
