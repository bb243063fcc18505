package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/advantage"
	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/progress"
	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

func init() {
	spec := chat.DefaultImageSpec()
	register(&cli.Command{
		Name:  "segment",
		Usage: "cut trajectories into training items (trajectory, step or window mode) and commit the segments table",
		Description: `Reads trajectories, steps, tasks and screenshot sizes from --in and commits the next
snapshot with its segments table replaced: token ids, loss mask (1 on each response token
in exactly one item) and the rollout's log-probabilities.

  trajectory  one item per trajectory, the whole conversation            O(n) items
  step        one item per turn, the last --window turns in full,
              older ones as compact action history (EvoCUA-1.5)        O(nT) items
  window      Visual Context Segmentation (ScaleCUA Algorithm 2): a token
              stream of at most K + Delta screenshots, pruned by Delta    O(nT/K) items

Screenshots take the pad tokens Qwen-VL's smart_resize gives their size (blobs table),
or --image-tokens N each. With --view pointer the instruction carries word and quote
markers and each screenshot is followed by the step counter and the numbered on-screen
elements (from the accessibility tree, or the step's recorded prompt_ids); steps without
response ids are trained on their action in the pointer language. With --quarantine,
bad trajectories go to rejects instead of failing the run.

Every row carries its trajectory's GRPO group advantage A_i = (R_i - mean R)/(std R + 1e-6)
over its rollout group (ScaleCUA appendix D), shared by all its items; with
--advantage stepo (step mode) each of its |T_i| step items gets A_i/|T_i| (EvoCUA-1.5 eq. 10).

With --shard I/N only the trajectories whose id falls in shard I are segmented, into a
fragment; once all N are written, ` + "`cualake lake merge --stage segment --in SNAPSHOT`" + ` commits
the snapshot an unsharded run commits (same files, same id).

Example:
   cualake segment --mode window --k 5 --delta 5 --json
   cualake segment --in release/2026-11 --mode step --window 5 --image-tokens 1000
   cualake segment --mode step --advantage stepo
   cualake segment --in 3f2a9c --mode window --shard 1/4   (then cualake lake merge --stage segment --in 3f2a9c)`,
		Flags: []cli.Flag{lakeFlag, jsonFlag, shardFlag,
			&cli.StringFlag{Name: "in", Usage: "input snapshot or tag (default main)"},
			&cli.StringFlag{Name: "mode", Value: string(segment.ModeWindow), Usage: "trajectory, step or window"},
			&cli.IntFlag{Name: "k", Value: segment.DefaultK, Usage: "window mode: screenshots kept after pruning"},
			&cli.IntFlag{Name: "delta", Value: segment.DefaultDelta, Usage: "window mode: screenshots dropped per pruning"},
			&cli.IntFlag{Name: "window", Value: segment.DefaultWindow, Usage: "step mode: previous turns kept in full"},
			&cli.StringFlag{Name: "tokenizer", Usage: "tokenizer.json (default: $" + tokenizer.EnvTokenizer + " or the Qwen3 tokenizer of \"make setup\")"},
			&cli.IntFlag{Name: "image-tokens", Usage: "pad tokens per screenshot, for data without screenshots (0: from each screenshot's size)"},
			&cli.IntFlag{Name: "patch-size", Value: spec.PatchSize, Usage: "vision patch side in pixels"},
			&cli.IntFlag{Name: "merge-size", Value: spec.MergeSize, Usage: "patches merged per token side"},
			&cli.IntFlag{Name: "min-pixels", Value: spec.MinPixels, Usage: "smallest resized screenshot area (default: 4 tokens of (patch-size x merge-size)^2 pixels)"},
			&cli.IntFlag{Name: "max-pixels", Value: spec.MaxPixels, Usage: "largest resized screenshot area (default: 16384 tokens of (patch-size x merge-size)^2 pixels)"},
			&cli.IntFlag{Name: "workers", Value: min(runtime.NumCPU(), maxWorkers), Usage: "trajectories segmented in parallel (the output does not depend on it)"},
			&cli.BoolFlag{Name: "quarantine", Usage: "send bad trajectories to the rejects table and segment the rest"},
			&cli.StringFlag{Name: "advantage", Value: string(advantage.ModeGRPO), Usage: "grpo (A_i on every item) or stepo (A_i/|T_i| per step item; --mode step)"},
			&cli.StringFlag{Name: "view", Value: string(segment.ViewPlain), Usage: "plain (the instruction and each screenshot) or pointer (marked instruction, step counter and on-screen elements after each screenshot; the causal policy's view)"},
		},
		Action: segmentAction,
	})
}

// errCheckpointVocab answers a checkpoint named as the tokenizer (segment
// --tokenizer checkpoint, or segments cut that way shown by view and ui):
// that was the encoder-decoder's word vocabulary; the causal policy reads
// the Qwen3 tokenizer's ids.
var errCheckpointVocab = errors.New("a checkpoint's vocabulary was the encoder-decoder policy's tokenizer, and that policy was removed " +
	"(last present in commit 7878f89) so that one item format, the segments row, feeds SFT and RL: segment with the default tokenizer " +
	"(`cualake segment --view pointer --image-tokens 8`), the one the causal policy reads")

func segmentAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("segment takes no arguments, got %q", c.Args().First())
	}
	spec, err := parseShard(c, segment.Stage)
	if err != nil {
		return err
	}
	if _, err := intFlag(c, "workers", 1, maxWorkers); err != nil {
		return err
	}
	prm := segment.Params{
		Mode: segment.Mode(c.String("mode")), K: c.Int("k"), Delta: c.Int("delta"), Window: c.Int("window"),
		Image: chat.ImageSpec{PatchSize: c.Int("patch-size"), MergeSize: c.Int("merge-size"), MinPixels: c.Int("min-pixels"),
			MaxPixels: c.Int("max-pixels"), FixedTokens: c.Int("image-tokens")},
		System: segment.DefaultSystem, Workers: c.Int("workers"), Quarantine: c.Bool("quarantine"),
		Advantage: advantage.Mode(c.String("advantage")), View: segment.View(c.String("view")),
	}
	if prm.Image.PatchSize < 1 || prm.Image.MergeSize < 1 {
		return usageErr("--patch-size and --merge-size must be >= 1")
	}
	// The pixel bounds' defaults are Qwen's token counts at the default
	// 32-pixel token side; for another side they follow it (qwen-vl-utils
	// sizes them in tokens), unless given.
	f := prm.Image.PatchSize * prm.Image.MergeSize
	if !c.IsSet("min-pixels") {
		prm.Image.MinPixels = chat.DefaultMinTokens * f * f
	}
	if !c.IsSet("max-pixels") {
		prm.Image.MaxPixels = chat.DefaultMaxTokens * f * f
	}
	if err := prm.Validate(); err != nil {
		return usageErr("%v", err)
	}
	path := c.String("tokenizer")
	if isCheckpointRef(path) {
		return usageErr("--tokenizer %s: %v", path, errCheckpointVocab)
	}
	l, m, err := snapshotAt(c, "in")
	if err != nil {
		return err
	}
	if path == "" {
		if path, err = tokenizer.DefaultPath(); err != nil {
			return err
		}
	}
	tok, info, err := segment.LoadTokenizer(path)
	if err != nil {
		return err
	}
	quiet := c.Bool("json")
	bar := progress.New(os.Stderr, "segment", int(m.Tables[schemas.Trajectories.Name].Rows), quiet)
	cfg := segment.Config{Params: prm, Tokenizer: tok, TokenizerInfo: info, Shard: spec, Progress: func(int) { bar.Add(1) }}
	res, err := segment.Run(c.Context, l, m, cfg)
	if err != nil {
		if errors.Is(err, segment.ErrParams) {
			return usageErr("%v", err)
		}
		return err
	}
	bar.Done()
	s := res.Summary
	if res.Fragment != nil {
		if !c.Bool("json") {
			fmt.Fprintf(c.App.Writer, "%d items from %d trajectories of shard %s (%d empty, %d rejected)\n",
				s.Items, s.Trajectories, spec, s.Empty, s.Rejected)
		}
		return printFragment(c, res.Fragment, map[string]any{"rejects": len(res.Rejects), "summary": s})
	}
	out := res.Manifest
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": out.ID, "input": m.ID, "rejects": len(res.Rejects), "summary": s})
	}
	fmt.Fprintf(c.App.Writer, "snapshot %s: %d items from %d trajectories (%d turns; %d empty, %d rejected) in %d files\n",
		out.ID[:12], s.Items, s.Trajectories, s.Turns, s.Empty, s.Rejected, s.Files)
	fmt.Fprintf(c.App.Writer, "  tokens %d (max %d per item, %.0f mean), trainable %d, images %.2f per item (max %d)\n",
		s.Tokens, s.MaxTokens, s.TokensPerItem, s.Trainable, s.ImagesPerItem, s.MaxImages)
	fmt.Fprintf(c.App.Writer, "  %s items: %d (%s); trajectory mode would give %d, step %d, window(K=%d, Delta=%d) %d\n",
		s.Expected.Order, s.Items, s.Expected.Formula, s.Expected.Trajectory, s.Expected.Step, windowK(s), windowDelta(s), s.Expected.Window)
	if s.WithoutLogprobs > 0 {
		fmt.Fprintf(c.App.Writer, "  %d items have no recorded log-probabilities (steps of scripted policies or imported logs)\n", s.WithoutLogprobs)
	}
	return nil
}

func windowK(s segment.Summary) int {
	if s.Mode == segment.ModeWindow {
		return s.K
	}
	return segment.DefaultK
}

func windowDelta(s segment.Summary) int {
	if s.Mode == segment.ModeWindow {
		return s.Delta
	}
	return segment.DefaultDelta
}
