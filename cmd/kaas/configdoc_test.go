package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// configDoc is the operator's flag reference, kept in step with kaas --help
// by TestConfigurationDoc.
var configDoc = filepath.Join("..", "..", "docs", "configuration.md")

// helpFlagRE matches a flag line of flag.PrintDefaults: "  -name type".
var helpFlagRE = regexp.MustCompile(`(?m)^  -([A-Za-z0-9][A-Za-z0-9-]*)`)

// helpFlags runs "kaas --help" in-process, through the code path of the
// binary, and returns the flag names it prints.
func helpFlags(t *testing.T) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("kaas --help exited %d; stderr:\n%s", code, stderr.String())
	}
	var names []string
	for _, m := range helpFlagRE.FindAllStringSubmatch(stdout.String()+stderr.String(), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("kaas --help printed no flags:\n%s%s", stdout.String(), stderr.String())
	}
	return names
}

// docFlag is one flag row of a table in configuration.md.
type docFlag struct {
	line     int
	name     string   // without the dashes
	env      []string // backquoted words of the environment column
	defaults string   // the default column
}

var (
	docFlagRE  = regexp.MustCompile("`--([A-Za-z0-9][A-Za-z0-9-]*)`")
	backquotes = regexp.MustCompile("`([^`]*)`")
)

// parseConfigDoc returns the rows of markdown tables whose first column
// names a flag (`--name`). Other rows (headers, the pod environment) are
// skipped.
func parseConfigDoc(doc string) ([]docFlag, []string) {
	var rows []docFlag
	var problems []string
	for i, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		names := docFlagRE.FindAllStringSubmatch(cells[0], -1)
		if len(names) == 0 {
			continue
		}
		if len(names) > 1 || len(cells) < 4 {
			problems = append(problems, fmt.Sprintf("configuration.md:%d: want one flag per row in a | flag | environment | default | meaning | table: %s", i+1, line))
			continue
		}
		var env []string
		for _, m := range backquotes.FindAllStringSubmatch(cells[1], -1) {
			env = append(env, m[1])
		}
		rows = append(rows, docFlag{line: i + 1, name: names[0][1], env: env, defaults: strings.TrimSpace(cells[2])})
	}
	return rows, problems
}

// kaasEnv is the documented naming rule of a flag's environment twin:
// KAAS_ and the flag name in upper snake case.
func kaasEnv(flagName string) string {
	return "KAAS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// checkConfigDoc compares the flags kaas --help prints with the doc and
// returns every disagreement.
func checkConfigDoc(help []string, doc string) []string {
	rows, problems := parseConfigDoc(doc)
	fs := newServeFlags(&serveConfig{}, io.Discard)
	inHelp := map[string]bool{}
	for _, n := range help {
		inHelp[n] = true
	}
	documented := map[string]int{}
	for _, r := range rows {
		if prev, dup := documented[r.name]; dup {
			problems = append(problems, fmt.Sprintf("configuration.md:%d: --%s documented twice (also line %d)", r.line, r.name, prev))
			continue
		}
		documented[r.name] = r.line
		if !inHelp[r.name] {
			problems = append(problems, fmt.Sprintf("configuration.md:%d: --%s is documented but kaas --help has no such flag", r.line, r.name))
			continue
		}
		want := kaasEnv(r.name)
		if got := envName(r.name); got != want {
			problems = append(problems, fmt.Sprintf("--%s: the broker reads %s, not the KAAS_ upper-snake form %s", r.name, got, want))
		}
		if len(r.env) != 1 || r.env[0] != want {
			problems = append(problems, fmt.Sprintf("configuration.md:%d: --%s: environment column %q, want `%s`", r.line, r.name, r.env, want))
		}
		if p := checkDocDefault(fs, r); p != "" {
			problems = append(problems, p)
		}
	}
	for _, n := range help {
		if _, ok := documented[n]; !ok {
			problems = append(problems, fmt.Sprintf("--%s is printed by kaas --help but missing from docs/configuration.md (add a | `--%s` | `%s` | default | meaning | row)", n, n, kaasEnv(n)))
		}
	}
	return problems
}

// checkDocDefault checks a row's default column against the flag's real
// default: "empty..." for an empty default, else the first backquoted word,
// compared after parsing it as the flag does (so `30m` matches 30m0s).
func checkDocDefault(fs *flag.FlagSet, r docFlag) string {
	f := fs.Lookup(r.name)
	if f == nil {
		return ""
	}
	if strings.HasPrefix(r.defaults, "empty") {
		if f.DefValue != "" {
			return fmt.Sprintf("configuration.md:%d: --%s: default documented as empty, kaas --help says %q", r.line, r.name, f.DefValue)
		}
		return ""
	}
	m := backquotes.FindStringSubmatch(r.defaults)
	if m == nil {
		return fmt.Sprintf("configuration.md:%d: --%s: default column %q has neither `value` nor \"empty\"", r.line, r.name, r.defaults)
	}
	probe := newServeFlags(&serveConfig{}, io.Discard)
	if err := probe.Set(r.name, m[1]); err != nil {
		return fmt.Sprintf("configuration.md:%d: --%s: documented default %q does not parse: %v", r.line, r.name, m[1], err)
	}
	if got := probe.Lookup(r.name).Value.String(); got != f.DefValue {
		return fmt.Sprintf("configuration.md:%d: --%s: documented default %q, kaas --help says %q", r.line, r.name, m[1], f.DefValue)
	}
	return ""
}

// TestConfigurationDoc: docs/configuration.md documents exactly the flags
// kaas --help prints, each with its KAAS_* twin and its real default.
func TestConfigurationDoc(t *testing.T) {
	doc, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	help := helpFlags(t)
	problems := checkConfigDoc(help, string(doc))
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) == 0 {
		t.Logf("%d flags of kaas --help documented in %s", len(help), configDoc)
	}
}

// TestConfigurationDocDetectsDrift: the check fails for a flag missing from
// the doc, a documented flag that does not exist, a wrong environment twin
// and a wrong default.
func TestConfigurationDocDetectsDrift(t *testing.T) {
	help := []string{"kafka-addr", "http-addr"}
	doc := strings.Join([]string{
		"| flag | environment | default | meaning |",
		"| --- | --- | --- | --- |",
		"| `--kafka-addr` | `KAAS_KAFKAADDR` | `:9092` | listener |",
		"| `--no-such-flag` | `KAAS_NO_SUCH_FLAG` | `1` | gone |",
		"| `--log-level` | `KAAS_LOG_LEVEL` | `debug` | level |",
	}, "\n")
	got := strings.Join(checkConfigDoc(help, doc), "\n")
	for _, want := range []string{
		"--http-addr is printed by kaas --help but missing",
		"--no-such-flag is documented but kaas --help has no such flag",
		"--log-level is documented but kaas --help has no such flag",
		"want `KAAS_KAFKA_ADDR`",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q; got:\n%s", want, got)
		}
	}
	help = append(help, "log-level")
	got = strings.Join(checkConfigDoc(help, doc), "\n")
	if !strings.Contains(got, `--log-level: documented default "debug", kaas --help says "info"`) {
		t.Errorf("a wrong default is not reported; got:\n%s", got)
	}
}
