// Command confluentgo drives librdkafka (the static build confluent-kafka-go
// bundles) against a broker for cmd/kaas's TestExternalLibrdkafka* tests:
//
//	confluentgo <scenario> <bootstrap> [args]
//
// Each scenario prints one JSON object on stdout, which the test decodes and
// checks; librdkafka's own log goes to stderr (set CONFLUENTGO_DEBUG to a
// librdkafka debug context list, e.g. protocol, to see every request). A
// scenario that cannot finish reports what it got with "error" set rather
// than hanging: the test then fails on that.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: confluentgo <consumer848|txn|admin|telemetry|version> <bootstrap> [args]")
		os.Exit(2)
	}
	scenario, bootstrap, args := os.Args[1], os.Args[2], os.Args[3:]
	out := map[string]any{}
	_, version := kafka.LibraryVersion()
	out["librdkafka"] = version
	// Every scenario ends by its own deadline, well inside the test's.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var err error
	switch scenario {
	case "version":
	case "consumer848":
		err = consumer848(ctx, bootstrap, args, out)
	case "txn":
		err = txn(ctx, bootstrap, args, out)
	case "admin":
		err = admin(ctx, bootstrap, args, out)
	case "telemetry":
		err = telemetry(ctx, bootstrap, args, out)
	default:
		err = fmt.Errorf("unknown scenario %q", scenario)
	}
	if err != nil {
		out["error"] = err.Error()
	}
	b, merr := json.Marshal(out)
	if merr != nil {
		fmt.Fprintln(os.Stderr, merr)
		os.Exit(1)
	}
	fmt.Println(string(b))
}

// conf is a librdkafka configuration for bootstrap with extra settings.
func conf(bootstrap string, kv ...any) *kafka.ConfigMap {
	c := &kafka.ConfigMap{"bootstrap.servers": bootstrap, "broker.address.family": "v4"}
	if d := os.Getenv("CONFLUENTGO_DEBUG"); d != "" {
		(*c)["debug"] = d
	}
	for i := 0; i+1 < len(kv); i += 2 {
		(*c)[kv[i].(string)] = kv[i+1]
	}
	return c
}

// errJSON is a librdkafka error as the tests read it: its code's name
// (ErrorCode.String is the description, not the name) and whether it is
// fatal or retriable.
type errJSON struct {
	Code      int    `json:"code"`
	Text      string `json:"text"`
	Fatal     bool   `json:"fatal,omitempty"`
	Retriable bool   `json:"retriable,omitempty"`
}

func kerr(err error) *errJSON {
	if err == nil {
		return nil
	}
	if ke, ok := err.(kafka.Error); ok {
		if ke.Code() == kafka.ErrNoError {
			return nil
		}
		return &errJSON{Code: int(ke.Code()), Text: ke.String(), Fatal: ke.IsFatal(), Retriable: ke.IsRetriable()}
	}
	return &errJSON{Code: -1, Text: err.Error()}
}

func tpKey(tp kafka.TopicPartition) string {
	return fmt.Sprintf("%s/%d", *tp.Topic, tp.Partition)
}

func tpKeys(tps []kafka.TopicPartition) []string {
	s := []string{}
	for _, tp := range tps {
		s = append(s, tpKey(tp))
	}
	sort.Strings(s)
	return s
}

// produceAll sends msgs with p and waits for every delivery report,
// returning them as "topic/partition/offset/key/value".
func produceAll(ctx context.Context, p *kafka.Producer, msgs []*kafka.Message) ([]string, error) {
	ch := make(chan kafka.Event, len(msgs))
	for _, m := range msgs {
		if err := p.Produce(m, ch); err != nil {
			return nil, fmt.Errorf("produce: %w", err)
		}
	}
	var got []string
	for range msgs {
		select {
		case e := <-ch:
			m := e.(*kafka.Message)
			if m.TopicPartition.Error != nil {
				return got, fmt.Errorf("delivery of %s: %w", m.Value, m.TopicPartition.Error)
			}
			got = append(got, fmt.Sprintf("%s/%d/%d/%s/%s", *m.TopicPartition.Topic, m.TopicPartition.Partition, m.TopicPartition.Offset, m.Key, m.Value))
		case <-ctx.Done():
			return got, fmt.Errorf("waiting for delivery reports: %w", ctx.Err())
		}
	}
	return got, nil
}

