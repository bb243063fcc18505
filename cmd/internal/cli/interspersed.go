package cli

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// Interspersed returns args with the flags that follow a command's
// positional arguments moved before them, so that
// `cualake lake branch create exp/a --from 3f2a9c` means what it says:
// urfave/cli stops reading flags at the first positional argument and would
// otherwise see "--from" as a second NAME. Only the leaf command's own flags
// move (an exact `--name` or `--name=value`, with its value when it takes
// one); anything else keeps its place, "--" ends flag reading as usual, and
// a positional that merely starts with a dash (an SQL comment, "-1") stays
// positional.
func Interspersed(app *cli.App, args []string) []string {
	out, _ := intersperse(app, args)
	return out
}

// StrayFlag returns the first argument after a command's positional
// arguments that is shaped like a long flag ("--fromat", "--x=1") but is
// none of the command's flags, or "" when there is none. Such a word would
// otherwise join the positional arguments: `cualake query "select 1"
// --fromat csv` would run "select 1 --fromat csv", the typo an SQL comment.
// Words after "--" are positional by request and never stray.
func StrayFlag(app *cli.App, args []string) string {
	_, stray := intersperse(app, args)
	return stray
}

func intersperse(app *cli.App, args []string) (out []string, stray string) {
	if len(args) < 2 {
		return args, ""
	}
	cmds, i := app.Commands, 1
	var leaf *cli.Command
	for i < len(args) {
		c := subcommand(cmds, args[i])
		if c == nil {
			break
		}
		leaf, cmds = c, c.Subcommands
		i++
	}
	flags := app.Flags
	if leaf != nil {
		flags = leaf.Flags
	}
	takesValue := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var moved, positional []string
	for j := i; j < len(args); j++ {
		a := args[j]
		if a == "--" {
			positional = append(positional, args[j:]...)
			break
		}
		name, hasValue := flagName(a)
		value, known := takesValue[name]
		if !known {
			if stray == "" && strings.HasPrefix(a, "--") && longFlagShape(name) {
				stray = a
			}
			positional = append(positional, a)
			continue
		}
		moved = append(moved, a)
		if value && !hasValue && j+1 < len(args) {
			moved = append(moved, args[j+1])
			j++
		}
	}
	if len(positional) == 0 {
		return args, stray
	}
	out = append([]string{}, args[:i]...)
	out = append(out, moved...)
	return append(out, positional...), stray
}

// longFlagShape reports whether name could be a flag's name: a letter, then
// letters, digits and dashes ("fromat", "max-turns"; not " a comment").
func longFlagShape(name string) bool {
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '_'):
		default:
			return false
		}
	}
	return name != ""
}

// flagName is the name of a flag argument ("--from=x" -> "from", true) or
// "" when a is not shaped like one.
func flagName(a string) (name string, hasValue bool) {
	if !strings.HasPrefix(a, "-") || a == "-" {
		return "", false
	}
	a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	if k := strings.IndexByte(a, '='); k >= 0 {
		return a[:k], true
	}
	return a, false
}

// subcommand is the command of cmds named (or aliased) name, or nil.
func subcommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
