package kafkacli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kaas reassign-partitions is Kafka 4's kafka-reassign-partitions.sh
// (ReassignPartitionsCommand): the same actions, checks, JSON files and
// output. On kaas a partition has one copy, so a reassignment pins the
// first replica of each list as the partition's leader (compatibility.md).
var _ = register(Tool{Name: "reassign-partitions", Kafka: "kafka-reassign-partitions.sh", Run: runReassignPartitions})

// reassignActions are the tool's actions, exactly one per run, in Kafka's
// order.
var reassignActions = []string{"generate", "execute", "verify", "cancel", "list"}

// reassignRequired and reassignPermitted are Kafka's tables of the flags
// each action needs and allows; any other flag given is refused by name.
var reassignRequired = map[string][]string{
	"verify":   {"reassignment-json-file"},
	"generate": {"topics-to-move-json-file", "broker-list"},
	"execute":  {"reassignment-json-file"},
	"cancel":   {"reassignment-json-file"},
	"list":     nil,
}

var reassignPermitted = map[string][]string{
	"verify":   {"bootstrap-server", "command-config", "preserve-throttles"},
	"generate": {"bootstrap-server", "broker-list", "command-config", "disable-rack-aware"},
	"execute":  {"additional", "bootstrap-server", "command-config", "throttle", "replica-alter-log-dirs-throttle", "timeout"},
	"cancel":   {"bootstrap-server", "command-config", "preserve-throttles", "timeout"},
	"list":     {"bootstrap-server", "command-config"},
}

// reassignAnyLogDir is the log_dirs entry that leaves the directory to the
// broker.
const reassignAnyLogDir = "any"

const reassignExistingMessage = "Cannot execute because there is an existing partition assignment.  Use --additional to override this and create a new partition assignment in addition to the existing one. The --additional flag can also be used to change the throttle by resubmitting the current reassignment."

type reassignOpts struct {
	conn              Conn
	action            string
	reassignmentFile  string
	topicsFile        string
	brokerList        string
	disableRackAware  bool
	throttle          int64
	logDirsThrottle   int64
	timeout           int64
	additional        bool
	preserveThrottles bool
}

func runReassignPartitions(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseReassignArgs(args, stderr)
	if err != nil {
		return err
	}
	// Every file is read and checked before the first request, so a refused
	// command reaches no broker.
	var targets []reassignTarget
	var topics []string
	var brokers []int32
	switch o.action {
	case "generate":
		if brokers, err = reassignParseBrokerList(o.brokerList); err != nil {
			return err
		}
		if topics, err = reassignReadTopicsFile(o.topicsFile); err != nil {
			return err
		}
	case "execute", "verify", "cancel":
		if targets, err = reassignReadAssignmentFile(o.reassignmentFile); err != nil {
			return err
		}
		if o.action == "execute" {
			if err = reassignCheckExecute(targets); err != nil {
				return err
			}
		}
	}
	cl, adm, err := o.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	r := &reassignCmd{o: o, cl: cl, adm: adm, out: stdout}
	switch o.action {
	case "generate":
		return r.generate(ctx, topics, brokers)
	case "execute":
		return r.execute(ctx, targets)
	case "verify":
		return r.verify(ctx, targets)
	case "cancel":
		return r.cancel(ctx, targets)
	default:
		return r.list(ctx)
	}
}

