// Package bench is `kaas bench`: a producer, consumer and end-to-end
// latency load generator for any Kafka-compatible cluster (kaas, Kafka,
// kfake), in the spirit of kafka-producer-perf-test and rpk. It reports
// throughput and latency percentiles as text or JSON.
package bench

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Modes of a run.
const (
	ModeProduce = "produce" // latency: Produce call to acknowledgement
	ModeConsume = "consume" // throughput only, reading the topic from the start
	ModeE2E     = "e2e"     // latency: Produce call to the record's arrival at a consumer
)

// e2eHeader is the bytes of an e2e record value that carry the run id and
// the produce time (two big-endian int64).
const e2eHeader = 16

// Config is one run.
type Config struct {
	Brokers     []string
	Topic       string
	Partitions  int32 // of the topic when it has to be created
	Mode        string
	RecordSize  int
	Count       int64         // records to send (consume: to read); 0: until Duration
	Duration    time.Duration // 0: until Count
	Acks        string        // 0, 1 or all
	Idempotent  bool
	Compression string
	Rate        float64       // records per second; 0 is unlimited
	Linger      time.Duration // producer linger
	DrainWait   time.Duration // e2e: how long to wait for the last acknowledged records to arrive

	// Progress receives a live line every ProgressInterval; nil prints none.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// Validate reports the first thing wrong with c.
func (c Config) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return errors.New("no brokers given")
	case c.Topic == "":
		return errors.New("no topic given")
	case c.Partitions < 1:
		return fmt.Errorf("partitions %d: want at least 1", c.Partitions)
	case c.Count < 0:
		return fmt.Errorf("count %d: want 0 (until the duration) or more", c.Count)
	case c.Duration < 0:
		return fmt.Errorf("duration %s: want 0 (until the count) or more", c.Duration)
	case c.Count == 0 && c.Duration == 0:
		return errors.New("give a count, a duration or both")
	case c.Rate < 0:
		return fmt.Errorf("rate %g: want 0 (unlimited) or more", c.Rate)
	}
	switch c.Mode {
	case ModeProduce, ModeConsume:
		if c.RecordSize < 0 {
			return fmt.Errorf("record size %d: want 0 or more", c.RecordSize)
		}
	case ModeE2E:
		if c.RecordSize < e2eHeader {
			return fmt.Errorf("record size %d: e2e needs at least %d bytes (run id and produce time)", c.RecordSize, e2eHeader)
		}
	default:
		return fmt.Errorf("mode %q: want produce, consume or e2e", c.Mode)
	}
	if c.Mode == ModeConsume {
		return nil
	}
	if _, err := acksOpt(c.Acks); err != nil {
		return err
	}
	if c.Idempotent && c.Acks != "all" && c.Acks != "-1" {
		return fmt.Errorf("acks %s: an idempotent producer needs acks all (or pass --idempotent=false)", c.Acks)
	}
	if _, err := compressionOpt(c.Compression); err != nil {
		return err
	}
	return nil
}

func acksOpt(acks string) (kgo.Acks, error) {
	switch acks {
	case "0":
		return kgo.NoAck(), nil
	case "1":
		return kgo.LeaderAck(), nil
	case "all", "-1":
		return kgo.AllISRAcks(), nil
	}
	return kgo.Acks{}, fmt.Errorf("acks %q: want 0, 1 or all", acks)
}

func compressionOpt(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}
