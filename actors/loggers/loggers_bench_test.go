package loggers

import (
	"io"
	"testing"

	"github.com/rs/zerolog"
)

// BenchmarkDebugLineDropped: what a debug line costs a logger at INFO. A
// named logger builds the event (its fields included) and its hook drops
// it; the baseline is a plain zerolog logger at INFO, which skips the
// event before building it.
//
//	go test ./actors/loggers -run '^$' -bench BenchmarkDebugLineDropped -benchmem -count 3
func BenchmarkDebugLineDropped(b *testing.B) {
	line := func(l zerolog.Logger) {
		l.Debug().Str("peer", "10.0.0.1").Int32("broker", 3).Int64("epoch", 42).Str("state", "alive").Msg("heartbeat ping")
	}
	b.Run("named-logger", func(b *testing.B) {
		l := New(zerolog.InfoLevel).Logger("kaas.supervisor", zerolog.New(io.Discard).Level(zerolog.TraceLevel))
		b.ReportAllocs()
		for range b.N {
			line(l)
		}
	})
	b.Run("baseline-level-skip", func(b *testing.B) {
		l := zerolog.New(io.Discard).Level(zerolog.InfoLevel)
		b.ReportAllocs()
		for range b.N {
			line(l)
		}
	})
}
