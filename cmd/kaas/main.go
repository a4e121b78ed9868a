// Command kaas is the Kafka-compatible broker. `kaas` serves; `kaas version`
// prints the version; `kaas assignment ...` inspects and plans
// assignment.json; `kaas bench` measures a cluster's throughput and latency;
// `kaas dump-log` prints a segment file's batches and records; `kaas
// restore` makes a namespace serve a shared volume restored from a backup;
// `kaas topics`, `kaas consumer-groups` and the rest of package kafkacli
// are Kafka's command-line tools.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/kaas-project/kaas/cmd/kaas/internal/kafkacli"
)

// version and revision are set at build time with
// -ldflags "-X main.version=... -X main.revision=..." (go tool task image does).
var version, revision = "dev", ""

// versionLine is what `kaas version` prints. Without a stamped revision it
// falls back to the commit the go command records when building in a git
// checkout, so a plain `go build` still names its source.
func versionLine() string {
	rev, goVersion := revision, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("kaas %s (revision %s, %s)", version, rev, goVersion)
}

// commandsUsage names every command; kaas --help, kaas help and an unknown
// command print it.
const commandsUsage = "usage: kaas [serve] [flags] | kaas version | kaas assignment show|plan ... | kaas scram-credential USER < password | kaas bench [flags] | kaas dump-log [flags] FILE.log ... | kaas restore --data-dir DIR [flags] | kaas TOOL --bootstrap-server HOST:PORT ... (Kafka's tools: kaas help lists them) | kaas help"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	} else if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		cmd = "version"
	}
	var err error
	switch cmd {
	case "serve":
		var cfg *serveConfig
		cfg, err = parseServe(args, os.Getenv, stderr)
		if err == nil {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			err = serve(ctx, cfg, stderr)
		}
	case "version":
		fmt.Fprintln(stdout, versionLine())
	case "assignment":
		err = runAssignment(args, stdout, stderr)
	case "scram-credential":
		err = runScramCredential(args, os.Stdin, stdout, stderr)
	case "bench":
		err = runBench(args, stdout, stderr)
	case "dump-log":
		err = runDumpLog(args, stdout, stderr)
	case "restore":
		err = runRestore(args, stdout, stderr)
	case "help":
		fmt.Fprintln(stdout, commandsUsage)
		fmt.Fprintln(stdout, "\nKafka's tools, with Kafka's flags and output (kaas TOOL --help):")
		width := 0
		for _, name := range kafkacli.Names() {
			width = max(width, len(name))
		}
		for _, name := range kafkacli.Names() {
			tool, _ := kafkacli.Lookup(name)
			fmt.Fprintf(stdout, "  kaas %-*s  %s\n", width, name, tool.Kafka)
		}
		fmt.Fprintln(stdout, "\nkaas serve flags:")
		newServeFlags(&serveConfig{}, stdout).PrintDefaults()
	default:
		if tool, ok := kafkacli.Lookup(cmd); ok {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			err = tool.Run(ctx, args, os.Stdin, stdout, stderr)
			break
		}
		err = fmt.Errorf("unknown command %q\n%s", cmd, commandsUsage)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "kaas: %v\n", err)
		return 2
	}
	return 0
}