// member is a consumer polling on its own goroutine; each record it reads
// is committed synchronously before the next poll, so a partition that
// moves is read on from the last record processed.
type member struct {
	name string
	c    *kafka.Consumer

	mu      sync.Mutex
	records []string
	errs    []string
	assign  []string

	stop chan struct{}
	done chan struct{}
}

func startMember(name string, cfg *kafka.ConfigMap, topics []string) (*member, error) {
	c, err := kafka.NewConsumer(cfg)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", name, err)
	}
	if err := c.SubscribeTopics(topics, nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("subscribe %s: %w", name, err)
	}
	m := &member{name: name, c: c, stop: make(chan struct{}), done: make(chan struct{})}
	go m.run()
	return m, nil
}

func (m *member) run() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		ev := m.c.Poll(50)
		switch e := ev.(type) {
		case *kafka.Message:
			if e.TopicPartition.Error != nil {
				m.addErr(fmt.Sprintf("message error: %v", e.TopicPartition.Error))
				continue
			}
			rec := fmt.Sprintf("%s/%d/%d/%s/%s", *e.TopicPartition.Topic, e.TopicPartition.Partition, e.TopicPartition.Offset, e.Key, e.Value)
			if _, err := m.c.CommitMessage(e); err != nil {
				m.addErr(fmt.Sprintf("commit %s: %v", rec, err))
			}
			m.mu.Lock()
			m.records = append(m.records, rec)
			m.mu.Unlock()
		case kafka.Error:
			m.addErr(e.Error())
		}
		if a, err := m.c.Assignment(); err == nil {
			m.mu.Lock()
			m.assign = tpKeys(a)
			m.mu.Unlock()
		}
	}
}

func (m *member) addErr(s string) {
	m.mu.Lock()
	m.errs = append(m.errs, s)
	m.mu.Unlock()
}

func (m *member) snapshot() (records, assign, errs []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string{}, m.records...), append([]string{}, m.assign...), append([]string{}, m.errs...)
}

// halt stops polling (the consumer stays in its group until close).
func (m *member) halt() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

func (m *member) close() error {
	m.halt()
	return m.c.Close()
}

// waitFor polls cond every 50 ms until it holds or ctx ends.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// records is n keyed records for topic, values prefix-i, keys key-(i%keys).
func records(topic, prefix string, from, n, keys int) []*kafka.Message {
	var ms []*kafka.Message
	for i := from; i < from+n; i++ {
		ms = append(ms, &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
			Key:            []byte(fmt.Sprintf("key-%d", i%keys)),
			Value:          []byte(fmt.Sprintf("%s-%d", prefix, i)),
		})
	}
	return ms
}

