package kafkacli

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kaas topics is Kafka 4's kafka-topics.sh (TopicCommand): the same flags,
// checks, messages and output.
var _ = register(Tool{Name: "topics", Kafka: "kafka-topics.sh", Run: runTopics})

// topicsActions are kafka-topics.sh's actions, exactly one per run.
var topicsActions = []string{"list", "describe", "create", "alter", "delete"}

// topicsFlagActions names the actions each flag may be given with (Kafka's
// checkInvalidArgs); a flag not listed here goes with every action.
// --topic-id and --partition-size-limit-per-response only mean something
// to --describe; Kafka ignores them elsewhere, kaas refuses them.
var topicsFlagActions = map[string][]string{
	"config":                            {"create"},
	"partitions":                        {"alter", "create"},
	"replication-factor":                {"create"},
	"replica-assignment":                {"alter", "create"},
	"under-replicated-partitions":       {"describe"},
	"under-min-isr-partitions":          {"describe"},
	"at-min-isr-partitions":             {"describe"},
	"unavailable-partitions":            {"describe"},
	"topics-with-overrides":             {"describe"},
	"if-exists":                         {"alter", "delete", "describe"},
	"if-not-exists":                     {"create"},
	"exclude-internal":                  {"list", "describe"},
	"topic-id":                          {"describe"},
	"partition-size-limit-per-response": {"describe"},
}

// topicsReportFlags are --describe's partition filters.
var topicsReportFlags = []string{"under-replicated-partitions", "under-min-isr-partitions", "at-min-isr-partitions", "unavailable-partitions"}

// topicsConfigsHint is Kafka's pointer to kafka-configs.sh for topic configs.
const topicsConfigsHint = " (To alter topic configurations, the kafka-configs tool can be used.)"

type topicsOpts struct {
	conn               Conn
	action             string
	set                map[string]bool
	topic, topicID     string
	partitions         int
	replicationFactor  int
	replicaAssignment  string
	configs            Repeated
	ifExists           bool
	ifNotExists        bool
	excludeInternal    bool
	withOverrides      bool
	underReplicated    bool
	underMinISR        bool
	atMinISR           bool
	unavailable        bool
	partitionSizeLimit int

	// Parsed from the flags above.
	assignment [][]int32 // --replica-assignment, per partition
	topicCfg   map[string]string
	filter     *regexp.Regexp // --topic as Kafka's include list
	id         [16]byte       // --topic-id; zero: describe by name
}

func runTopics(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseTopicsArgs(args, stdout, stderr)
	if err != nil {
		return err
	}
	cl, adm, err := o.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	t := &topicsCmd{o: o, cl: cl, adm: adm, out: stdout}
	switch o.action {
	case "create":
		err = t.create(ctx)
	case "alter":
		err = t.alter(ctx)
	case "list":
		err = t.list(ctx)
	case "describe":
		err = t.describe(ctx)
	case "delete":
		err = t.delete(ctx)
	}
	if err != nil {
		return fmt.Errorf("Error while executing topic command : %w", err)
	}
	return nil
}

