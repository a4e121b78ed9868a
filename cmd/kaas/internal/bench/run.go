package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Run runs cfg against its cluster until the count or duration is reached
// or ctx ends, and reports what it measured. Records that fail are counted
// in the result, not returned as an error; the error is for runs that
// could not start (bad config, cluster unreachable, topic not creatable).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = time.Second
	}
	if cfg.DrainWait <= 0 {
		cfg.DrainWait = 10 * time.Second
	}
	r := &run{cfg: cfg, res: &Result{
		Mode: cfg.Mode, Topic: cfg.Topic, RecordSize: cfg.RecordSize, TargetRate: cfg.Rate,
	}}
	if cfg.Mode != ModeConsume {
		r.res.Acks, r.res.Idempotent, r.res.Compression = cfg.Acks, cfg.Idempotent, cfg.Compression
		if r.res.Compression == "" {
			r.res.Compression = "none"
		}
	}
	if err := r.ensureTopic(ctx); err != nil {
		return nil, err
	}
	var err error
	switch cfg.Mode {
	case ModeProduce:
		err = r.produceOnly(ctx)
	case ModeConsume:
		err = r.consumeOnly(ctx)
	case ModeE2E:
		err = r.endToEnd(ctx)
	}
	if err != nil {
		return nil, err
	}
	return r.res, nil
}

// run is one run's shared state: counters the producer, consumer and
// progress goroutines update.
type run struct {
	cfg Config
	res *Result

	sent, acked, failed, ackedBytes atomic.Int64
	consumed, consumedBytes         atomic.Int64

	mu       sync.Mutex
	ack, e2e Histogram
	firstErr error
}

func (r *run) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(r.cfg.Brokers...), kgo.RetryTimeout(30 * time.Second)}, extra...)
}

// ensureTopic creates the topic with cfg.Partitions unless it exists.
func (r *run) ensureTopic(ctx context.Context) error {
	cl, err := kgo.NewClient(r.clientOpts()...)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(cctx, r.cfg.Partitions, 1, nil, r.cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", r.cfg.Topic, err)
	}
	return nil
}

func (r *run) noteErr(err error) {
	r.mu.Lock()
	if r.firstErr == nil {
		r.firstErr = err
	}
	r.mu.Unlock()
}

// progress prints a line every interval until stop is closed; counted
// reads the running totals the line reports, lat the histogram whose p99
// it shows (nil: none).
func (r *run) progress(start time.Time, stop <-chan struct{}, counted func() (int64, int64), lat *Histogram) {
	if r.cfg.Progress == nil {
		return
	}
	t := time.NewTicker(r.cfg.ProgressInterval)
	defer t.Stop()
	prev := Counters{At: start}
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			recs, bytes := counted()
			cur := Counters{At: now, Records: recs, Bytes: bytes}
			var p99 time.Duration
			if lat != nil {
				r.mu.Lock()
				p99 = lat.Quantile(0.99)
				r.mu.Unlock()
			}
			fmt.Fprintln(r.cfg.Progress, ProgressLine(start, prev, cur, p99, lat != nil))
			prev = cur
		}
	}
}

func (r *run) producer() (*kgo.Client, error) {
	acks, _ := acksOpt(r.cfg.Acks)
	codec, _ := compressionOpt(r.cfg.Compression)
	opts := r.clientOpts(
		kgo.DefaultProduceTopic(r.cfg.Topic),
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(r.cfg.Linger),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.MaxBufferedRecords(64<<10),
	)
	if !r.cfg.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	return cl, nil
}

// produce sends records until the count or duration is reached or ctx
// ends, then flushes; it returns when every record is acknowledged or
// failed. stamp writes the run id and produce time into every value (e2e).
func (r *run) produce(ctx context.Context, cl *kgo.Client, start time.Time, stamp bool, runID uint64) {
	template := make([]byte, r.cfg.RecordSize)
	rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), runID))
	for i := range template {
		template[i] = byte(rng.Uint32())
	}
	var deadline time.Time
	if r.cfg.Duration > 0 {
		deadline = start.Add(r.cfg.Duration)
	}
	pacer := Pacer{Start: start, Rate: r.cfg.Rate}
	for n := int64(0); r.cfg.Count == 0 || n < r.cfg.Count; n++ {
		over := func(now time.Time) bool {
			return !deadline.IsZero() && !now.Before(deadline) || ctx.Err() != nil
		}
		now := time.Now()
		if over(now) {
			break
		}
		if w := pacer.Wait(n, now); w > 0 {
			select {
			case <-time.After(w):
			case <-ctx.Done():
			}
			if over(time.Now()) {
				break
			}
		}
		value := template
		sentAt := time.Now()
		if stamp {
			value = append([]byte(nil), template...)
			binary.BigEndian.PutUint64(value[0:8], runID)
			binary.BigEndian.PutUint64(value[8:16], uint64(sentAt.UnixNano()))
		}
		r.sent.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(rec *kgo.Record, err error) {
			lat := time.Since(sentAt)
			if err != nil {
				r.failed.Add(1)
				r.noteErr(err)
				return
			}
			r.mu.Lock()
			r.ack.Record(lat)
			r.mu.Unlock()
			r.acked.Add(1)
			r.ackedBytes.Add(int64(len(rec.Value)))
		})
	}
	if err := cl.Flush(ctx); err != nil {
		r.noteErr(fmt.Errorf("flush: %w", err))
	}
}

