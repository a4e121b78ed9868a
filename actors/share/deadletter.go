package share

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/interbroker"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
)

// Dead-letter queues for share groups (KIP-1191): a record a consumer
// rejects, or one that reaches the delivery count limit, is written to the
// group's dead-letter topic before it is archived. The write goes through
// the Kafka API as the inter-broker user, as Kafka's broker sends it: a
// Produce to the leader of the dead-letter partition, a Fetch of the
// records to copy from this broker (their partition's leader), and a
// CreateTopics when the topic is missing and may be created.

// The headers of a dead-letter record, Kafka's: where the record came from
// and why it is here.
const (
	headerTopic         = "__dlq.errors.topic"
	headerPartition     = "__dlq.errors.partition"
	headerOffset        = "__dlq.errors.offset"
	headerGroup         = "__dlq.errors.group"
	headerDeliveryCount = "__dlq.errors.delivery.count"
	headerMessage       = "__dlq.errors.message"
)

// The causes in headerMessage: Kafka's texts.
const (
	causeRejected = "Offset rejected by client."
	causeLimit    = "Offset delivery count exceeded the threshold."
)

// topicEnable is the topic config that lets a topic be a dead-letter topic.
const topicEnable = "errors.deadletterqueue.group.enable"

// DeadLetterSettings are the cluster's dead-letter settings in force.
type DeadLetterSettings struct {
	// TopicPrefix is errors.deadletterqueue.topic.name.prefix: what a
	// dead-letter topic's name must start with ("" for any name).
	TopicPrefix string
	// AutoCreate is errors.deadletterqueue.auto.create.topics.enable.
	AutoCreate bool
	// MaxMessageBytes is the broker's max.message.bytes default, the
	// bound of one dead-letter batch for a topic that does not set it.
	MaxMessageBytes int
}

// DeadLetterWriter writes runs of records to their group's dead-letter
// topic.
type DeadLetterWriter struct {
	Peers *interbroker.Clients
	Views *routing.Store
	Clock clock.Clock
	Log   zerolog.Logger
	// Settings returns the settings in force (read for every write, as
	// Kafka checks them when a write starts).
	Settings func() DeadLetterSettings
	// Attempts bounds the tries of each request (0: Kafka's 5), Backoff
	// the wait after the first failure, doubling up to 30 s (0: 1 s).
	Attempts int
	Backoff  time.Duration
}

// deadLetterJob is one run of one share-partition to write.
type deadLetterJob struct {
	group     string
	topic     string
	topicID   [16]byte
	partition int32
	letter    DeadLetter
	// cfg is the share-partition's settings: its dead-letter topic and
	// whether records are copied.
	cfg Config
}

// ConfigError is a dead-letter topic that cannot take the write: Kafka's
// checks, with its messages.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// checkTopic applies Kafka's checks of a group's dead-letter topic, in
// Kafka's order, and reports whether the topic exists.
func checkTopic(v *routing.View, group, topic string, s DeadLetterSettings) (exists bool, err error) {
	if topic == "" {
		return false, &ConfigError{fmt.Sprintf("Configured DLQ topic name in share group: %s is empty.", group)}
	}
	if strings.HasPrefix(topic, "__") {
		return false, &ConfigError{fmt.Sprintf("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", group, topic)}
	}
	t, exists := v.Topics[topic]
	if exists && !strings.EqualFold(t.Config[topicEnable], "true") {
		return true, &ConfigError{fmt.Sprintf("DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s", group, topic)}
	}
	if s.TopicPrefix != "" && !strings.HasPrefix(topic, s.TopicPrefix) {
		return exists, &ConfigError{fmt.Sprintf("Configured DLQ topic name does not comply with the DLQ topic prefix in share group: %s, topic: %s, prefix: %s", group, topic, s.TopicPrefix)}
	}
	if !exists && !s.AutoCreate {
		return false, &ConfigError{fmt.Sprintf("DLQ topic does not exist and auto create is disabled on cluster for share group: %s, topic: %s.", group, topic)}
	}
	return exists, nil
}