// parseTopicsArgs reads the flags and makes Kafka's checks on them, in
// Kafka's order, so a refused command reaches no broker.
func parseTopicsArgs(args []string, stdout, stderr io.Writer) (*topicsOpts, error) {
	o := &topicsOpts{}
	fs := NewFlagSet("topics", stderr)
	o.conn.Register(fs)
	bools := map[string]*bool{}
	for _, a := range topicsActions {
		bools[a] = new(bool)
	}
	fs.BoolVar(bools["list"], "list", false, "List all available topics.")
	fs.BoolVar(bools["describe"], "describe", false, "List details for the given topics.")
	fs.BoolVar(bools["create"], "create", false, "Create a new topic.")
	fs.BoolVar(bools["alter"], "alter", false, "Alter the number of partitions and replica assignment."+topicsConfigsHint)
	fs.BoolVar(bools["delete"], "delete", false, "Delete a topic.")
	fs.StringVar(&o.topic, "topic", "", "The topic to create, alter, describe or delete. It also accepts a regular expression (matching the whole name), except for --create.")
	fs.StringVar(&o.topicID, "topic-id", "", "The topic-id to describe.")
	fs.Var(&o.configs, "config", "A topic configuration override name=value for the topic being created (repeatable). Only with --create."+topicsConfigsHint)
	fs.IntVar(&o.partitions, "partitions", 0, "The number of partitions for the topic being created or altered. If not supplied with --create, the topic uses the cluster default.")
	fs.IntVar(&o.replicationFactor, "replication-factor", 0, "The replication factor for each partition in the topic being created. If not supplied, the topic uses the cluster default.")
	fs.StringVar(&o.replicaAssignment, "replica-assignment", "", "A list of manual partition-to-broker assignments for the topic being created or altered: b1:b2,b1:b2,... (one replica list per partition).")
	fs.BoolVar(&o.underReplicated, "under-replicated-partitions", false, "If set when describing topics, only show under-replicated partitions.")
	fs.BoolVar(&o.unavailable, "unavailable-partitions", false, "If set when describing topics, only show partitions whose leader is not available.")
	fs.BoolVar(&o.underMinISR, "under-min-isr-partitions", false, "If set when describing topics, only show partitions whose isr count is less than the configured minimum.")
	fs.BoolVar(&o.atMinISR, "at-min-isr-partitions", false, "If set when describing topics, only show partitions whose isr count is equal to the configured minimum.")
	fs.BoolVar(&o.withOverrides, "topics-with-overrides", false, "If set when describing topics, only show topics that have overridden configs.")
	fs.BoolVar(&o.ifExists, "if-exists", false, "If set when altering or deleting or describing topics, the action will only execute if the topic exists.")
	fs.BoolVar(&o.ifNotExists, "if-not-exists", false, "If set when creating topics, the action will only execute if the topic does not already exist.")
	fs.BoolVar(&o.excludeInternal, "exclude-internal", false, "Exclude internal topics when listing or describing topics. By default, the internal topics are included.")
	fs.IntVar(&o.partitionSizeLimit, "partition-size-limit-per-response", 0, "The maximum partition size to be included in one DescribeTopicPartitions response.")
	// Flags Kafka 4's tool no longer has: defined so that giving one is
	// refused by name rather than as an unknown flag.
	var zookeeper, deleteConfig string
	fs.StringVar(&zookeeper, "zookeeper", "", "Not supported: Kafka 4 has no ZooKeeper mode; use --bootstrap-server.")
	fs.StringVar(&deleteConfig, "delete-config", "", "Not supported since Kafka 4.0; use kaas configs --alter --delete-config.")
	if len(args) == 0 {
		fs.Usage()
		return nil, errors.New("Create, delete, describe, or change a topic: give one of --list, --describe, --create, --alter or --delete")
	}
	if _, err := Parse(fs, args); err != nil {
		return nil, err
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.set["zookeeper"] {
		return nil, errors.New("--zookeeper is not supported: Kafka 4's kafka-topics.sh has no ZooKeeper mode; connect with --bootstrap-server")
	}
	if o.set["delete-config"] {
		return nil, errors.New("--delete-config is no longer supported (removed in Kafka 4.0): remove a topic config with kaas configs --alter --entity-type topics --delete-config")
	}
	action, err := OneAction(fs, topicsActions...)
	if err != nil {
		return nil, errors.New("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
	}
	o.action = action

	// Kafka's checkRequiredArgs.
	if o.conn.Bootstrap == "" {
		return nil, errors.New("--bootstrap-server must be specified")
	}
	if action == "describe" && o.ifExists {
		if !o.set["topic"] && !o.set["topic-id"] {
			return nil, errors.New("--topic or --topic-id is required to describe a topic")
		}
		if o.set["topic"] && o.set["topic-id"] {
			fmt.Fprintln(stdout, "Only topic id will be used when both --topic and --topic-id are specified and topicId is not Uuid.ZERO_UUID")
		}
	}
	if action != "list" && action != "describe" && !o.set["topic"] {
		return nil, errors.New(`Missing required argument "[topic]"`)
	}
	if action == "alter" {
		if o.set["config"] {
			return nil, errors.New(`Option combination "[bootstrap-server, config]" can't be used with option "[alter]"` + topicsConfigsHint)
		}
		if !o.set["partitions"] {
			return nil, errors.New(`Missing required argument "[partitions]"`)
		}
	}
	// Kafka's checkInvalidArgs.
	for _, name := range topicsSortedKeys(topicsFlagActions) {
		if o.set[name] && !topicsContains(topicsFlagActions[name], action) {
			return nil, fmt.Errorf(`Option "[%s]" can't be used with option "[%s]"`, name, action)
		}
	}
	if action == "create" && o.set["replica-assignment"] {
		for _, other := range []string{"partitions", "replication-factor"} {
			if o.set[other] {
				return nil, fmt.Errorf(`Option "[replica-assignment]" can't be used with option "[%s]"`, other)
			}
		}
	}
	for _, r := range topicsReportFlags {
		if o.set[r] && o.withOverrides {
			return nil, fmt.Errorf(`Option "[%s]" can't be used with option "[topics-with-overrides]"`, r)
		}
	}

	// The values.
	if o.replicaAssignment != "" {
		if o.assignment, err = topicsParseReplicaAssignment(o.replicaAssignment); err != nil {
			return nil, fmt.Errorf("--replica-assignment %q: %w", o.replicaAssignment, err)
		}
	}
	if o.topicCfg, err = topicsParseConfigs(o.configs); err != nil {
		return nil, err
	}
	if action == "create" {
		if o.set["replication-factor"] && (o.replicationFactor < 1 || o.replicationFactor > 32767) {
			return nil, errors.New("--replication-factor: The replication factor must be between 1 and 32767 inclusive")
		}
		if o.set["partitions"] && o.partitions < 1 {
			return nil, errors.New("--partitions: The partitions must be greater than 0")
		}
	} else if o.set["topic"] {
		if o.filter, err = topicsIncludeList(o.topic); err != nil {
			return nil, err
		}
	}
	if o.topicID != "" {
		if o.id, err = topicsParseID(o.topicID); err != nil {
			return nil, err
		}
	}
	if o.set["partition-size-limit-per-response"] && o.partitionSizeLimit < 1 {
		return nil, fmt.Errorf("--partition-size-limit-per-response %d: must be at least 1", o.partitionSizeLimit)
	}
	return o, nil
}

// topicsParseReplicaAssignment reads Kafka's "b1:b2,b1:b2,..." (a replica list
// per partition, from partition 0), with Kafka's checks: no broker twice in
// a list, every list as long as the first.
func topicsParseReplicaAssignment(s string) ([][]int32, error) {
	var out [][]int32
	for p, part := range strings.Split(s, ",") {
		var replicas []int32
		seen := map[int32]bool{}
		var dups []string
		for _, b := range strings.Split(part, ":") {
			id, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("partition %d: %q is not a broker id", p, strings.TrimSpace(b))
			}
			if seen[int32(id)] {
				dups = append(dups, strconv.Itoa(int(id)))
			}
			seen[int32(id)] = true
			replicas = append(replicas, int32(id))
		}
		if len(dups) > 0 {
			return nil, fmt.Errorf("Partition replica lists may not contain duplicate entries: %s", strings.Join(dups, ","))
		}
		if len(out) > 0 && len(replicas) != len(out[0]) {
			return nil, fmt.Errorf("Partition %d has different replication factor: %s", p, topicsJavaList(replicas))
		}
		out = append(out, replicas)
	}
	return out, nil
}

// topicsJavaList prints ids as Java prints a List<Integer>: [0, 1].
func topicsJavaList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// topicsConfigSep is how Kafka splits a --config value: at =, spaces around
// it dropped.
var topicsConfigSep = regexp.MustCompile(`\s*=\s*`)

// topicsParseConfigs reads --config name=value flags as Kafka does: exactly
// one = (so an empty value or a value holding = is refused), names and
// values trimmed. Whether a name and value are valid is the broker's call.
func topicsParseConfigs(flags []string) (map[string]string, error) {
	cfg := map[string]string{}
	for _, f := range flags {
		kv := topicsConfigSep.Split(f, -1)
		// Java's split drops trailing empty strings: "a=" is one field.
		for len(kv) > 0 && kv[len(kv)-1] == "" {
			kv = kv[:len(kv)-1]
		}
		if len(kv) != 2 {
			return nil, fmt.Errorf(`--config %q: Invalid topic config: all configs to be added must be in the format "key=val".`, f)
		}
		cfg[strings.TrimSpace(kv[0])] = strings.TrimSpace(kv[1])
	}
	return cfg, nil
}

// topicsIncludeList is Kafka's TopicFilter.IncludeList: --topic trimmed, a
// comma meaning |, spaces and surrounding quotes dropped, then matched
// against whole topic names. Kafka compiles it as a Java regex; Go's RE2
// syntax agrees on everything but backreferences and lookaround.
func topicsIncludeList(raw string) (*regexp.Regexp, error) {
	re := strings.TrimSpace(raw)
	re = strings.ReplaceAll(re, ",", "|")
	re = strings.ReplaceAll(re, " ", "")
	re = strings.TrimLeft(re, `"'`)
	re = strings.TrimRight(re, `"'`)
	compiled, err := regexp.Compile("^(?:" + re + ")$")
	if err != nil {
		return nil, fmt.Errorf("--topic: %s is an invalid regex.", re)
	}
	return compiled, nil
}

// topicsParseID reads a topic id as Kafka prints it: 16 bytes in URL-safe
// base64 without padding.
func topicsParseID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("--topic-id %q: not a topic id (22 characters of URL-safe base64, as describe prints it)", s)
	}
	copy(id[:], b)
	return id, nil
}