// parseReassignArgs reads the flags and makes Kafka's checks on them, in
// Kafka's order.
func parseReassignArgs(args []string, stderr io.Writer) (*reassignOpts, error) {
	o := &reassignOpts{}
	fs := NewFlagSet("reassign-partitions", stderr)
	o.conn.Register(fs)
	var actions [5]bool
	fs.BoolVar(&actions[0], "generate", false, "Generate a candidate partition reassignment configuration. Note that this only generates a candidate assignment, it does not execute it.")
	fs.BoolVar(&actions[1], "execute", false, "Kick off the reassignment as specified by the --reassignment-json-file option.")
	fs.BoolVar(&actions[2], "verify", false, "Verify if the reassignment completed as specified by the --reassignment-json-file option.")
	fs.BoolVar(&actions[3], "cancel", false, "Cancel an active reassignment.")
	fs.BoolVar(&actions[4], "list", false, "List all active partition reassignments.")
	fs.StringVar(&o.reassignmentFile, "reassignment-json-file", "", "The JSON file with the partition reassignment configuration:\n{\"partitions\": [{\"topic\": \"foo\", \"partition\": 1, \"replicas\": [1,2,3], \"log_dirs\": [\"any\",\"any\",\"any\"]}], \"version\": 1}\n\"log_dirs\" is optional; kaas takes \"any\" only (one log directory per broker).")
	fs.StringVar(&o.topicsFile, "topics-to-move-json-file", "", "Generate a reassignment configuration to move the partitions of the specified topics to the list of brokers specified by the --broker-list option:\n{\"topics\": [{\"topic\": \"foo\"}, {\"topic\": \"foo1\"}], \"version\": 1}")
	fs.StringVar(&o.brokerList, "broker-list", "", "The list of brokers to which the partitions need to be reassigned in the form \"0,1,2\". Required with --generate.")
	fs.BoolVar(&o.disableRackAware, "disable-rack-aware", false, "Disable rack aware replica assignment.")
	fs.Int64Var(&o.throttle, "throttle", -1, "Accepted with --execute; kaas sets no throttle: a reassignment moves leadership, it copies no data.")
	fs.Int64Var(&o.logDirsThrottle, "replica-alter-log-dirs-throttle", -1, "Accepted with --execute; kaas sets no throttle: it moves no replica between log directories.")
	fs.Int64Var(&o.timeout, "timeout", 10000, "The maximum time in ms to wait for log directory replica assignment to begin (unused: kaas has one log directory per broker).")
	fs.BoolVar(&o.additional, "additional", false, "Execute this reassignment in addition to any other ongoing ones.")
	fs.BoolVar(&o.preserveThrottles, "preserve-throttles", false, "Do not modify broker or topic throttles (kaas never sets or clears them).")
	var controller, zookeeper string
	fs.StringVar(&controller, "bootstrap-controller", "", "Not supported: kaas has no KRaft controller quorum; use --bootstrap-server.")
	fs.StringVar(&zookeeper, "zookeeper", "", "Not supported: Kafka 4 has no ZooKeeper mode; use --bootstrap-server.")
	if len(args) == 0 {
		fs.Usage()
		return nil, errors.New("This tool helps to move topic partitions between replicas: give one of --generate, --execute, --verify, --cancel or --list")
	}
	set, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if set["zookeeper"] {
		return nil, errors.New("--zookeeper is not supported: Kafka 4's kafka-reassign-partitions.sh has no ZooKeeper mode; connect with --bootstrap-server")
	}
	action, err := OneAction(fs, reassignActions...)
	if err != nil {
		return nil, errors.New("Command must include exactly one action: --generate, --execute, --verify, --cancel, --list")
	}
	o.action = action
	if set["bootstrap-controller"] {
		return nil, errors.New("--bootstrap-controller is not supported: kaas has no KRaft controller quorum; every broker answers reassignments, connect with --bootstrap-server")
	}
	if o.conn.Bootstrap == "" {
		return nil, errors.New("Please specify either --bootstrap-server or --bootstrap-controller")
	}
	for _, name := range reassignRequired[action] {
		if !set[name] {
			return nil, fmt.Errorf(`Missing required argument "[%s]"`, name)
		}
	}
	allowed := map[string]bool{action: true, "zookeeper": true, "bootstrap-controller": true}
	for _, name := range append(reassignRequired[action], reassignPermitted[action]...) {
		allowed[name] = true
	}
	var refused []string
	fs.Visit(func(f *flag.Flag) {
		if !allowed[f.Name] {
			refused = append(refused, f.Name)
		}
	})
	if len(refused) > 0 {
		return nil, fmt.Errorf(`Option "[%s]" can't be used with action "[%s]"`, refused[0], action)
	}
	return o, nil
}