// consumer848 <bootstrap> <topic> <group> <n> <regexPrefix> <regexGroup> <lateTopic>:
// topic (6 partitions), regexPrefix+"a" (2) and regexPrefix+"b" (1) are
// created unless they exist; three KIP-848 consumers (group.protocol=consumer) of group share topic;
// two idempotent acks=all producers (lz4, zstd) send n records, half
// before the third consumer leaves and half after; the group is described
// with the AdminClient while the two others are still in it. Meanwhile a
// consumer of regexGroup subscribed to ^regexPrefix.* reads the matching
// topics, including lateTopic, which this scenario creates once that
// consumer has its first assignment.
func consumer848(ctx context.Context, bootstrap string, args []string, out map[string]any) error {
	if len(args) != 6 {
		return fmt.Errorf("consumer848 wants <topic> <group> <n> <regexPrefix> <regexGroup> <lateTopic>, got %q", args)
	}
	topic, group, regexPrefix, regexGroup, lateTopic := args[0], args[1], args[3], args[4], args[5]
	var n int
	if _, err := fmt.Sscan(args[2], &n); err != nil {
		return fmt.Errorf("n %q: %w", args[2], err)
	}
	memberCfg := func(name, group string) *kafka.ConfigMap {
		return conf(bootstrap, "group.id", group, "group.protocol", "consumer", "client.id", name,
			"enable.auto.commit", false, "auto.offset.reset", "earliest")
	}
	// The topics, unless the caller made them (TOPIC_ALREADY_EXISTS).
	adm, err := kafka.NewAdminClient(conf(bootstrap))
	if err != nil {
		return err
	}
	defer adm.Close()
	specs := []kafka.TopicSpecification{{Topic: topic, NumPartitions: 6, ReplicationFactor: 1},
		{Topic: regexPrefix + "a", NumPartitions: 2, ReplicationFactor: 1}, {Topic: regexPrefix + "b", NumPartitions: 1, ReplicationFactor: 1}}
	created, err := adm.CreateTopics(ctx, specs)
	if err != nil {
		return fmt.Errorf("CreateTopics: %w", err)
	}
	for _, r := range created {
		if c := r.Error.Code(); c != kafka.ErrNoError && c != kafka.ErrTopicAlreadyExists {
			return fmt.Errorf("create %s: %w", r.Topic, r.Error)
		}
	}
	regex := "^" + strings.ReplaceAll(regexPrefix, ".", "\\.") + ".*"
	out["regex"] = regex
	re, err := startMember("re-1", memberCfg("re-1", regexGroup), []string{regex})
	if err != nil {
		return err
	}
	defer re.close()

	var members []*member
	defer func() {
		for _, m := range members {
			if !m.c.IsClosed() {
				m.close()
			}
		}
	}()
	for _, name := range []string{"c-1", "c-2", "c-3"} {
		m, err := startMember(name, memberCfg(name, group), []string{topic})
		if err != nil {
			return err
		}
		members = append(members, m)
	}
	report := func(key string, ms []*member) {
		recs, assigns, errs := map[string][]string{}, map[string][]string{}, map[string][]string{}
		for _, m := range ms {
			r, a, e := m.snapshot()
			recs[m.name], assigns[m.name], errs[m.name] = r, a, e
		}
		out[key] = map[string]any{"records": recs, "assignments": assigns, "errors": errs}
	}
	total := func(ms []*member) int {
		t := 0
		for _, m := range ms {
			r, _, _ := m.snapshot()
			t += len(r)
		}
		return t
	}
	// allAssigned: each of ms owns partitions, together each partition once
	// (a member's view lags its last poll, so one moved may show twice).
	allAssigned := func(ms []*member, partitions int) func() bool {
		return func() bool {
			seen := map[string]int{}
			for _, m := range ms {
				_, a, _ := m.snapshot()
				if len(a) == 0 {
					return false
				}
				for _, tp := range a {
					seen[tp]++
				}
			}
			for _, n := range seen {
				if n != 1 {
					return false
				}
			}
			return len(seen) == partitions
		}
	}
	md, err := members[0].c.GetMetadata(&topic, false, 10000)
	if err != nil {
		return fmt.Errorf("metadata of %s: %w", topic, err)
	}
	partitions := len(md.Topics[topic].Partitions)
	out["partitions"] = partitions
	if err := waitFor(ctx, "three members assigned", allAssigned(members, partitions)); err != nil {
		report("phase1", members)
		return err
	}

	lz4, err := kafka.NewProducer(conf(bootstrap, "enable.idempotence", true, "acks", "all", "compression.codec", "lz4", "linger.ms", 5))
	if err != nil {
		return err
	}
	defer lz4.Close()
	zstd, err := kafka.NewProducer(conf(bootstrap, "enable.idempotence", true, "acks", "all", "compression.codec", "zstd", "linger.ms", 5))
	if err != nil {
		return err
	}
	defer zstd.Close()
	var produced []string
	produce := func(from, count int) error {
		half := count / 2
		a, err := produceAll(ctx, lz4, records(topic, "lz4", from, half, 12))
		produced = append(produced, a...)
		if err != nil {
			return err
		}
		b, err := produceAll(ctx, zstd, records(topic, "zstd", from+half, count-half, 12))
		produced = append(produced, b...)
		return err
	}

	// Phase 1: half the records, read by the three members.
	if err := produce(0, n/2); err != nil {
		return err
	}
	if err := waitFor(ctx, "phase 1 records", func() bool { return total(members) >= n/2 }); err != nil {
		report("phase1", members)
		return err
	}
	report("phase1", members)

	// The third member leaves: its partitions move to the other two.
	if err := members[2].close(); err != nil {
		return fmt.Errorf("close c-3: %w", err)
	}
	stay := members[:2]
	if err := waitFor(ctx, "two members own every partition", allAssigned(stay, partitions)); err != nil {
		report("afterLeave", stay)
		return err
	}
	_, a0, _ := stay[0].snapshot()
	_, a1, _ := stay[1].snapshot()
	out["afterLeaveAssignments"] = map[string][]string{"c-1": a0, "c-2": a1}

	// Phase 2: the rest, read by the two left.
	before := total(stay)
	if err := produce(n/2, n-n/2); err != nil {
		return err
	}
	out["produced"] = produced
	if err := waitFor(ctx, "phase 2 records", func() bool { return total(stay) >= before+n-n/2 }); err != nil {
		report("final", members)
		return err
	}

	// Described by the AdminClient while c-1 and c-2 are in the group.
	desc, err := adm.DescribeConsumerGroups(ctx, []string{group}, kafka.SetAdminOptionIncludeAuthorizedOperations(true))
	if err != nil {
		return fmt.Errorf("DescribeConsumerGroups: %w", err)
	}
	out["described"] = groupsJSON(desc.ConsumerGroupDescriptions)

	// Committed offsets as c-1 fetches them for every partition.
	var all []kafka.TopicPartition
	for p := 0; p < partitions; p++ {
		all = append(all, kafka.TopicPartition{Topic: &topic, Partition: int32(p)})
	}
	committed, err := stay[0].c.Committed(all, 10000)
	if err != nil {
		return fmt.Errorf("committed: %w", err)
	}
	co := map[string]int64{}
	for _, tp := range committed {
		co[tpKey(tp)] = int64(tp.Offset)
	}
	out["committed"] = co

	// The regex member: every matching topic, then the late one.
	if err := waitFor(ctx, "regex member assigned", func() bool { _, a, _ := re.snapshot(); return len(a) > 0 }); err != nil {
		report("regexGroup", []*member{re})
		return err
	}
	_, reAssign, _ := re.snapshot()
	out["regexFirstAssignment"] = reAssign
	late := kafka.TopicSpecification{Topic: lateTopic, NumPartitions: 1, ReplicationFactor: 1}
	if res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{late}); err != nil || res[0].Error.Code() != kafka.ErrNoError {
		return fmt.Errorf("create %s: %v %v", lateTopic, err, res)
	}
	if _, err := produceAll(ctx, lz4, records(lateTopic, "late", 0, 1, 1)); err != nil {
		return err
	}
	err = waitFor(ctx, "the regex member reads "+lateTopic, func() bool {
		r, _, _ := re.snapshot()
		for _, s := range r {
			if strings.HasPrefix(s, lateTopic+"/") {
				return true
			}
		}
		return false
	})
	report("regexGroup", []*member{re})
	report("final", members)
	return err
}

