package loggers

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func set(name, level string) Op {
	return Op{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: &level}
}

func del(name string) Op { return Op{Name: name, Op: kmsg.IncrementalAlterConfigOpDelete} }

// lines logs one line at each level through log and returns the messages
// written.
func lines(buf *bytes.Buffer, log zerolog.Logger) string {
	buf.Reset()
	log.Trace().Msg("trace")
	log.Debug().Msg("debug")
	log.Info().Msg("info")
	log.Warn().Msg("warn")
	log.Error().Msg("error")
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if i := strings.Index(l, `"message":"`); i >= 0 {
			out = append(out, strings.TrimSuffix(l[i+len(`"message":"`):], `"}`))
		}
	}
	return strings.Join(out, " ")
}

// TestLevels: named loggers follow the root until set, keep their own
// level when the root changes, and follow it again when reset; the lines
// each writes are exactly those at or above its level.
func TestLevels(t *testing.T) {
	var buf bytes.Buffer
	base := zerolog.New(&buf).Level(zerolog.TraceLevel)
	l := New(zerolog.InfoLevel)
	root := l.Logger(Root, base)
	part := l.Logger("kaas.partition", base.With().Str("actor", "partition").Logger())
	grp := l.Logger("kaas.groups", base)
	again := l.Logger("kaas.partition", base) // the same logger, named twice

	steps := []struct {
		ops                   []Op
		root, part, grp, desc string
	}{
		{nil, "info warn error", "info warn error", "info warn error",
			"root=INFO kaas.groups=INFO kaas.partition=INFO"},
		{[]Op{set("kaas.partition", "DEBUG")}, "info warn error", "debug info warn error", "info warn error",
			"root=INFO kaas.groups=INFO kaas.partition=DEBUG"},
		{[]Op{set(Root, "ERROR")}, "error", "debug info warn error", "error",
			"root=ERROR kaas.groups=ERROR kaas.partition=DEBUG"},
		{[]Op{set("kaas.groups", "TRACE"), del("kaas.partition")}, "error", "error", "trace debug info warn error",
			"root=ERROR kaas.groups=TRACE kaas.partition=ERROR"},
	}
	for i, s := range steps {
		if err := l.Apply(s.ops, false); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for _, c := range []struct {
			name string
			log  zerolog.Logger
			want string
		}{{"root", root, s.root}, {"partition", part, s.part}, {"partition named twice", again, s.part}, {"groups", grp, s.grp}} {
			if got := lines(&buf, c.log); got != c.want {
				t.Errorf("step %d: %s writes %q, want %q", i, c.name, got, c.want)
			}
		}
		var desc []string
		for _, d := range l.Describe() {
			desc = append(desc, d.Name+"="+d.Level)
		}
		if got := strings.Join(desc, " "); got != s.desc {
			t.Errorf("step %d: described %s, want %s", i, got, s.desc)
		}
	}
}

// TestApplyRefusals: Kafka's refusals, and a refused op applies none of
// its request's ops; validateOnly applies nothing.
func TestApplyRefusals(t *testing.T) {
	l := New(zerolog.InfoLevel)
	l.Logger("kaas.groups", zerolog.Nop())
	bad := "LOUD"
	for _, c := range []struct {
		op   Op
		code int16
		msg  string
	}{
		{set("kaas.nope", "DEBUG"), kerr.InvalidConfig.Code, "Logger kaas.nope does not exist!"},
		{set("kaas.groups", bad), kerr.InvalidConfig.Code, "Cannot set the log level of kaas.groups to LOUD as it is not a supported log level. Valid log levels are TRACE, DEBUG, INFO, WARN, ERROR, FATAL"},
		{set("kaas.groups", "debug"), kerr.InvalidConfig.Code, "not a supported log level"},
		{Op{Name: "kaas.groups", Op: kmsg.IncrementalAlterConfigOpSet}, kerr.InvalidConfig.Code, "to null"},
		{del(Root), kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed"},
		{del("kaas.nope"), kerr.InvalidConfig.Code, "does not exist"},
		{Op{Name: "kaas.groups", Op: kmsg.IncrementalAlterConfigOpAppend, Value: &bad}, kerr.InvalidRequest.Code, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
		{Op{Name: "kaas.groups", Op: kmsg.IncrementalAlterConfigOpSubtract, Value: &bad}, kerr.InvalidRequest.Code, "SUBTRACT operation"},
	} {
		err := l.Apply([]Op{set("kaas.groups", "DEBUG"), c.op}, false)
		if err == nil || err.Code != c.code || !strings.Contains(err.Message, c.msg) {
			t.Errorf("%+v: %v, want code %d with %q", c.op, err, c.code, c.msg)
		}
		if got := fmt.Sprint(l.Describe()); got != "[{root INFO} {kaas.groups INFO}]" {
			t.Fatalf("after a refused request: %s", got)
		}
	}
	if err := l.Apply([]Op{set("kaas.groups", "DEBUG")}, true); err != nil || fmt.Sprint(l.Describe()) != "[{root INFO} {kaas.groups INFO}]" {
		t.Fatalf("validate only: %v, %v", err, l.Describe())
	}
}