// write writes job's records to the dead-letter topic and returns how
// many it wrote; an error says why the rest were not.
func (w *DeadLetterWriter) write(ctx context.Context, job deadLetterJob) (int, error) {
	s := w.Settings()
	exists, err := checkTopic(w.Views.Load(), job.group, job.cfg.DeadLetterTopic, s)
	if err != nil {
		return 0, err
	}
	if !exists {
		if err := w.createTopic(ctx, job.cfg.DeadLetterTopic); err != nil {
			return 0, err
		}
	}
	copying := job.cfg.CopyRecord
	written := 0
	for next := job.letter.First; next <= job.letter.Last; {
		// Copied records are read a fetch (at most 1 MiB) at a time,
		// then written, so a long run never sits in memory whole.
		upTo, copied := job.letter.Last, map[int64]compaction.Record(nil)
		if copying {
			var readTo int64
			if copied, readTo, err = w.readRecords(ctx, job, next); err != nil {
				// The rest is written without keys and values, as
				// Kafka writes a record it could not read.
				copying = false
				w.Log.Warn().Err(err).Str("group", job.group).Str("topic", job.topic).Int32("partition", job.partition).
					Int64("offset", next).Msg("dead-letter records written without the records' keys and values: reading them failed")
			} else {
				upTo = min(upTo, readTo)
			}
		}
		v := w.Views.Load()
		t, ok := v.Topics[job.cfg.DeadLetterTopic]
		if !ok || len(t.Partitions) == 0 {
			return written, fmt.Errorf("dead-letter topic %s is gone", job.cfg.DeadLetterTopic)
		}
		maxBytes := s.MaxMessageBytes
		if n, err := strconv.Atoi(t.Config["max.message.bytes"]); err == nil {
			maxBytes = n
		}
		b, last := w.buildBatch(job, next, upTo, maxBytes, copied)
		part := job.partition % int32(len(t.Partitions))
		if err := w.produce(ctx, t.Name, part, b); err != nil {
			return written, err
		}
		written += int(last - next + 1)
		next = last + 1
	}
	return written, nil
}

// buildBatch builds the batch of the records from first to at most upTo
// that fits in maxBytes (at least one record), and returns the last offset
// in it.
func (w *DeadLetterWriter) buildBatch(job deadLetterJob, first, upTo int64, maxBytes int, copied map[int64]compaction.Record) ([]byte, int64) {
	cause := causeLimit
	if job.letter.Rejected {
		cause = causeRejected
	}
	spec := batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: w.Clock.Now().UnixMilli(), SameTimestamp: true}
	size := batch.HeaderSize
	last := first - 1
	for o := first; o <= upTo; o++ {
		var key, value []byte
		if r, ok := copied[o]; ok {
			if !r.NullKey {
				key = r.Key
			}
			if !r.Tombstone {
				value = r.Value
			}
		}
		hs := []kmsg.Header{
			{Key: headerTopic, Value: []byte(job.topic)},
			{Key: headerPartition, Value: []byte(strconv.Itoa(int(job.partition)))},
			{Key: headerOffset, Value: []byte(strconv.FormatInt(o, 10))},
			{Key: headerGroup, Value: []byte(job.group)},
			{Key: headerDeliveryCount, Value: []byte(strconv.Itoa(int(job.letter.DeliveryCount)))},
			{Key: headerMessage, Value: []byte(cause)},
		}
		n := 24 + len(key) + len(value) // a record's own fields and varints, at most
		for _, h := range hs {
			n += 10 + len(h.Key) + len(h.Value)
		}
		if size+n > maxBytes && last >= first {
			break
		}
		size += n
		spec.Keys = append(spec.Keys, key)
		spec.Values = append(spec.Values, value)
		spec.Headers = append(spec.Headers, hs)
		last = o
	}
	return batch.Build(spec), last
}

// produce writes b to partition part of t, acks=all, retrying what a
// leader may answer while it moves.
func (w *DeadLetterWriter) produce(ctx context.Context, name string, part int32, b []byte) error {
	return w.retry(ctx, func(v *routing.View) (bool, error) {
		t, ok := v.Topics[name]
		if !ok || int(part) >= len(t.Partitions) {
			return false, fmt.Errorf("dead-letter partition %s-%d is gone", name, part)
		}
		leader, ok := v.Broker(t.Partitions[part].Leader)
		if !ok {
			return true, fmt.Errorf("dead-letter partition %s-%d has no leader", name, part)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = t.Name, t.ID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = part, b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kr, err := w.Peers.Do(ctx, leader, req)
		if err != nil {
			return true, err
		}
		for _, rt := range kr.(*kmsg.ProduceResponse).Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return kerr.IsRetriable(err), fmt.Errorf("produce to dead-letter partition %s-%d: %w", t.Name, part, err)
				}
			}
		}
		return false, nil
	})
}

