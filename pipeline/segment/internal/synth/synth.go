// Package synth generates rollout data for the segment stage's tests and
// benchmarks: tasks, trajectories with recorded response ids and
// log-probabilities, steps and real PNG screenshots.
package synth

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"strings"

	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

// Options size the data.
type Options struct {
	Seed          uint64
	Trajectories  int
	Turns         int // every trajectory has this many turns
	Screenshots   int // distinct screenshot blobs, shared by all steps
	Width, Height int // screenshot size in pixels
	GroupSize     int // rollouts per group (and per task)
	// VaryTurns draws each trajectory's turns from 0..Turns instead.
	VaryTurns bool
	// TextOnly leaves ResponseIDs empty, as imported logs do.
	TextOnly bool
}

// Data is a generated snapshot's tables, each sorted by its key.
type Data struct {
	Tasks        []schemas.Task
	Trajectories []schemas.Trajectory
	Steps        []schemas.Step
	Blobs        []schemas.Blob
}

var (
	targets = []string{"Save button", "File menu", "address bar", "first cell of column B", "Settings icon",
		"OK button of the dialog", "search field", "Documents folder", "font size box", "Close tab button"}
	verbs = []string{"click", "double_click", "type", "hotkey", "scroll"}
)

// Response is a plausible policy response for turn t: reasoning, then one
// action in the compact text form.
func Response(r *rand.Rand, t int) (string, schemas.Action) {
	x, y := int32(r.IntN(1001)), int32(r.IntN(1001))
	target := targets[r.IntN(len(targets))]
	var a schemas.Action
	var act string
	switch v := verbs[r.IntN(len(verbs))]; v {
	case "type":
		a = schemas.Action{Kind: v, Text: "quarterly report " + fmt.Sprint(r.IntN(100))}
		act = "type " + a.Text
	case "hotkey":
		a = schemas.Action{Kind: v, Keys: []string{"ctrl", "s"}}
		act = "hotkey ctrl s"
	case "scroll":
		a = schemas.Action{Kind: v, Direction: "down", Amount: 3}
		act = "scroll down 3"
	default:
		a = schemas.Action{Kind: v, X: &x, Y: &y}
		act = fmt.Sprintf("%s %d %d", v, x, y)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Step %d. The screenshot shows the application window with the %s visible near (%d, %d). ", t+1, target, x, y)
	b.WriteString("The previous action seems to have worked, so the next thing to do is to interact with the ")
	b.WriteString(target)
	b.WriteString(" to continue the task without changing anything else on the screen.\nAction: ")
	b.WriteString(act)
	return b.String(), a
}

// Screenshot is a w x h PNG, distinct per k.
func Screenshot(k, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	c := color.NRGBA{uint8(40 + k*37), uint8(90 + k*11), uint8(160 + k*5), 255}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if (x/(8+k%5)+y/16)%7 == 0 {
				img.SetNRGBA(x, y, color.NRGBA{250, 250, 250, 255})
			} else {
				img.SetNRGBA(x, y, c)
			}
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		panic(err) // encoding to memory cannot fail
	}
	return buf.Bytes()
}

// Generate makes the data; enc tokenizes the responses into recorded ids.
func Generate(enc tokenizer.Encoder, o Options) Data {
	r := rand.New(rand.NewPCG(o.Seed, 7))
	if o.GroupSize < 1 {
		o.GroupSize = 8
	}
	if o.Screenshots < 1 {
		o.Screenshots = 1
	}
	imEnd, _ := enc.TokenID("<|im_end|>")
	var d Data
	shots := make([]string, o.Screenshots)
	for k := range shots {
		b := Screenshot(k, o.Width, o.Height)
		h := schemas.HashBytes(b)
		shots[k] = h
		d.Blobs = append(d.Blobs, schemas.Blob{Hash: h, Mime: "image/png", Size: int64(len(b)), Width: int32(o.Width), Height: int32(o.Height), Bytes: b})
	}
	schemas.Blobs.Sort(d.Blobs)
	for g := 0; g*o.GroupSize < o.Trajectories; g++ {
		d.Tasks = append(d.Tasks, schemas.Task{TaskID: fmt.Sprintf("task-%05d", g), Domain: "files", Setup: "[]", Judge: "{}", Source: "seed",
			Instruction: fmt.Sprintf("Open report %d.txt in the editor, replace the title with the quarterly figures and save it.", g)})
	}
	for i := 0; i < o.Trajectories; i++ {
		id := fmt.Sprintf("traj-%07d", i)
		g := i / o.GroupSize
		reward := float64(r.IntN(2))
		turns := o.Turns
		if o.VaryTurns {
			turns = r.IntN(o.Turns + 1)
		}
		d.Trajectories = append(d.Trajectories, schemas.Trajectory{TrajectoryID: id, TaskID: fmt.Sprintf("task-%05d", g), Domain: "files",
			GroupID: fmt.Sprintf("group-%05d", g), Policy: "checkpoint", PolicyVersion: int32(r.IntN(3)), Steps: int32(turns),
			Reward: reward, Outcome: map[bool]string{true: "success", false: "failure"}[reward > 0], Source: "rollout"})
		for t := 0; t < turns; t++ {
			text, a := Response(r, t)
			st := schemas.Step{TrajectoryID: id, Step: int32(t), Response: text, RawAction: a.Kind, Observation: shots[r.IntN(len(shots))]}
			st.SetAction(a)
			if !o.TextOnly {
				st.ResponseIDs = append(enc.Encode(text), imEnd)
				st.Logprobs = make([]float32, len(st.ResponseIDs))
				for k := range st.Logprobs {
					st.Logprobs[k] = -float32(r.ExpFloat64() * 0.3)
				}
			}
			st.ResponseTokens = int32(len(st.ResponseIDs))
			d.Steps = append(d.Steps, st)
		}
	}
	return d
}