type memberJSON struct {
	ClientID         string   `json:"clientId"`
	ConsumerID       string   `json:"consumerId"`
	Host             string   `json:"host"`
	Assignment       []string `json:"assignment"`
	TargetAssignment []string `json:"targetAssignment"`
}

type groupJSON struct {
	GroupID     string       `json:"groupId"`
	Error       *errJSON     `json:"error"`
	Simple      bool         `json:"simple"`
	Assignor    string       `json:"assignor"`
	State       string       `json:"state"`
	Type        string       `json:"type"`
	Coordinator int          `json:"coordinator"`
	Members     []memberJSON `json:"members"`
	Operations  []string     `json:"operations"`
}

func groupsJSON(ds []kafka.ConsumerGroupDescription) []groupJSON {
	var gs []groupJSON
	for _, d := range ds {
		g := groupJSON{GroupID: d.GroupID, Error: kerr(d.Error), Simple: d.IsSimpleConsumerGroup, Assignor: d.PartitionAssignor,
			State: d.State.String(), Type: d.Type.String(), Coordinator: d.Coordinator.ID, Members: []memberJSON{}}
		for _, m := range d.Members {
			mj := memberJSON{ClientID: m.ClientID, ConsumerID: m.ConsumerID, Host: m.Host, Assignment: tpKeys(m.Assignment.TopicPartitions)}
			if m.TargetAssignment != nil {
				mj.TargetAssignment = tpKeys(m.TargetAssignment.TopicPartitions)
			}
			g.Members = append(g.Members, mj)
		}
		sort.Slice(g.Members, func(i, j int) bool { return g.Members[i].ClientID < g.Members[j].ClientID })
		for _, op := range d.AuthorizedOperations {
			g.Operations = append(g.Operations, op.String())
		}
		sort.Strings(g.Operations)
		gs = append(gs, g)
	}
	return gs
}