// reassignTP is a topic partition, printed as Kafka prints one: topic-0.
type reassignTP struct {
	Topic     string
	Partition int32
}

func (tp reassignTP) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// reassignSortTPs sorts by topic, then partition (Kafka's
// compareTopicPartitions).
func reassignSortTPs(tps []reassignTP) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

func reassignJoinTPs(tps []reassignTP, sep string) string {
	s := make([]string, len(tps))
	for i, tp := range tps {
		s[i] = tp.String()
	}
	return strings.Join(s, sep)
}

// reassignJoinIDs prints broker ids as Kafka's tool does: 0,1,2.
func reassignJoinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// reassignJavaSet prints values as Java prints a Set: [a, b].
func reassignJavaSet(vals []string) string {
	sort.Strings(vals)
	return "[" + strings.Join(vals, ", ") + "]"
}

// reassignTarget is one entry of a reassignment JSON file.
type reassignTarget struct {
	tp       reassignTP
	replicas []int32
}

// reassignFileEntry is one partition of a reassignment JSON file; pointers
// tell a missing field from a zero one.
type reassignFileEntry struct {
	Topic     *string   `json:"topic"`
	Partition *int32    `json:"partition"`
	Replicas  *[]int32  `json:"replicas"`
	LogDirs   *[]string `json:"log_dirs"`
}

// reassignReadJSON reads a JSON file named by flag into v.
func reassignReadJSON(flagName, path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--%s: %w", flagName, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("--%s %s: not a valid reassignment JSON file: %w", flagName, path, err)
	}
	return nil
}

// reassignCheckVersion is Kafka's check of a JSON file's "version": absent
// means 1, the only version there is.
func reassignCheckVersion(flagName string, v *int) error {
	if v != nil && *v != 1 {
		return fmt.Errorf("--%s: Not supported version field value %d", flagName, *v)
	}
	return nil
}

