package main

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchCounter counts a client's Fetch requests and their bytes on the
// wire (kgo's end-to-end hook).
type fetchCounter struct {
	fetches, sent, received atomic.Int64
}

func (c *fetchCounter) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != 1 || e.Err() != nil {
		return
	}
	c.fetches.Add(1)
	c.sent.Add(int64(e.BytesWritten))
	c.received.Add(int64(e.BytesRead))
}

// BenchmarkFetchSessions measures what a consumer of 1,000 partitions that
// carry few records costs the broker, with incremental fetch sessions
// (KIP-227, franz-go's default) against full fetches
// (kgo.DisableFetchSessions), in one run against one kaas process (in
// memory). A producer adds 200 records a second, each to a random
// partition, so the consumer's fetches return a few partitions each; one op
// is a window of KAAS_FETCH_SESSION_BENCH_SECONDS (default 10) of each
// mode in turn. Reported per Fetch: the broker's CPU (user+system from
// /proc), the response and request bytes. KAAS_FETCH_SESSION_BENCH_PROFILE
// names a directory for a CPU profile of the broker in each mode
// (full-fetches.cpu, sessions.cpu).
//
//	go test ./cmd/kaas -run '^$' -bench BenchmarkFetchSessions -benchtime 1x -count 3
func BenchmarkFetchSessions(b *testing.B) {
	const topic, partitions, rate = "sessions", 1000, 200
	window := 10 * time.Second
	if s, err := strconv.Atoi(os.Getenv("KAAS_FETCH_SESSION_BENCH_SECONDS")); err == nil && s > 0 {
		window = time.Duration(s) * time.Second
	}
	profile := os.Getenv("KAAS_FETCH_SESSION_BENCH_PROFILE") // a directory: a broker CPU profile of each mode's window
	var args []string
	if profile != "" {
		args = append(args, "--debug-pprof")
	}
	k := startKaas(b, args...)
	adm := kadm.NewClient(newClient(b, k.Addr))
	if _, err := adm.CreateTopic(context.Background(), partitions, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	prod := newClient(b, k.Addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < partitions; p++ {
		prod.Produce(context.Background(), &kgo.Record{Partition: p, Value: []byte("first")}, nil)
	}
	if err := prod.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	modes := []struct {
		name string
		opts []kgo.Opt
	}{
		{"full-fetches", []kgo.Opt{kgo.DisableFetchSessions()}},
		{"sessions", nil},
	}
	type total struct {
		fetches, sent, received int64
		cpu                     time.Duration
		elapsed                 time.Duration
	}
	totals := make([]total, len(modes))
	for i := 0; i < b.N; i++ {
		for m, mode := range modes {
			counter := &fetchCounter{}
			opts := append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(counter)}, mode.opts...)
			cons := newClient(b, k.Addr, opts...)
			// Catch up on the first records before measuring the steady state.
			for got := 0; got < partitions; {
				fs := cons.PollFetches(ctxT(b, time.Minute))
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				got += fs.NumRecords()
			}
			stop := make(chan struct{})
			produced := make(chan struct{})
			go func() {
				defer close(produced)
				tick := time.NewTicker(time.Second / rate)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						prod.Produce(context.Background(), &kgo.Record{Partition: rand.Int32N(partitions), Value: []byte("x")}, nil)
					}
				}
			}()
			f0, s0, r0 := counter.fetches.Load(), counter.sent.Load(), counter.received.Load()
			c0, _ := procCPU(k.cmd.Process.Pid)
			start := time.Now()
			profiled := make(chan struct{})
			go func() {
				defer close(profiled)
				if profile != "" {
					saveProfile(b, "http://"+k.HTTPAddr+"/debug/pprof/profile?seconds="+strconv.Itoa(int(window.Seconds())-1),
						filepath.Join(profile, mode.name+".cpu"))
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), window)
			for ctx.Err() == nil {
				fs := cons.PollFetches(ctx)
				if err := fs.Err0(); err != nil && ctx.Err() == nil {
					b.Fatal(err)
				}
			}
			cancel()
			c1, _ := procCPU(k.cmd.Process.Pid)
			<-profiled
			t := &totals[m]
			t.elapsed += time.Since(start)
			t.cpu += time.Duration(c1-c0) * jiffy
			t.fetches += counter.fetches.Load() - f0
			t.sent += counter.sent.Load() - s0
			t.received += counter.received.Load() - r0
			close(stop)
			<-produced
			cons.Close()
		}
	}
	for m, mode := range modes {
		t := totals[m]
		if t.fetches == 0 {
			b.Fatalf("%s: no fetches measured", mode.name)
		}
		n := float64(t.fetches)
		b.Logf("%s: %d fetches in %v, broker CPU %v (%.1f%% of a core): %.0f µs CPU, %.0f B response, %.0f B request per fetch",
			mode.name, t.fetches, t.elapsed.Round(time.Millisecond), t.cpu, 100*t.cpu.Seconds()/t.elapsed.Seconds(),
			float64(t.cpu.Microseconds())/n, float64(t.received)/n, float64(t.sent)/n)
		b.ReportMetric(float64(t.cpu.Microseconds())/n, mode.name+"-cpu-µs/fetch")
		b.ReportMetric(float64(t.received)/n, mode.name+"-resp-B/fetch")
		b.ReportMetric(float64(t.sent)/n, mode.name+"-req-B/fetch")
		b.ReportMetric(100*t.cpu.Seconds()/t.elapsed.Seconds(), mode.name+"-broker-cpu-%")
	}
}

// saveProfile writes what url answers to path.
func saveProfile(b *testing.B, url, path string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Error(err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Error(err)
	}
}
