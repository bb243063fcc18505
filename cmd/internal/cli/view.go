package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/view"
)

// viewDir is where `cualake view` writes pages by default, and where
// reports in the folder above (out/) link their ids to.
const viewDir = "out/view"

func init() {
	sub := func(kind, usage, example string) *cli.Command {
		return &cli.Command{
			Name: kind, Usage: usage, ArgsUsage: strings.ToUpper(kind) + "_ID",
			Description: "Example: " + example,
			Flags:       viewFlags,
			Action:      func(c *cli.Context) error { return viewAction(c, kind) },
		}
	}
	register(&cli.Command{
		Name:  "view",
		Usage: "write a trajectory, a rollout group or a task as a static HTML page that opens from disk",
		Description: `A trajectory page shows every step's screenshot with its action drawn on it (click point, drag
path, scroll direction; typed text and keys as a caption), the response, the accessibility tree
(collapsed) and the step's tokens with their trained part, as in the segment that holds it; the
outcome, reward and judge detail at the top, and the verifiers' criteria and probe evidence.
Steps of tree-only rollouts, which recorded no screenshot, show the accessibility tree the agent
saw, drawn as boxes. A group page shows its rollouts side by side with outcome and advantage (and
writes its rollouts' pages beside it); a task page its instruction, setup, judge, pass-rate
history and trajectories. Screenshots are written once, by hash, into blobs/ beside the page.
Pages go to ` + viewDir + `/ by default, where the ids in reports under out/ link to.

Example:
   cualake view trajectory 'files-003@it001#02'
   cualake view group 'files-003@it001' --out /tmp/g/group.html
   cualake view task files-003 --at release/2026-11`,
		Subcommands: []*cli.Command{
			sub(view.KindTrajectory, "one episode, step by step", "cualake view trajectory 'files-003@it001#02' --out t.html"),
			sub(view.KindGroup, "the rollouts of one group side by side, with their pages", "cualake view group 'files-003@it001'"),
			sub(view.KindTask, "a task: instruction, setup, judge, pass-rate history, trajectories", "cualake view task files-003"),
		},
	})
}

var viewFlags = []cli.Flag{lakeFlag, jsonFlag,
	&cli.StringFlag{Name: "at", Usage: "snapshot id, id prefix or tag (default main)"},
	&cli.StringFlag{Name: "out", Usage: "page file (default " + viewDir + "/KIND-ID.html)"},
}

func viewAction(c *cli.Context, kind string) error {
	if c.NArg() > 1 {
		// `view trajectory ID --out X`: flags after the id.
		return reparse(c, viewFlags, func(cc *cli.Context) error { return viewAction(cc, kind) })
	}
	if c.NArg() != 1 || c.Args().First() == "" {
		return usageErr("view %s needs one %s id", kind, kind)
	}
	id := c.Args().First()
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	e, err := query.Open(c.Context, l, m)
	if err != nil {
		return err
	}
	defer e.Close()
	out := c.String("out")
	if out == "" {
		out = filepath.Join(viewDir, view.PageName(kind, id))
	}
	w, err := view.Write(c.Context, e, kind, id, out, view.WriteOptions{Tokenizers: segmentTokenizers(), Lakes: lakeFolders(c)})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"kind": kind, "id": id, "snapshot": m.ID, "pages": w.Pages,
			"screenshots_written": w.Blobs, "screenshots_kept": w.BlobsKept})
	}
	fmt.Fprintf(c.App.Writer, "wrote %s (%s %s at %s; %d more page(s), %d screenshot(s) written, %d already there)\n",
		w.Pages[0], kind, id, shortSnap(m.ID), len(w.Pages)-1, w.Blobs, w.BlobsKept)
	return nil
}

// segmentTokenizers decodes segments' token ids with the tokenizer they
// were cut with: the Qwen3 tokenizer.json of `make setup`, used only when
// its hash is the one the segments name. Segments cut with a checkpoint's
// vocabulary ("checkpoint:vN@sha256:…", the removed encoder-decoder's) get
// errCheckpointVocab.
func segmentTokenizers() view.Tokenizers {
	var mu sync.Mutex
	cache := map[string]view.Decoder{}
	return func(name string) (view.Decoder, error) {
		mu.Lock()
		defer mu.Unlock()
		if d, ok := cache[name]; ok {
			return d, nil
		}
		file, sha, _ := strings.Cut(name, "@sha256:")
		if strings.HasPrefix(file, "checkpoint:") {
			return nil, fmt.Errorf("the segments were cut with %s: %w", file, errCheckpointVocab)
		}
		path, err := tokenizer.DefaultPath()
		if err != nil {
			return nil, err
		}
		got, err := fileSHA256(path)
		if err != nil {
			return nil, err
		}
		if sha == "" || !strings.HasPrefix(got, sha) {
			return nil, fmt.Errorf("the segments were cut with %s, and the installed tokenizer %s has sha256 %s", name, path, got[:16])
		}
		d, err := tokenizer.Default()
		if err != nil {
			return nil, err
		}
		cache[name] = d
		return d, nil
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