// reassignReadAssignmentFile reads --reassignment-json-file with Kafka's
// checks. log_dirs entries other than "any" are refused: Kafka would move
// the replica to that directory, and a kaas broker has one.
func reassignReadAssignmentFile(path string) ([]reassignTarget, error) {
	const flagName = "reassignment-json-file"
	var f struct {
		Version    *int                `json:"version"`
		Partitions []reassignFileEntry `json:"partitions"`
	}
	if err := reassignReadJSON(flagName, path, &f); err != nil {
		return nil, err
	}
	if err := reassignCheckVersion(flagName, f.Version); err != nil {
		return nil, err
	}
	var out []reassignTarget
	for i, e := range f.Partitions {
		for _, f := range []struct {
			name    string
			missing bool
		}{{"topic", e.Topic == nil}, {"partition", e.Partition == nil}, {"replicas", e.Replicas == nil}} {
			if f.missing {
				return nil, fmt.Errorf("--%s: partitions[%d] has no %q", flagName, i, f.name)
			}
		}
		t := reassignTarget{tp: reassignTP{*e.Topic, *e.Partition}, replicas: *e.Replicas}
		if e.LogDirs != nil {
			dirs := *e.LogDirs
			if len(dirs) != len(t.replicas) {
				return nil, fmt.Errorf("Size of replicas list %s is different from size of log dirs list %s for partition %s",
					topicsJavaList(t.replicas), "["+strings.Join(dirs, ", ")+"]", t.tp)
			}
			for j, d := range dirs {
				if d != reassignAnyLogDir {
					return nil, fmt.Errorf("--%s: partition %s puts broker %d's replica in log directory %q: kaas moves no replica between log directories (a broker has one); give \"any\"",
						flagName, t.tp, t.replicas[j], d)
				}
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// reassignCheckExecute is Kafka's check of an assignment to execute.
func reassignCheckExecute(targets []reassignTarget) error {
	if len(targets) == 0 {
		return errors.New("Partition reassignment list cannot be empty")
	}
	seen := map[reassignTP]bool{}
	var dupParts []reassignTP
	var dupReplicas []string
	for _, t := range targets {
		if len(t.replicas) == 0 {
			return errors.New("Partition replica list cannot be empty")
		}
		if seen[t.tp] {
			dupParts = append(dupParts, t.tp)
		}
		seen[t.tp] = true
		ids := map[int32]int{}
		var dups []int32
		for _, r := range t.replicas {
			if ids[r]++; ids[r] == 2 {
				dups = append(dups, r)
			}
		}
		if len(dups) > 0 {
			dupReplicas = append(dupReplicas, fmt.Sprintf("%s contains multiple entries for %s", t.tp, reassignJoinIDs(dups)))
		}
	}
	if len(dupParts) > 0 {
		reassignSortTPs(dupParts)
		return fmt.Errorf("Partition reassignment contains duplicate topic partitions: %s", reassignJoinTPs(dupParts, ","))
	}
	if len(dupReplicas) > 0 {
		return fmt.Errorf("Partition replica lists may not contain duplicate entries: %s", strings.Join(dupReplicas, ". "))
	}
	return nil
}

// reassignReadTopicsFile reads --topics-to-move-json-file.
func reassignReadTopicsFile(path string) ([]string, error) {
	const flagName = "topics-to-move-json-file"
	var f struct {
		Version *int `json:"version"`
		Topics  []struct {
			Topic *string `json:"topic"`
		} `json:"topics"`
	}
	if err := reassignReadJSON(flagName, path, &f); err != nil {
		return nil, err
	}
	if err := reassignCheckVersion(flagName, f.Version); err != nil {
		return nil, err
	}
	var topics, dups []string
	seen := map[string]int{}
	for i, t := range f.Topics {
		if t.Topic == nil {
			return nil, fmt.Errorf("--%s: topics[%d] has no \"topic\"", flagName, i)
		}
		if seen[*t.Topic]++; seen[*t.Topic] == 2 {
			dups = append(dups, *t.Topic)
		}
		topics = append(topics, *t.Topic)
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("List of topics to reassign contains duplicate entries: %s", reassignJavaSet(dups))
	}
	return topics, nil
}

// reassignParseBrokerList reads "0,1,2" (--broker-list of this tool and of
// kaas log-dirs).
func reassignParseBrokerList(s string) ([]int32, error) {
	var ids []int32
	var dups []string
	seen := map[int32]int{}
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--broker-list %q: %q is not a broker id", s, f)
		}
		if seen[int32(id)]++; seen[int32(id)] == 2 {
			dups = append(dups, strconv.Itoa(int(id)))
		}
		ids = append(ids, int32(id))
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("Broker list contains duplicate entries: %s", reassignJavaSet(dups))
	}
	return ids, nil
}

// reassignJSON prints an assignment as Kafka's formatAsReassignmentJson:
// partitions sorted, every log dir "any".
func reassignJSON(assignment map[reassignTP][]int32) string {
	type entry struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Replicas  []int32  `json:"replicas"`
		LogDirs   []string `json:"log_dirs"`
	}
	tps := make([]reassignTP, 0, len(assignment))
	for tp := range assignment {
		tps = append(tps, tp)
	}
	reassignSortTPs(tps)
	doc := struct {
		Version    int     `json:"version"`
		Partitions []entry `json:"partitions"`
	}{Version: 1, Partitions: []entry{}}
	for _, tp := range tps {
		e := entry{Topic: tp.Topic, Partition: tp.Partition, Replicas: append([]int32{}, assignment[tp]...)}
		for range e.Replicas {
			e.LogDirs = append(e.LogDirs, reassignAnyLogDir)
		}
		if e.LogDirs == nil {
			e.LogDirs = []string{}
		}
		doc.Partitions = append(doc.Partitions, e)
	}
	return reassignMarshal(doc)
}

// reassignMarshal writes compact JSON as Jackson does (no HTML escaping).
func reassignMarshal(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only maps, slices, strings and numbers
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// reassignErrText is a partition error as the tool prints it: the broker's
// message when it sent one, else the error code's description.
func reassignErrText(err error, msg string) string {
	if msg != "" {
		return msg
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Description
	}
	return err.Error()
}

type reassignCmd struct {
	o   *reassignOpts
	cl  *kgo.Client
	adm *kadm.Client
	out io.Writer
}

// reassignBroker is a live broker: its id and rack.
type reassignBroker struct {
	id   int32
	rack *string
}

// reassignClusterBrokers lists the brokers in the cluster, by id.
func reassignClusterBrokers(ctx context.Context, cl *kgo.Client) ([]reassignBroker, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := make([]reassignBroker, 0, len(resp.Brokers))
	for _, b := range resp.Brokers {
		out = append(out, reassignBroker{id: b.NodeID, rack: b.Rack})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// reassignTopicReplicas reads the replica lists of topics' partitions from
// Metadata, asked afresh. missingOK leaves unknown topics out; otherwise
// one is Kafka's "Topic t not found.".
func reassignTopicReplicas(ctx context.Context, cl *kgo.Client, topics []string, missingOK bool) (map[reassignTP][]int32, error) {
	out := map[reassignTP][]int32{}
	if len(topics) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	for _, rt := range resp.Topics {
		name := ""
		if rt.Topic != nil {
			name = *rt.Topic
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				if missingOK {
					continue
				}
				return nil, fmt.Errorf("Topic %s not found.", name)
			}
			return nil, fmt.Errorf("topic %s: %w", name, err)
		}
		for _, p := range rt.Partitions {
			out[reassignTP{name, p.Partition}] = append([]int32{}, p.Replicas...)
		}
	}
	return out, nil
}

// reassignListReassignments lists the reassignments in progress: of every
// partition when tps is nil (a null topic list, which kadm cannot send),
// else of those partitions.
func reassignListReassignments(ctx context.Context, cl *kgo.Client, tps []reassignTP) (map[reassignTP]kmsg.ListPartitionReassignmentsResponseTopicPartition, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 30000
	if tps != nil {
		req.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{}
		idx := map[string]int{}
		for _, tp := range tps {
			i, ok := idx[tp.Topic]
			if !ok {
				i = len(req.Topics)
				idx[tp.Topic] = i
				rt := kmsg.NewListPartitionReassignmentsRequestTopic()
				rt.Topic = tp.Topic
				req.Topics = append(req.Topics, rt)
			}
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.Partition)
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if resp.ErrorMessage != nil {
			return nil, fmt.Errorf("list partition reassignments: %w (%s)", err, *resp.ErrorMessage)
		}
		return nil, fmt.Errorf("list partition reassignments: %w", err)
	}
	out := map[reassignTP]kmsg.ListPartitionReassignmentsResponseTopicPartition{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[reassignTP{rt.Topic, p.Partition}] = p
		}
	}
	return out, nil
}

// generate proposes an assignment of the topics' partitions over the
// listed brokers with Kafka's placement (AdminUtils.assignReplicasToBrokers).
func (r *reassignCmd) generate(ctx context.Context, topics []string, brokerIDs []int32) error {
	current, err := reassignTopicReplicas(ctx, r.cl, topics, false)
	if err != nil {
		return err
	}
	cluster, err := reassignClusterBrokers(ctx, r.cl)
	if err != nil {
		return err
	}
	wanted := map[int32]bool{}
	for _, id := range brokerIDs {
		wanted[id] = true
	}
	// Brokers named but not in the cluster are left out, as Kafka does.
	var brokers []reassignBroker
	rackless := 0
	for _, b := range cluster {
		if !wanted[b.id] {
			continue
		}
		if r.o.disableRackAware {
			b.rack = nil
		}
		if b.rack == nil {
			rackless++
		}
		brokers = append(brokers, b)
	}
	if rackless != 0 && rackless != len(brokers) {
		return errors.New("Not all brokers have rack information. Add --disable-rack-aware in command line to make replica assignment without rack information.")
	}
	byTopic := map[string][]reassignTP{}
	for tp := range current {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp)
	}
	proposed := map[reassignTP][]int32{}
	for topic, tps := range byTopic {
		reassignSortTPs(tps)
		n := len(brokers)
		start, shift := 0, 0
		if n > 0 {
			start, shift = rand.IntN(n), rand.IntN(n)
		}
		placed, err := reassignPlace(brokers, len(tps), len(current[tps[0]]), start, shift)
		if err != nil {
			return err
		}
		for p, replicas := range placed {
			proposed[reassignTP{topic, int32(p)}] = replicas
		}
	}
	fmt.Fprintf(r.out, "Current partition replica assignment\n%s\n\n", reassignJSON(current))
	fmt.Fprintf(r.out, "Proposed partition reassignment configuration\n%s\n", reassignJSON(proposed))
	return nil
}

// reassignPlace is Kafka's AdminUtils.assignReplicasToBrokers with a fixed
// start index and replica shift (Kafka draws both at random per topic):
// leaders round robin over the brokers (over the racks in turn when every
// broker has one), the other replicas shifted after them. Entry p is
// partition p's replica list.
func reassignPlace(brokers []reassignBroker, partitions, replicationFactor, startIndex, shift int) ([][]int32, error) {
	if partitions <= 0 {
		return nil, errors.New("Number of partitions must be larger than 0.")
	}
	if replicationFactor <= 0 {
		return nil, errors.New("Replication factor must be larger than 0.")
	}
	if replicationFactor > len(brokers) {
		return nil, fmt.Errorf("Replication factor: %d larger than available brokers: %d.", replicationFactor, len(brokers))
	}
	rackAware := false
	rackOf := map[int32]string{}
	for _, b := range brokers {
		if b.rack != nil {
			rackAware = true
			rackOf[b.id] = *b.rack
		}
	}
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.id
	}
	n := len(ids)
	out := make([][]int32, partitions)
	if !rackAware {
		for p := 0; p < partitions; p++ {
			if p > 0 && p%n == 0 {
				shift++
			}
			first := (p + startIndex) % n
			replicas := []int32{ids[first]}
			for j := 0; j < replicationFactor-1; j++ {
				replicas = append(replicas, ids[reassignReplicaIndex(first, shift, j, n)])
			}
			out[p] = replicas
		}
		return out, nil
	}
	arranged := reassignRackAlternated(rackOf)
	racks := map[string]bool{}
	for _, r := range rackOf {
		racks[r] = true
	}
	for p := 0; p < partitions; p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + startIndex) % n
		leader := arranged[first]
		replicas := []int32{leader}
		withRack := map[string]bool{rackOf[leader]: true}
		withReplica := map[int32]bool{leader: true}
		k := 0
		for j := 0; j < replicationFactor-1; j++ {
			for {
				b := arranged[reassignReplicaIndex(first, shift*len(racks), k, n)]
				k++
				// Skip a broker whose rack (or itself) already has a replica
				// while some rack (or broker) has none.
				if (!withRack[rackOf[b]] || len(withRack) == len(racks)) && (!withReplica[b] || len(withReplica) == n) {
					replicas = append(replicas, b)
					withRack[rackOf[b]] = true
					withReplica[b] = true
					break
				}
			}
		}
		out[p] = replicas
	}
	return out, nil
}