func (r *run) fillProducer() {
	r.res.Sent, r.res.Acked, r.res.Failed = r.sent.Load(), r.acked.Load(), r.failed.Load()
	if r.firstErr != nil {
		r.res.FirstError = r.firstErr.Error()
	}
}

func (r *run) produceOnly(ctx context.Context) error {
	cl, err := r.producer()
	if err != nil {
		return err
	}
	defer cl.Close()
	start := time.Now()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.progress(start, stop, func() (int64, int64) { return r.acked.Load(), r.ackedBytes.Load() }, &r.ack)
	}()
	r.produce(ctx, cl, start, false, 0)
	elapsed := time.Since(start)
	close(stop)
	<-done
	r.fillProducer()
	r.res.Records, r.res.Bytes = r.res.Acked, r.ackedBytes.Load()
	r.res.Latency, r.res.latency = Summarize(&r.ack), &r.ack
	r.res.finish(elapsed)
	return nil
}

func (r *run) consumeOnly(ctx context.Context) error {
	cl, err := kgo.NewClient(r.clientOpts(kgo.ConsumeTopics(r.cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(32<<20))...)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	defer cl.Close()
	start := time.Now()
	if r.cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(r.cfg.Duration))
		defer cancel()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.progress(start, stop, func() (int64, int64) { return r.consumed.Load(), r.consumedBytes.Load() }, nil)
	}()
	for r.cfg.Count == 0 || r.consumed.Load() < r.cfg.Count {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(_ string, _ int32, err error) { r.noteErr(err) })
		fs.EachRecord(func(rec *kgo.Record) {
			if r.cfg.Count > 0 && r.consumed.Load() >= r.cfg.Count {
				return // the last fetch may overshoot the count
			}
			r.consumed.Add(1)
			r.consumedBytes.Add(int64(len(rec.Value)))
		})
	}
	elapsed := time.Since(start)
	close(stop)
	<-done
	if r.firstErr != nil {
		r.res.FirstError = r.firstErr.Error()
	}
	r.res.Consumed = r.consumed.Load()
	r.res.Records, r.res.Bytes = r.res.Consumed, r.consumedBytes.Load()
	r.res.finish(elapsed)
	return nil
}

// endToEnd produces stamped records while a consumer reads the topic from
// its end offsets before the first record; each record of this run read
// adds its age (read time minus the stamped produce time) to the e2e
// histogram. Producer and consumer share the host's clock, so the ages are
// exact up to clock reads.
func (r *run) endToEnd(ctx context.Context) error {
	admCl, err := kgo.NewClient(r.clientOpts()...)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	// A topic created a moment ago may not have leaders everywhere yet:
	// retry retriable errors for a while.
	var ends kadm.ListedOffsets
	for retryUntil := time.Now().Add(10 * time.Second); ; {
		ends, err = kadm.NewClient(admCl).ListEndOffsets(ctx, r.cfg.Topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(retryUntil) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	admCl.Close()
	if err != nil {
		return fmt.Errorf("end offsets of %s: %w", r.cfg.Topic, err)
	}
	from := map[string]map[int32]kgo.Offset{r.cfg.Topic: {}}
	ends.Each(func(o kadm.ListedOffset) { from[o.Topic][o.Partition] = kgo.NewOffset().At(o.Offset) })
	cons, err := kgo.NewClient(r.clientOpts(kgo.ConsumePartitions(from), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	defer cons.Close()
	prod, err := r.producer()
	if err != nil {
		return err
	}
	defer prod.Close()

	runID := rand.Uint64()
	consCtx, stopConsumer := context.WithCancel(ctx)
	defer stopConsumer()
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for consCtx.Err() == nil {
			fs := cons.PollFetches(consCtx)
			now := time.Now()
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					r.noteErr(err)
				}
			})
			fs.EachRecord(func(rec *kgo.Record) {
				if len(rec.Value) < e2eHeader || binary.BigEndian.Uint64(rec.Value[0:8]) != runID {
					return
				}
				sentAt := time.Unix(0, int64(binary.BigEndian.Uint64(rec.Value[8:16])))
				r.mu.Lock()
				r.e2e.Record(now.Sub(sentAt))
				r.mu.Unlock()
				r.consumed.Add(1)
				r.consumedBytes.Add(int64(len(rec.Value)))
			})
		}
	}()

	start := time.Now()
	stop := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		r.progress(start, stop, func() (int64, int64) { return r.consumed.Load(), r.consumedBytes.Load() }, &r.e2e)
	}()
	r.produce(ctx, prod, start, true, runID)
	// Every acknowledged record should arrive; wait for them a bounded time.
	drainUntil := time.Now().Add(r.cfg.DrainWait)
	for r.consumed.Load() < r.acked.Load() && time.Now().Before(drainUntil) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	stopConsumer()
	<-consumerDone
	close(stop)
	<-progressDone
	r.fillProducer()
	r.res.Consumed = r.consumed.Load()
	r.res.Records, r.res.Bytes = r.res.Consumed, r.consumedBytes.Load()
	r.res.Latency, r.res.latency = Summarize(&r.e2e), &r.e2e
	r.res.AckLatency = Summarize(&r.ack)
	r.res.finish(elapsed)
	return nil
}
