package kafkacli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// What kaas console-producer and kaas console-consumer share: the client
// properties they take (a file, then key=value flags over it) and how a
// Java client property becomes a franz-go option.

// consoleKeyValues parses key=value arguments as Kafka's
// CommandLineUtils.parseKeyValueArgs does: split at the first '=', a bare
// key meaning the empty value.
func consoleKeyValues(flagName string, args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		if k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flagName, a)
		}
		out[k] = v
	}
	return out, nil
}

// consoleReadProperties reads a Java properties file, with Java's escapes
// in values (\t, \n, \uXXXX), which a separator such as key.separator or
// line.separator needs.
func consoleReadProperties(path string) (map[string]string, error) {
	props, err := ReadProperties(path)
	if err != nil {
		return nil, err
	}
	for k, v := range props {
		props[k] = consoleUnescape(v)
	}
	return props, nil
}

// consoleUnescape undoes java.util.Properties's escapes.
func consoleUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// consoleClientProps are a tool's client properties, layered as Kafka's
// tools layer them: the config file, then --producer-property or
// --consumer-property over it, then the tool's own flags. given records
// the keys the user set, so that a property with no franz-go equivalent is
// reported only when the user asked for it.
type consoleClientProps struct {
	tool  string // "console-producer"
	kind  string // "producer" or "consumer", as in "producer property"
	props map[string]string
	given map[string]bool
}

// newConsoleClientProps reads the config file (file may be empty) and
// lays the key=value flags over it.
func newConsoleClientProps(tool, kind, file string, flagName string, kvs []string) (*consoleClientProps, error) {
	p := &consoleClientProps{tool: tool, kind: kind, props: map[string]string{}, given: map[string]bool{}}
	if file != "" {
		fromFile, err := consoleReadProperties(file)
		if err != nil {
			return nil, err
		}
		for k, v := range fromFile {
			p.props[k], p.given[k] = v, true
		}
	}
	fromFlags, err := consoleKeyValues(flagName, kvs)
	if err != nil {
		return nil, err
	}
	for k, v := range fromFlags {
		p.props[k], p.given[k] = v, true
	}
	return p, nil
}

// merge is Kafka's CommandLineUtils.maybeMergeOptions: a flag given on the
// command line wins, else a property already set stays, else the flag's
// default.
func (p *consoleClientProps) merge(key string, flagGiven bool, value string) {
	if flagGiven {
		p.props[key], p.given[key] = value, true
		return
	}
	if _, ok := p.props[key]; !ok {
		p.props[key] = value
	}
}

// has reports whether key is set.
func (p *consoleClientProps) has(key string) bool {
	_, ok := p.props[key]
	return ok
}

// int reads an integer property, with the Java client's message for a bad
// one.
func (p *consoleClientProps) int(key string) (int64, bool, error) {
	v, ok := p.props[key]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("Invalid value %s for configuration %s: Not a number", v, key)
	}
	return n, true, nil
}

// ms reads a millisecond property as a duration.
func (p *consoleClientProps) ms(key string) (time.Duration, bool, error) {
	n, ok, err := p.int(key)
	if err != nil || !ok {
		return 0, ok, err
	}
	if n < 0 {
		return 0, false, fmt.Errorf("Invalid value %d for configuration %s: Value must be at least 0", n, key)
	}
	return time.Duration(n) * time.Millisecond, true, nil
}

// bool reads a boolean property as Java's ConfigDef does: true or false,
// any case.
func (p *consoleClientProps) bool(key string) (value, set bool, err error) {
	v, ok := p.props[key]
	if !ok {
		return false, false, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, false, fmt.Errorf("Invalid value %s for configuration %s: Expected value to be either true or false", v, key)
}

// check refuses a property the tool has no meaning for, and notes on
// stderr each one the user gave that is accepted without effect.
// known is the set the tool maps to franz-go; noEffect maps a key to why
// it has none, over consoleCommonNoEffect, which every tool accepts.
func (p *consoleClientProps) check(known map[string]bool, noEffect map[string]string, stderr io.Writer) error {
	keys := make([]string, 0, len(p.props))
	for k := range p.props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case known[k] || consoleSecurityKey(k):
		case noEffect[k] != "" || consoleCommonNoEffect[k] != "":
			if p.given[k] {
				why := noEffect[k]
				if why == "" {
					why = consoleCommonNoEffect[k]
				}
				fmt.Fprintf(stderr, "kaas %s: %s property %s has no effect: %s\n", p.tool, p.kind, k, why)
			}
		default:
			return fmt.Errorf("%s property %s is not supported by kaas %s (docs/tools.md lists the %s properties it maps to its client)", p.kind, k, p.tool, p.kind)
		}
	}
	return nil
}