// topicsFormatID prints a topic id as Kafka does (Uuid.toString).
func topicsFormatID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// topicsIsInternal is Kafka's Topic.isInternal: the names Kafka keeps for
// its own state.
func topicsIsInternal(name string) bool {
	switch name {
	case "__consumer_offsets", "__transaction_state", "__share_group_state":
		return true
	}
	return false
}

type topicsCmd struct {
	o        *topicsOpts
	cl       *kgo.Client
	adm      *kadm.Client
	out      io.Writer
	versions kadm.BrokersApiVersions // fetched once, by allBrokersServe
}

// topics lists the cluster's topics as Kafka's getTopics does: sorted,
// internal ones unless excludeInternal, filtered by --topic.
func (t *topicsCmd) topics(md kadm.Metadata, excludeInternal bool) []string {
	var names []string
	for name, td := range md.Topics {
		if td.Err != nil || (excludeInternal && (td.IsInternal || topicsIsInternal(name))) {
			continue
		}
		if t.o.filter != nil && !t.o.filter.MatchString(name) {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// mustExist is Kafka's ensureTopicExists: a named topic that matched
// nothing is an error unless --if-exists.
func (t *topicsCmd) mustExist(found []string) error {
	if t.o.topic != "" && !t.o.ifExists && len(found) == 0 {
		return fmt.Errorf("Topic '%s' does not exist as expected", t.o.topic)
	}
	return nil
}

func (t *topicsCmd) list(ctx context.Context) error {
	md, err := t.adm.Metadata(ctx)
	if err != nil {
		return err
	}
	names := t.topics(md, t.o.excludeInternal)
	// Kafka prints the names joined by newlines with println: no topics is
	// one empty line.
	_, err = fmt.Fprintln(t.out, strings.Join(names, "\n"))
	return err
}

func (t *topicsCmd) create(ctx context.Context) error {
	name := t.o.topic
	if strings.ContainsAny(name, "._") {
		fmt.Fprintln(t.out, "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.")
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	if t.o.set["partitions"] {
		rt.NumPartitions = int32(t.o.partitions)
	}
	if t.o.set["replication-factor"] {
		rt.ReplicationFactor = int16(t.o.replicationFactor)
	}
	for p, replicas := range t.o.assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for _, k := range topicsSortedKeys(t.o.topicCfg) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(t.o.topicCfg[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, t.cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("CreateTopics answered %d topics for 1", len(resp.Topics))
	}
	r := resp.Topics[0]
	switch {
	case r.ErrorCode == kerr.TopicAlreadyExists.Code && t.o.ifNotExists:
		return nil
	case r.ErrorCode == kerr.TopicAlreadyExists.Code:
		return fmt.Errorf("Topic '%s' already exists.", name)
	case r.ErrorCode != 0:
		return topicsBrokerError(r.ErrorCode, r.ErrorMessage)
	}
	_, err = fmt.Fprintf(t.out, "Created topic %s.\n", name)
	return err
}

// topicsBrokerError is a broker's refusal as Kafka's admin client reports it: the
// broker's message, else the error's standard description.
func topicsBrokerError(code int16, msg *string) error {
	if msg != nil && *msg != "" {
		return errors.New(*msg)
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return errors.New(e.Description)
	}
	return kerr.ErrorForCode(code)
}

// existing is the cluster's metadata and the topics --topic names, which
// must exist unless --if-exists.
func (t *topicsCmd) existing(ctx context.Context) (kadm.Metadata, []string, error) {
	md, err := t.adm.Metadata(ctx)
	if err != nil {
		return md, nil, err
	}
	names := t.topics(md, false)
	return md, names, t.mustExist(names)
}

func (t *topicsCmd) alter(ctx context.Context) error {
	md, names, err := t.existing(ctx)
	if err != nil || len(names) == 0 {
		return err
	}
	want := int32(t.o.partitions)
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 30000
	// Checked for every topic before any is grown, in the words of Kafka's
	// controller, so a refusal changes nothing.
	for _, name := range names {
		have := int32(len(md.Topics[name].Partitions))
		switch {
		case want == have:
			return fmt.Errorf("Topic already has %d partition(s).", have)
		case want < have:
			return fmt.Errorf("The topic %s currently has %d partition(s); %d would not be an increase.", name, have, want)
		}
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, want
		if t.o.assignment != nil {
			// Kafka's --replica-assignment lists every partition; the
			// topic's existing ones are skipped.
			var added [][]int32
			if int(have) < len(t.o.assignment) {
				added = t.o.assignment[have:]
			}
			if len(added) != int(want-have) {
				return fmt.Errorf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", want-have, len(added))
			}
			for _, replicas := range added {
				a := kmsg.NewCreatePartitionsRequestTopicAssignment()
				a.Replicas = replicas
				rt.Assignment = append(rt.Assignment, a)
			}
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, t.cl)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range resp.Topics {
		if r.ErrorCode != 0 {
			errs = append(errs, topicsBrokerError(r.ErrorCode, r.ErrorMessage))
		}
	}
	return errors.Join(errs...)
}

func (t *topicsCmd) delete(ctx context.Context) error {
	_, names, err := t.existing(ctx)
	if err != nil || len(names) == 0 {
		return err
	}
	resps, err := t.adm.DeleteTopics(ctx, names...)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		r, ok := resps[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("the broker did not answer for topic %s", name))
		case r.Err != nil:
			var ke *kerr.Error
			if errors.As(r.Err, &ke) {
				errs = append(errs, topicsBrokerError(ke.Code, &r.ErrMessage))
			} else {
				errs = append(errs, r.Err)
			}
		}
	}
	return errors.Join(errs...)
}

// topicsPartition is one partition as describe shows it (Kafka's
// TopicPartitionInfo with its reassignment).
type topicsPartition struct {
	partition    int32
	leader       int32 // -1: none
	replicas     []int32
	isr          []int32
	elrKnown     bool // the broker reported ELRs (DescribeTopicPartitions); Metadata does not
	elr          []int32
	lastKnownELR []int32
	reassignment *kadm.ListPartitionReassignmentsResponse
}

// topicsTopic is one topic as describe shows it.
type topicsTopic struct {
	name       string
	id         [16]byte
	partitions []topicsPartition // sorted by partition
}

func (t *topicsCmd) describe(ctx context.Context) error {
	excl := t.o.excludeInternal
	md, err := t.adm.Metadata(ctx)
	if err != nil {
		return err
	}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	var topics []topicsTopic
	if t.o.id != ([16]byte{}) {
		// By id, as Kafka's admin client describes ids: from Metadata,
		// which reports no eligible leader replicas.
		for name, td := range md.Topics {
			if td.Err == nil && td.ID == t.o.id && !(excl && (td.IsInternal || topicsIsInternal(name))) {
				topics = append(topics, topicsFromMetadata(td, live))
			}
		}
		if len(topics) == 0 && !t.o.ifExists {
			return fmt.Errorf("TopicId '%s' does not exist as expected", t.o.topicID)
		}
	} else {
		names := t.topics(md, excl)
		if err := t.mustExist(names); err != nil {
			return err
		}
		if topics, err = t.describeByName(ctx, names, md, live); err != nil {
			return err
		}
	}
	if len(topics) == 0 {
		return nil
	}
	names := make([]string, len(topics))
	for i, ti := range topics {
		names[i] = ti.name
	}
	rcs, err := t.adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return err
	}
	configs := map[string][]kadm.Config{}
	for _, rc := range rcs {
		if rc.Err != nil {
			var ke *kerr.Error
			if errors.As(rc.Err, &ke) {
				return topicsBrokerError(ke.Code, &rc.ErrMessage)
			}
			return rc.Err
		}
		configs[rc.Name] = rc.Configs
	}
	if err := t.addReassignments(ctx, topics); err != nil {
		return err
	}
	report := topicsReport{
		underReplicated: t.o.underReplicated, underMinISR: t.o.underMinISR,
		atMinISR: t.o.atMinISR, unavailable: t.o.unavailable, withOverrides: t.o.withOverrides,
	}
	for _, ti := range topics {
		for _, line := range report.lines(ti, configs[ti.name], live) {
			if _, err := fmt.Fprintln(t.out, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// describeByName describes topics as Kafka's admin client does: with
// DescribeTopicPartitions (KIP-966, pages of --partition-size-limit-per-
// response partitions) where every broker serves it, else from Metadata.
func (t *topicsCmd) describeByName(ctx context.Context, names []string, md kadm.Metadata, live map[int32]bool) ([]topicsTopic, error) {
	if len(names) == 0 {
		return nil, nil
	}
	dtp, err := t.allBrokersServe(ctx, kmsg.DescribeTopicPartitions.Int16())
	if err != nil {
		return nil, err
	}
	if !dtp {
		out := make([]topicsTopic, 0, len(names))
		for _, name := range names {
			out = append(out, topicsFromMetadata(md.Topics[name], live))
		}
		return out, nil
	}
	limit := int32(2000) // Kafka's default page
	if t.o.set["partition-size-limit-per-response"] {
		limit = int32(t.o.partitionSizeLimit)
	}
	byName := map[string]*topicsTopic{}
	var order []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, n := range names {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		resp, err := req.RequestWith(ctx, t.cl)
		if err != nil {
			return nil, err
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				return nil, topicsBrokerError(rt.ErrorCode, nil)
			}
			name := ""
			if rt.Topic != nil {
				name = *rt.Topic
			}
			ti, ok := byName[name]
			if !ok {
				ti = &topicsTopic{name: name, id: rt.TopicID}
				byName[name] = ti
				order = append(order, name)
			}
			for _, p := range rt.Partitions {
				leader := p.LeaderID
				if !live[leader] {
					leader = -1
				}
				ti.partitions = append(ti.partitions, topicsPartition{partition: p.Partition, leader: leader,
					replicas: p.Replicas, isr: p.ISR, elrKnown: true, elr: p.EligibleLeaderReplicas, lastKnownELR: p.LastKnownELR})
			}
		}
		if resp.NextCursor == nil {
			break
		}
		next := kmsg.NewDescribeTopicPartitionsRequestCursor()
		next.Topic, next.Partition = resp.NextCursor.Topic, resp.NextCursor.Partition
		if cursor != nil && cursor.Topic == next.Topic && cursor.Partition == next.Partition {
			return nil, fmt.Errorf("DescribeTopicPartitions returned the same cursor twice (%s-%d)", next.Topic, next.Partition)
		}
		cursor = &next
	}
	sort.Strings(order)
	out := make([]topicsTopic, 0, len(order))
	for _, n := range order {
		ti := byName[n]
		sort.Slice(ti.partitions, func(i, j int) bool { return ti.partitions[i].partition < ti.partitions[j].partition })
		out = append(out, *ti)
	}
	return out, nil
}

// allBrokersServe reports whether every broker answers request key.
func (t *topicsCmd) allBrokersServe(ctx context.Context, key int16) (bool, error) {
	if t.versions == nil {
		vs, err := t.adm.ApiVersions(ctx)
		if err != nil {
			return false, err
		}
		t.versions = vs
	}
	answered := false
	for _, v := range t.versions.Sorted() {
		if v.Err != nil {
			continue
		}
		answered = true
		if _, ok := v.KeyMaxVersion(key); !ok {
			return false, nil
		}
	}
	return answered, nil
}

func topicsFromMetadata(td kadm.TopicDetail, live map[int32]bool) topicsTopic {
	ti := topicsTopic{name: td.Topic, id: td.ID}
	for _, p := range td.Partitions.Sorted() {
		leader := p.Leader
		if !live[leader] {
			leader = -1
		}
		ti.partitions = append(ti.partitions, topicsPartition{partition: p.Partition, leader: leader, replicas: p.Replicas, isr: p.ISR})
	}
	return ti
}

// addReassignments adds the reassignments in progress, as Kafka's describe
// does; a broker that does not serve ListPartitionReassignments, or does
// not let this client ask, means none.
func (t *topicsCmd) addReassignments(ctx context.Context, topics []topicsTopic) error {
	ok, err := t.allBrokersServe(ctx, kmsg.ListPartitionReassignments.Int16())
	if err != nil || !ok {
		return err
	}
	set := kadm.TopicsSet{}
	for _, ti := range topics {
		for _, p := range ti.partitions {
			set.Add(ti.name, p.partition)
		}
	}
	ras, err := t.adm.ListPartitionReassignments(ctx, set)
	if errors.Is(err, kerr.ClusterAuthorizationFailed) {
		return nil
	}
	if err != nil {
		return err
	}
	for i := range topics {
		for j := range topics[i].partitions {
			p := &topics[i].partitions[j]
			if ra, ok := ras[topics[i].name][p.partition]; ok {
				p.reassignment = &ra
			}
		}
	}
	return nil
}

// topicsReport is what --describe prints: everything, or only the topics
// with overrides, or only the partitions a filter flag picks.
type topicsReport struct {
	underReplicated, underMinISR, atMinISR, unavailable bool
	withOverrides                                       bool
}

// lines are the describe lines of one topic: Kafka's topic line (unless a
// partition filter is set) and its partition lines.
func (r topicsReport) lines(ti topicsTopic, configs []kadm.Config, live map[int32]bool) []string {
	var overrides []string
	minISR := 1 // Kafka's min.insync.replicas default, should a broker not report it
	for _, c := range configs {
		value := "null" // Java prints a missing (sensitive) value so
		if c.Value != nil {
			value = *c.Value
		}
		if c.Key == "min.insync.replicas" {
			if n, err := strconv.Atoi(value); err == nil {
				minISR = n
			}
		}
		if c.Source != kmsg.ConfigSourceDefaultConfig {
			overrides = append(overrides, c.Key+"="+value)
		}
	}
	sort.Strings(overrides)
	filtering := r.underReplicated || r.underMinISR || r.atMinISR || r.unavailable
	var out []string
	if !filtering && (!r.withOverrides || len(overrides) > 0) {
		line := "Topic: " + ti.name
		if ti.id != ([16]byte{}) {
			line += "\tTopicId: " + topicsFormatID(ti.id)
		}
		rf := 0
		if len(ti.partitions) > 0 {
			rf = topicsReplicationFactor(ti.partitions[0])
		}
		line += fmt.Sprintf("\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s", len(ti.partitions), rf, strings.Join(overrides, ","))
		out = append(out, line)
	}
	if r.withOverrides {
		return out
	}
	for _, p := range ti.partitions {
		hasLeader := p.leader >= 0
		show := !filtering ||
			(r.underReplicated && topicsReplicationFactor(p)-len(p.isr) > 0) ||
			(r.unavailable && (!hasLeader || !live[p.leader])) ||
			(r.underMinISR && (!hasLeader || len(p.isr) < minISR)) ||
			(r.atMinISR && len(p.isr) == minISR)
		if show {
			out = append(out, topicsPartitionLine(ti.name, p))
		}
	}
	return out
}

// replicationFactor is Kafka's: during a reassignment, the replicas it
// keeps; else the replica count.
func topicsReplicationFactor(p topicsPartition) int {
	if ra := p.reassignment; ra != nil {
		for _, id := range p.replicas {
			if topicsContains(ra.AddingReplicas, id) || topicsContains(ra.RemovingReplicas, id) {
				return len(ra.Replicas) - len(ra.AddingReplicas)
			}
		}
	}
	return len(p.replicas)
}

// topicsPartitionLine is Kafka 4's partition line of --describe.
func topicsPartitionLine(topic string, p topicsPartition) string {
	var b strings.Builder
	leader := "none"
	if p.leader >= 0 {
		leader = strconv.Itoa(int(p.leader))
	}
	fmt.Fprintf(&b, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s", topic, p.partition, leader, topicsIDs(p.replicas), topicsIDs(p.isr))
	if ra := p.reassignment; ra != nil {
		fmt.Fprintf(&b, "\tAdding Replicas: %s\tRemoving Replicas: %s", topicsIDs(ra.AddingReplicas), topicsIDs(ra.RemovingReplicas))
	}
	if p.elrKnown {
		fmt.Fprintf(&b, "\tElr: %s\tLastKnownElr: %s", topicsIDs(p.elr), topicsIDs(p.lastKnownELR))
	} else {
		b.WriteString("\tElr: N/A\tLastKnownElr: N/A")
	}
	return b.String()
}

// ids prints broker ids as Kafka does: comma-separated, no spaces.
func topicsIDs(list []int32) string {
	s := make([]string, len(list))
	for i, id := range list {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func topicsContains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func topicsSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