// txn <bootstrap> <in> <out> <group> <txnID> <n>: a KIP-848 consumer
// (read_committed, no auto-commit) of group reads the n records of in; a
// transactional producer writes "out-<value>" for each, in one
// transaction per input partition, sending the offsets after them with the
// consumer's group metadata: partition 0's transaction is committed,
// partition 1's aborted. Then out is read back read_committed and
// read_uncommitted, and the group's offsets fetched.
func txn(ctx context.Context, bootstrap string, args []string, out map[string]any) error {
	if len(args) != 5 {
		return fmt.Errorf("txn wants <in> <out> <group> <txnID> <n>, got %q", args)
	}
	in, outTopic, group, txnID := args[0], args[1], args[2], args[3]
	var n int
	if _, err := fmt.Sscan(args[4], &n); err != nil {
		return fmt.Errorf("n %q: %w", args[4], err)
	}
	c, err := kafka.NewConsumer(conf(bootstrap, "group.id", group, "group.protocol", "consumer", "client.id", "txn-consumer",
		"enable.auto.commit", false, "auto.offset.reset", "earliest", "isolation.level", "read_committed"))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Subscribe(in, nil); err != nil {
		return err
	}
	byPartition := map[int32][]*kafka.Message{}
	var consumed []string
	for len(consumed) < n {
		if ctx.Err() != nil {
			out["consumed"] = consumed
			return fmt.Errorf("consumed %d of %d: %w", len(consumed), n, ctx.Err())
		}
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			byPartition[e.TopicPartition.Partition] = append(byPartition[e.TopicPartition.Partition], e)
			consumed = append(consumed, fmt.Sprintf("%d/%d/%s", e.TopicPartition.Partition, e.TopicPartition.Offset, e.Value))
		case kafka.Error:
			return fmt.Errorf("consumer: %w", e)
		}
	}
	sort.Strings(consumed)
	out["consumed"] = consumed

	p, err := kafka.NewProducer(conf(bootstrap, "transactional.id", txnID, "client.id", "txn-producer"))
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.InitTransactions(ctx); err != nil {
		return fmt.Errorf("InitTransactions: %w", err)
	}
	meta, err := c.GetConsumerGroupMetadata()
	if err != nil {
		return fmt.Errorf("GetConsumerGroupMetadata: %w", err)
	}
	sent := map[string]map[string]int64{}
	for _, part := range []int32{0, 1} {
		commit := part == 0
		if err := p.BeginTransaction(); err != nil {
			return fmt.Errorf("BeginTransaction: %w", err)
		}
		var ms []*kafka.Message
		var last kafka.Offset
		for _, m := range byPartition[part] {
			ms = append(ms, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &outTopic, Partition: part},
				Key: m.Key, Value: append([]byte("out-"), m.Value...)})
			last = m.TopicPartition.Offset
		}
		if _, err := produceAll(ctx, p, ms); err != nil {
			return err
		}
		offsets := []kafka.TopicPartition{{Topic: &in, Partition: part, Offset: last + 1}}
		if err := p.SendOffsetsToTransaction(ctx, offsets, meta); err != nil {
			return fmt.Errorf("SendOffsetsToTransaction: %w", err)
		}
		key := "aborted"
		if commit {
			key = "committed"
			err = p.CommitTransaction(ctx)
		} else {
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			return fmt.Errorf("end the %s transaction: %w", key, err)
		}
		sent[key] = map[string]int64{fmt.Sprintf("%s/%d", in, part): int64(last + 1)}
	}
	out["sent"] = sent

	tps := []kafka.TopicPartition{{Topic: &in, Partition: 0}, {Topic: &in, Partition: 1}}
	committed, err := c.Committed(tps, 10000)
	if err != nil {
		return fmt.Errorf("committed: %w", err)
	}
	co := map[string]int64{}
	for _, tp := range committed {
		co[tpKey(tp)] = int64(tp.Offset)
	}
	out["groupCommitted"] = co

	for _, iso := range []string{"read_committed", "read_uncommitted"} {
		got, err := readAll(ctx, bootstrap, outTopic, 2, iso)
		out[iso] = got
		if err != nil {
			return err
		}
	}
	return nil
}

