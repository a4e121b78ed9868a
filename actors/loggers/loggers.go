// Package loggers holds a broker's named loggers and their levels, which
// an operator reads and changes at run time as Kafka's broker loggers (the
// BROKER_LOGGER config resource: kafka-configs.sh --entity-type
// broker-loggers).
//
// Every named logger is derived from one base logger that writes every
// level; a hook on each named logger drops the lines below that logger's
// level. A logger whose level was never set, or was reset, follows the
// root logger's. Levels live in memory, as Kafka's do: a restart goes back
// to --log-level.
package loggers

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Root is the root logger's name, as Kafka names it.
const Root = "root"

// LevelNames are the levels a logger takes, as Kafka names them.
var LevelNames = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}

var levels = map[string]zerolog.Level{
	"TRACE": zerolog.TraceLevel, "DEBUG": zerolog.DebugLevel, "INFO": zerolog.InfoLevel,
	"WARN": zerolog.WarnLevel, "ERROR": zerolog.ErrorLevel, "FATAL": zerolog.FatalLevel,
}

// unset marks a named logger that follows the root's level.
const unset = int32(-100)

// Levels is one broker's named loggers.
type Levels struct {
	mu    sync.Mutex // serializes Apply
	root  atomic.Int32
	named sync.Map // name -> *atomic.Int32 (a zerolog.Level, or unset)
}

// New returns the loggers with the root at level.
func New(level zerolog.Level) *Levels {
	l := &Levels{}
	l.root.Store(int32(level))
	return l
}

// Logger returns base as the logger called name: its lines below the
// logger's level are dropped. base must write every level (and be no
// other named logger: each line passes one level check). Root names the
// root logger.
func (l *Levels) Logger(name string, base zerolog.Logger) zerolog.Logger {
	if name == Root {
		return base.Hook(hook{l: l})
	}
	fresh := new(atomic.Int32)
	fresh.Store(unset) // a new logger follows the root
	v, _ := l.named.LoadOrStore(name, fresh)
	return base.Hook(hook{l: l, level: v.(*atomic.Int32)})
}

// hook drops the lines below its logger's level.
type hook struct {
	l     *Levels
	level *atomic.Int32 // nil: the root logger
}

func (h hook) Run(e *zerolog.Event, level zerolog.Level, _ string) {
	if level < h.l.effective(h.level) && level != zerolog.NoLevel {
		e.Discard()
	}
}

func (l *Levels) effective(lv *atomic.Int32) zerolog.Level {
	if lv != nil {
		if v := lv.Load(); v != unset {
			return zerolog.Level(v)
		}
	}
	return zerolog.Level(l.root.Load())
}

// Logger is one logger as DescribeConfigs lists it.
type Logger struct {
	Name, Level string
}

// Describe lists every logger with its level: the root first, then the
// named loggers by name.
func (l *Levels) Describe() []Logger {
	out := []Logger{{Root, levelName(zerolog.Level(l.root.Load()))}}
	var named []Logger
	l.named.Range(func(k, v any) bool {
		named = append(named, Logger{k.(string), levelName(l.effective(v.(*atomic.Int32)))})
		return true
	})
	slices.SortFunc(named, func(a, b Logger) int { return strings.Compare(a.Name, b.Name) })
	return append(out, named...)
}

func levelName(lv zerolog.Level) string {
	for name, l := range levels {
		if l == lv {
			return name
		}
	}
	return strings.ToUpper(lv.String())
}

// Op is one change of an IncrementalAlterConfigs on the broker loggers.
type Op struct {
	Name  string
	Op    kmsg.IncrementalAlterConfigOp
	Value *string
}

// Error is a refused change: a Kafka error code and Kafka's message.
type Error struct {
	Code    int16
	Message string
}

func (e *Error) Error() string { return e.Message }

func refuse(code int16, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Apply checks every op as Kafka does (SET to a known level of a logger
// that exists, DELETE of a logger other than the root, no APPEND or
// SUBTRACT) and, unless validateOnly, applies them all; one refused op
// applies none. DELETE makes a logger follow the root again.
func (l *Levels) Apply(ops []Op, validateOnly bool) *Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, op := range ops {
		if op.Name != Root {
			if _, ok := l.named.Load(op.Name); !ok {
				return refuse(kerr.InvalidConfig.Code, "Logger %s does not exist!", op.Name)
			}
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return refuse(kerr.InvalidConfig.Code, "Cannot set the log level of %s to null", op.Name)
			}
			if _, ok := levels[*op.Value]; !ok {
				return refuse(kerr.InvalidConfig.Code, "Cannot set the log level of %s to %s as it is not a supported log level. Valid log levels are %s",
					op.Name, *op.Value, strings.Join(LevelNames, ", "))
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if op.Name == Root {
				return refuse(kerr.InvalidRequest.Code, "Removing the log level of the %s logger is not allowed", Root)
			}
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return refuse(kerr.InvalidRequest.Code, "%s operation is not allowed for the BROKER_LOGGER resource", op.Op)
		default:
			return refuse(kerr.InvalidRequest.Code, "unknown incremental alter op %d", op.Op)
		}
	}
	if validateOnly {
		return nil
	}
	for _, op := range ops {
		level := unset
		if op.Op == kmsg.IncrementalAlterConfigOpSet {
			level = int32(levels[*op.Value])
		}
		if op.Name == Root {
			l.root.Store(level)
			continue
		}
		v, _ := l.named.Load(op.Name)
		v.(*atomic.Int32).Store(level)
	}
	return nil
}
