// Command benchgen writes the segment benchmark's input as pre-tokenized JSON
// lines (segment.PretokFormat), the input of bench/segment_alg2.py:
//
//	go run ./pipeline/segment/internal/benchgen -n 2000 -turns 30 -o /tmp/alg2.jsonl
//	python3 bench/segment_alg2.py /tmp/alg2.jsonl --mode window
//
// The trajectories are those of the Go benchmarks (same generator, seed and
// sizes): responses with recorded ids, 1280x800 screenshots of 1,000 pad
// tokens each under Qwen3-VL's image spec.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/pipeline/segment/internal/synth"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

func main() {
	n := flag.Int("n", 2000, "trajectories")
	turns := flag.Int("turns", 30, "turns per trajectory")
	width := flag.Int("width", 1280, "screenshot width (1280x800 is 1000 pad tokens)")
	height := flag.Int("height", 800, "screenshot height")
	seed := flag.Uint64("seed", 1, "generator seed")
	out := flag.String("o", "", "output file (default stdout)")
	tokPath := flag.String("tokenizer", "", "tokenizer.json (default: the Qwen3 tokenizer)")
	flag.Parse()
	if err := run(*n, *turns, *width, *height, *seed, *out, *tokPath); err != nil {
		fmt.Fprintln(os.Stderr, "benchgen:", err)
		os.Exit(1)
	}
}

func run(n, turns, width, height int, seed uint64, out, tokPath string) error {
	var enc tokenizer.Encoder
	var err error
	if tokPath == "" {
		enc, err = tokenizer.Default()
	} else {
		enc, err = tokenizer.Load(tokPath)
	}
	if err != nil {
		return err
	}
	w := os.Stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	c, err := segment.NewCodec(enc)
	if err != nil {
		return err
	}
	tpl, err := chat.New(enc, chat.DefaultImageSpec())
	if err != nil {
		return err
	}
	b, err := segment.NewBuilder(c, tpl, segment.DefaultSystem)
	if err != nil {
		return err
	}
	pw, err := segment.NewPretokWriter(w, c)
	if err != nil {
		return err
	}
	d := synth.Generate(enc, synth.Options{Seed: seed, Trajectories: n, Turns: turns, Screenshots: 1, Width: width, Height: height})
	instr := map[string]string{}
	for _, t := range d.Tasks {
		instr[t.TaskID] = t.Instruction
	}
	size := func(*schemas.Step) (int, int, error) { return width, height, nil }
	for i, k := 0, 0; i < len(d.Trajectories); i++ {
		tr := &d.Trajectories[i]
		j := k
		for j < len(d.Steps) && d.Steps[j].TrajectoryID == tr.TrajectoryID {
			j++
		}
		p, err := b.Prepare(segment.Input{Trajectory: tr, Steps: d.Steps[k:j], Instruction: instr[tr.TaskID], ImageSize: size})
		if err != nil {
			return err
		}
		k = j
		if err := pw.Write(tr.TrajectoryID, p); err != nil {
			return err
		}
	}
	return pw.Flush()
}