// createTopic creates the dead-letter topic, as Kafka's broker does:
// default partitions and replication, the topic config that makes it a
// dead-letter topic and CreateTime timestamps (every dead-letter record
// carries the time of its write). It returns once this broker's view has
// the topic led.
func (w *DeadLetterWriter) createTopic(ctx context.Context, name string) error {
	err := w.retry(ctx, func(v *routing.View) (bool, error) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10_000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		for _, c := range [][2]string{{topicEnable, "true"}, {"message.timestamp.type", "CreateTime"}} {
			rc := kmsg.NewCreateTopicsRequestTopicConfig()
			rc.Name, rc.Value = c[0], kmsg.StringPtr(c[1])
			rt.Configs = append(rt.Configs, rc)
		}
		req.Topics = append(req.Topics, rt)
		kr, err := w.Peers.Do(ctx, v.SelfBroker(), req)
		if err != nil {
			return true, err
		}
		for _, t := range kr.(*kmsg.CreateTopicsResponse).Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				return kerr.IsRetriable(err), fmt.Errorf("create dead-letter topic %s: %w", name, err)
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	return w.retry(ctx, func(v *routing.View) (bool, error) {
		t, ok := v.Topics[name]
		if !ok || len(t.Partitions) == 0 {
			return true, fmt.Errorf("created dead-letter topic %s is not known here yet", name)
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				return true, fmt.Errorf("created dead-letter topic %s has a partition without a leader", name)
			}
		}
		return false, nil
	})
}

// readRecords reads, with one fetch from this broker (their partition's
// leader), the records of job's run from offset from on, and returns them
// by offset with the last offset the fetch covered (at least from).
func (w *DeadLetterWriter) readRecords(ctx context.Context, job deadLetterJob, from int64) (map[int64]compaction.Record, int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = job.topic, job.topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = job.partition, from, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := w.Peers.Do(ctx, w.Views.Load().SelfBroker(), req)
	if err != nil {
		return nil, 0, err
	}
	resp := kr.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, 0, fmt.Errorf("fetch %s-%d: %w", job.topic, job.partition, err)
	}
	out, covered := map[int64]compaction.Record{}, from-1
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, 0, fmt.Errorf("fetch %s-%d at %d: %w", job.topic, job.partition, from, err)
			}
			batches, _, err := batch.Split(p.RecordBatches)
			if err != nil {
				return nil, 0, fmt.Errorf("fetch %s-%d at %d: %w", job.topic, job.partition, from, err)
			}
			for _, b := range batches {
				h, err := batch.ParseHeader(b)
				if err != nil {
					return nil, 0, err
				}
				covered = max(covered, h.LastOffset())
				if h.IsControl() {
					continue
				}
				recs, err := compaction.Records(b, h)
				if err != nil {
					return nil, 0, err
				}
				for _, r := range recs {
					if r.Offset >= from && r.Offset <= job.letter.Last {
						out[r.Offset] = r
					}
				}
			}
		}
	}
	if covered < from {
		return nil, 0, fmt.Errorf("fetch %s-%d at %d: no records", job.topic, job.partition, from)
	}
	return out, covered, nil
}

// retry runs try against the current view until it succeeds, fails for
// good, or has been tried Attempts times, waiting between tries.
func (w *DeadLetterWriter) retry(ctx context.Context, try func(*routing.View) (retriable bool, err error)) error {
	attempts := w.Attempts
	if attempts <= 0 {
		attempts = 5
	}
	wait := w.Backoff
	if wait <= 0 {
		wait = time.Second
	}
	var err error
	for i := range attempts {
		var again bool
		if again, err = try(w.Views.Load()); err == nil || !again {
			return err
		}
		if i == attempts-1 {
			break
		}
		done := make(chan struct{})
		t := w.Clock.AfterFunc(wait, func() { close(done) })
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (then %w)", err, ctx.Err())
		case <-done:
		}
		wait = min(2*wait, 30*time.Second)
	}
	return err
}