func reassignReplicaIndex(first, secondShift, replica, n int) int {
	shift := 1 + (secondShift+replica)%(n-1)
	return (first + shift) % n
}

// reassignRackAlternated orders brokers one rack at a time (racks sorted,
// brokers by id within a rack): Kafka's getRackAlternatedBrokerList.
func reassignRackAlternated(rackOf map[int32]string) []int32 {
	byRack := map[string][]int32{}
	for id, r := range rackOf {
		byRack[r] = append(byRack[r], id)
	}
	racks := make([]string, 0, len(byRack))
	for r, ids := range byRack {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		racks = append(racks, r)
	}
	sort.Strings(racks)
	var out []int32
	next := map[string]int{}
	for i := 0; len(out) < len(rackOf); i = (i + 1) % len(racks) {
		r := racks[i]
		if next[r] < len(byRack[r]) {
			out = append(out, byRack[r][next[r]])
			next[r]++
		}
	}
	return out
}

// execute starts the reassignment: on kaas each partition's first replica
// becomes its pinned leader.
func (r *reassignCmd) execute(ctx context.Context, targets []reassignTarget) error {
	ongoing, err := reassignListReassignments(ctx, r.cl, nil)
	if err != nil {
		return err
	}
	if !r.o.additional && len(ongoing) > 0 {
		return errors.New(reassignExistingMessage)
	}
	cluster, err := reassignClusterBrokers(ctx, r.cl)
	if err != nil {
		return err
	}
	known := map[int32]bool{}
	for _, b := range cluster {
		known[b.id] = true
	}
	var topics []string
	seenTopic := map[string]bool{}
	for _, t := range targets {
		for _, id := range t.replicas {
			if !known[id] {
				return fmt.Errorf("Unknown broker id %d", id)
			}
		}
		if !seenTopic[t.tp.Topic] {
			seenTopic[t.tp.Topic] = true
			topics = append(topics, t.tp.Topic)
		}
	}
	current, err := reassignTopicReplicas(ctx, r.cl, topics, false)
	if err != nil {
		return err
	}
	rollback := map[reassignTP][]int32{}
	var missing []reassignTP
	for _, t := range targets {
		replicas, ok := current[t.tp]
		if !ok {
			missing = append(missing, t.tp)
			continue
		}
		rollback[t.tp] = replicas
	}
	if len(missing) > 0 {
		reassignSortTPs(missing)
		return fmt.Errorf("Unable to find partition: %s", reassignJoinTPs(missing, ", "))
	}
	fmt.Fprintf(r.out, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", reassignJSON(rollback))
	if r.o.throttle >= 0 || r.o.logDirsThrottle >= 0 {
		fmt.Fprintln(r.out, "No throttle was set: kaas moves a partition's leadership, not a copy of its data, so there is nothing to throttle.")
	}
	var req kadm.AlterPartitionAssignmentsReq
	tps := make([]reassignTP, 0, len(targets))
	for _, t := range targets {
		req.Assign(t.tp.Topic, t.tp.Partition, t.replicas)
		tps = append(tps, t.tp)
	}
	res, err := r.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	var failed []string
	for _, pr := range res.Sorted() {
		if pr.Err != nil {
			failed = append(failed, fmt.Sprintf("%s: %s", reassignTP{pr.Topic, pr.Partition}, reassignErrText(pr.Err, pr.ErrMessage)))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("Error reassigning partition(s):\n%s", strings.Join(failed, "\n"))
	}
	reassignSortTPs(tps)
	plural := "s"
	if len(tps) == 1 {
		plural = ""
	}
	fmt.Fprintf(r.out, "Successfully started partition reassignment%s for %s\n", plural, reassignJoinTPs(tps, ","))
	return nil
}

// verify prints whether each partition's reassignment is done: in progress
// while the broker lists it, else done, with the replica set Metadata shows
// (on kaas the leader alone) compared with the target.
func (r *reassignCmd) verify(ctx context.Context, targets []reassignTarget) error {
	ongoing, err := reassignListReassignments(ctx, r.cl, nil)
	if err != nil {
		return err
	}
	var topics []string
	seenTopic := map[string]bool{}
	for _, t := range targets {
		if _, ok := ongoing[t.tp]; !ok && !seenTopic[t.tp.Topic] {
			seenTopic[t.tp.Topic] = true
			topics = append(topics, t.tp.Topic)
		}
	}
	current, err := reassignTopicReplicas(ctx, r.cl, topics, true)
	if err != nil {
		return err
	}
	byTP := map[reassignTP]reassignTarget{}
	tps := []reassignTP{}
	for _, t := range targets {
		if _, dup := byTP[t.tp]; !dup {
			tps = append(tps, t.tp)
		}
		byTP[t.tp] = t
	}
	reassignSortTPs(tps)
	lines := []string{"Status of partition reassignment:"}
	for _, tp := range tps {
		if _, inProgress := ongoing[tp]; inProgress {
			lines = append(lines, fmt.Sprintf("Reassignment of partition %s is still in progress.", tp))
			continue
		}
		have, want := current[tp], byTP[tp].replicas
		if reassignJoinIDs(have) == reassignJoinIDs(want) {
			lines = append(lines, fmt.Sprintf("Reassignment of partition %s is completed.", tp))
		} else {
			lines = append(lines, fmt.Sprintf("There is no active reassignment of partition %s, but replica set is %s rather than %s.",
				tp, reassignJoinIDs(have), reassignJoinIDs(want)))
		}
	}
	// The second, empty section is Kafka's report of log directory moves,
	// which "any" log dirs never start.
	fmt.Fprintf(r.out, "%s\n\n", strings.Join(lines, "\n"))
	return nil
}

// cancel cancels the listed partitions' reassignments still in progress;
// on kaas that drops their pins, and each stays where it is now.
func (r *reassignCmd) cancel(ctx context.Context, targets []reassignTarget) error {
	tps := make([]reassignTP, 0, len(targets))
	for _, t := range targets {
		tps = append(tps, t.tp)
	}
	ongoing, err := reassignListReassignments(ctx, r.cl, tps)
	if err != nil {
		return err
	}
	var active []reassignTP
	for tp, p := range ongoing {
		// Kafka's rule: a reassignment that is only adding replicas and
		// removing none is left to finish.
		if len(p.AddingReplicas) == 0 || len(p.RemovingReplicas) > 0 {
			active = append(active, tp)
		}
	}
	reassignSortTPs(active)
	plural := func(n int) string {
		if n == 1 {
			return ""
		}
		return "s"
	}
	if len(active) > 0 {
		var req kadm.AlterPartitionAssignmentsReq
		for _, tp := range active {
			req.CancelAssign(tp.Topic, tp.Partition)
		}
		res, err := r.adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return err
		}
		var failed []string
		for _, pr := range res.Sorted() {
			if pr.Err != nil {
				failed = append(failed, fmt.Sprintf("%s: %s", reassignTP{pr.Topic, pr.Partition}, reassignErrText(pr.Err, pr.ErrMessage)))
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("Error cancelling partition reassignment%s for:\n%s", plural(len(failed)), strings.Join(failed, "\n"))
		}
		fmt.Fprintf(r.out, "Successfully cancelled partition reassignment%s for: %s\n", plural(len(active)), reassignJoinTPs(active, ","))
	} else {
		fmt.Fprintln(r.out, "None of the specified partition reassignments are active.")
	}
	fmt.Fprintln(r.out, "None of the specified partition moves are active.")
	return nil
}

// list prints every reassignment in progress.
func (r *reassignCmd) list(ctx context.Context) error {
	ongoing, err := reassignListReassignments(ctx, r.cl, nil)
	if err != nil {
		return err
	}
	if len(ongoing) == 0 {
		fmt.Fprintln(r.out, "No partition reassignments found.")
		return nil
	}
	tps := make([]reassignTP, 0, len(ongoing))
	for tp := range ongoing {
		tps = append(tps, tp)
	}
	reassignSortTPs(tps)
	lines := []string{"Current partition reassignments:"}
	for _, tp := range tps {
		p := ongoing[tp]
		line := fmt.Sprintf("%s: replicas: %s.", tp, reassignJoinIDs(p.Replicas))
		if len(p.AddingReplicas) > 0 {
			line += fmt.Sprintf(" adding: %s.", reassignJoinIDs(p.AddingReplicas))
		}
		if len(p.RemovingReplicas) > 0 {
			line += fmt.Sprintf(" removing: %s.", reassignJoinIDs(p.RemovingReplicas))
		}
		lines = append(lines, line)
	}
	fmt.Fprintln(r.out, strings.Join(lines, "\n"))
	return nil
}