// consoleSecurityKey: the connection's security settings, which
// SecurityOpts reads.
func consoleSecurityKey(k string) bool {
	return k == "security.protocol" || strings.HasPrefix(k, "sasl.") || strings.HasPrefix(k, "ssl.")
}

// commonOpts maps the properties both tools share: client.id, the retry
// backoff, the metadata age, and the security settings.
func (p *consoleClientProps) commonOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if id := p.props["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	if d, ok, err := p.ms("retry.backoff.ms"); err != nil {
		return nil, err
	} else if ok {
		opts = append(opts, kgo.RetryBackoffFn(func(int) time.Duration { return d }))
	}
	if d, ok, err := p.ms("metadata.max.age.ms"); err != nil {
		return nil, err
	} else if ok && d > 0 {
		opts = append(opts, kgo.MetadataMaxAge(d))
	}
	sec, err := SecurityOpts(p.props)
	if err != nil {
		return nil, err
	}
	return append(opts, sec...), nil
}

// consoleCommonNoEffect are properties every tool accepts (check) and
// leaves to the operating system or to the Java client's internals; a
// tool that maps one lists it as known.
var consoleCommonNoEffect = map[string]string{
	"bootstrap.servers":       "--bootstrap-server names the brokers",
	"send.buffer.bytes":       "socket buffer sizes are the operating system's",
	"receive.buffer.bytes":    "socket buffer sizes are the operating system's",
	"request.timeout.ms":      "franz-go times requests out by its own rules",
	"connections.max.idle.ms": "franz-go closes idle connections by its own rules",
}

// consoleConfigFile is the client properties file: --producer.config (or
// --consumer.config) or --command-config, Kafka's later name for it; not
// both.
// consumeOpts maps the consumer properties the consuming tools read
// alike: isolation.level, the fetch sizes, fetch.max.wait.ms and
// client.rack; and returns max.poll.records (500, the Java consumer's
// default, when unset). A property a tool does not take was refused by
// check before.
func (p *consoleClientProps) consumeOpts() (opts []kgo.Opt, pollMax int, err error) {
	switch v := p.props["isolation.level"]; v {
	case "", "read_uncommitted":
	case "read_committed":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	default:
		return nil, 0, fmt.Errorf("Invalid value %s for configuration isolation.level: String must be one of: read_committed, read_uncommitted", v)
	}
	pollMax = 500
	if n, ok, err := p.int("max.poll.records"); err != nil {
		return nil, 0, err
	} else if ok {
		if n < 1 {
			return nil, 0, fmt.Errorf("Invalid value %d for configuration max.poll.records: Value must be at least 1", n)
		}
		pollMax = int(n)
	}
	for _, f := range []struct {
		key string
		opt func(int32) kgo.ConsumerOpt
	}{
		{"fetch.min.bytes", kgo.FetchMinBytes},
		{"fetch.max.bytes", kgo.FetchMaxBytes},
		{"max.partition.fetch.bytes", kgo.FetchMaxPartitionBytes},
	} {
		if n, ok, err := p.int(f.key); err != nil {
			return nil, 0, err
		} else if ok {
			if n < 1 || n > 1<<30 {
				return nil, 0, fmt.Errorf("%s %d: kaas's client takes 1 to 1073741824", f.key, n)
			}
			opts = append(opts, f.opt(int32(n)))
		}
	}
	if d, ok, err := p.ms("fetch.max.wait.ms"); err != nil {
		return nil, 0, err
	} else if ok {
		// franz-go waits at least 10 ms; Kafka's 0 answers at once.
		opts = append(opts, kgo.FetchMaxWait(max(d, 10*time.Millisecond)))
	}
	if r := p.props["client.rack"]; r != "" {
		opts = append(opts, kgo.Rack(r))
	}
	return opts, pollMax, nil
}

func consoleConfigFile(oldFlag, oldPath, newPath string) (string, error) {
	if oldPath != "" && newPath != "" {
		return "", fmt.Errorf("--%s and --command-config both name the client properties file: give one", oldFlag)
	}
	if oldPath != "" {
		return oldPath, nil
	}
	return newPath, nil
}

// consoleIsTerminal reports whether f is an interactive terminal, where
// the producer prompts for each line as Kafka's does.
func consoleIsTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
