package cli

import (
	"slices"
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
	if len(args) < 2 {
		return args
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
	takesValue := flagValues(flags, false)
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
		return args
	}
	out := append([]string{}, args[:i]...)
	out = append(out, moved...)
	return append(out, positional...)
}

// flagValues maps every name of flags, and with implicit of the flags
// urfave/cli adds to every command (--help, --version,
// --generate-bash-completion), to whether it takes a value.
func flagValues(flags []cli.Flag, implicit bool) map[string]bool {
	if implicit {
		flags = append(slices.Clone(flags), cli.HelpFlag, cli.VersionFlag, cli.BashCompletionFlag)
	}
	takesValue := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	return takesValue
}

// StrayFlag returns the first word after a command's first positional
// argument that is shaped like a long flag ("--fromat", "--x=1") but is
// none of the command's flags, or "" when there is none. Such a word would
// otherwise join the positional arguments: `cualake query "select 1"
// --fromat csv` would run "select 1 --fromat csv", the typo an SQL comment.
// Words after "--" are positional by request; an unknown flag before the
// first positional is urfave/cli's own error. The command is found as
// urfave/cli finds it, past the flags of the commands above it (`audit --at
// X overlap --shard 1/4`); a command whose first argument picks a command
// with flags of its own (the audit stage binary's KIND) is not checked.
func StrayFlag(app *cli.App, args []string) string {
	cmds, flags, name := app.Commands, app.Flags, app.Name
	i := 1
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return ""
		}
		if c := subcommand(cmds, a); c != nil {
			cmds, flags, name = c.Subcommands, c.Flags, c.Name
			i++
			continue
		}
		n, hasValue := flagName(a)
		value, known := flagValues(flags, true)[n]
		if !known {
			break
		}
		if value && !hasValue {
			i++
		}
		i++
	}
	if i >= len(args) || hasSubcommands(cmds) || name == "audit" {
		return ""
	}
	takesValue := flagValues(flags, true)
	for j := i + 1; j < len(args); j++ {
		a := args[j]
		if a == "--" {
			return ""
		}
		n, hasValue := flagName(a)
		value, known := takesValue[n]
		switch {
		case known && value && !hasValue:
			j++ // its value, whatever it looks like
		case !known && strings.HasPrefix(a, "--") && longFlagShape(n):
			return a
		}
	}
	return ""
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

// hasSubcommands reports whether cmds holds a command other than the help
// command urfave/cli adds to a command it has run.
func hasSubcommands(cmds []*cli.Command) bool {
	return slices.ContainsFunc(cmds, func(c *cli.Command) bool { return c.Name != "help" })
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
