package kafkacli

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// subcommandTool describes a tool used as `kaas NAME [flags] COMMAND
// [flags]`, as Kafka's argparse4j tools (kafka-transactions.sh,
// kafka-features.sh, kafka-metadata-quorum.sh, kafka-cluster.sh) are; its
// refusals are argparse4j's.
type subcommandTool struct {
	name     string
	commands []string // in the order usage lists them
	// global registers the flags taken before the command; they are also
	// taken after it, so both of Kafka's orders work.
	global func(fs *flag.FlagSet)
	// command registers a command's own flags.
	command func(cmd string, fs *flag.FlagSet)
}

// parse reads args: the flags before the command, the command, then its
// flags. It returns the command and the flags given.
func (t subcommandTool) parse(args []string, stderr io.Writer) (string, map[string]bool, error) {
	given := map[string]bool{}
	fs := NewFlagSet(t.name, stderr)
	t.global(fs)
	fs.Usage = t.usage(fs, "COMMAND", stderr)
	if err := fs.Parse(args); err != nil {
		return "", nil, err
	}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if fs.NArg() == 0 {
		fs.Usage()
		return "", nil, fmt.Errorf("too few arguments: give a command, one of %s", strings.Join(t.commands, ", "))
	}
	cmd := fs.Arg(0)
	if !slices.Contains(t.commands, cmd) {
		return "", nil, fmt.Errorf("argument COMMAND: invalid choice: '%s' (choose from %s)", cmd, strings.Join(t.commands, ", "))
	}
	// Registering a flag again sets its variable to the default: keep what
	// was set before the command to set it back.
	before := map[string]string{}
	fs.Visit(func(f *flag.Flag) { before[f.Name] = f.Value.String() })
	sub := NewFlagSet(t.name, stderr)
	t.global(sub)
	t.command(cmd, sub)
	sub.Usage = t.usage(sub, cmd, stderr)
	for name, v := range before {
		if err := sub.Set(name, v); err != nil {
			return "", nil, err
		}
	}
	if err := sub.Parse(fs.Args()[1:]); err != nil {
		return "", nil, err
	}
	if sub.NArg() > 0 {
		return "", nil, fmt.Errorf("unrecognized arguments: '%s'", strings.Join(sub.Args(), " "))
	}
	sub.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return cmd, given, nil
}

// usage prints the tool's usage for a command (or COMMAND): its flags,
// one-letter aliases with one dash as Kafka spells them.
func (t subcommandTool) usage(fs *flag.FlagSet, cmd string, stderr io.Writer) func() {
	return func() {
		fmt.Fprintf(stderr, "usage: kaas %s %s --bootstrap-server HOST:PORT [flags], as Kafka's kafka-%s.sh\n", t.name, cmd, t.name)
		fmt.Fprintf(stderr, "commands: %s\n", strings.Join(t.commands, ", "))
		fs.VisitAll(func(f *flag.Flag) {
			arg, usage := flag.UnquoteUsage(f)
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			fmt.Fprintf(stderr, "  %s%s", dash, f.Name)
			if arg != "" {
				fmt.Fprintf(stderr, " %s", arg)
			}
			fmt.Fprintf(stderr, "\n    \t%s\n", usage)
		})
	}
}
