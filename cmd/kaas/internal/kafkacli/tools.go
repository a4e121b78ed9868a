package kafkacli

import (
	"context"
	"io"
	"sort"
)

// Tool is one of Kafka's command-line tools, run as `kaas NAME flags...`.
type Tool struct {
	Name  string // the kaas command: Kafka's script name without kafka- and .sh
	Kafka string // the Kafka script it stands for
	Run   func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

var tools = map[string]Tool{}

// register adds a tool; each tool's file registers itself, so a tool is
// one file, as kfake keeps one file per API.
func register(t Tool) Tool {
	if _, dup := tools[t.Name]; dup {
		panic("kafkacli: tool registered twice: " + t.Name)
	}
	tools[t.Name] = t
	return t
}

// Lookup finds the tool named name.
func Lookup(name string) (Tool, bool) {
	t, ok := tools[name]
	return t, ok
}

// Names lists the tools, sorted.
func Names() []string {
	out := make([]string, 0, len(tools))
	for n := range tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