// readAll reads topic's partitions to their end offsets (for isolation)
// with an assigned consumer, returning "partition/offset/value".
func readAll(ctx context.Context, bootstrap, topic string, partitions int, isolation string) ([]string, error) {
	c, err := kafka.NewConsumer(conf(bootstrap, "group.id", "confluentgo-reader", "enable.auto.commit", false,
		"isolation.level", isolation, "enable.partition.eof", true))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := 0; p < partitions; p++ {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: int32(p), Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		return nil, err
	}
	got := []string{}
	eof := map[int32]bool{}
	for len(eof) < partitions {
		if ctx.Err() != nil {
			return got, fmt.Errorf("reading %s %s: %w", topic, isolation, ctx.Err())
		}
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			got = append(got, fmt.Sprintf("%d/%d/%s", e.TopicPartition.Partition, e.TopicPartition.Offset, e.Value))
		case kafka.PartitionEOF:
			eof[e.Partition] = true
		case kafka.Error:
			return got, fmt.Errorf("reading %s: %w", topic, e)
		}
	}
	sort.Strings(got)
	return got, nil
}

// telemetry <bootstrap> <topic> <clientID> <seconds>: a producer that
// keeps sending one record every 100 ms for seconds, so librdkafka's
// KIP-714 telemetry (enable.metrics.push, on by default) has time to ask
// for its subscription and push; closing it sends the terminating push.
func telemetry(ctx context.Context, bootstrap string, args []string, out map[string]any) error {
	if len(args) != 3 {
		return fmt.Errorf("telemetry wants <topic> <clientID> <seconds>, got %q", args)
	}
	topic, clientID := args[0], args[1]
	var secs float64
	if _, err := fmt.Sscan(args[2], &secs); err != nil {
		return fmt.Errorf("seconds %q: %w", args[2], err)
	}
	p, err := kafka.NewProducer(conf(bootstrap, "client.id", clientID, "acks", "all", "linger.ms", 5))
	if err != nil {
		return err
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	sent := 0
	for time.Now().Before(end) && ctx.Err() == nil {
		if _, err := produceAll(ctx, p, records(topic, "tel", sent, 1, 1)); err != nil {
			p.Close()
			return err
		}
		sent++
		time.Sleep(100 * time.Millisecond)
	}
	p.Close()
	out["produced"] = sent
	return nil
}
