package kafkacli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// kafka-consumer-groups.sh: list, describe, delete consumer groups, reset
// and delete their committed offsets. Actions, flags, refusals and output
// columns follow Kafka 4's ConsumerGroupCommand; the reset planning lives in
// consumergroups_reset.go.
var _ = register(Tool{Name: "consumer-groups", Kafka: "kafka-consumer-groups.sh", Run: runConsumerGroups})

// cgMissing is Kafka's placeholder for a value a row does not have.
const cgMissing = "-"

// cgStates are the group states --state filters on, as Kafka spells them.
var cgStates = []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"}

// cgTypes are the group types --type filters on.
var cgTypes = []string{"consumer", "classic", "share"}

// cgResetScenarios are the ways --reset-offsets picks new offsets.
var cgResetScenarios = []string{"to-offset", "shift-by", "to-datetime", "by-duration", "to-earliest", "to-latest", "to-current", "from-file"}

type cgOptions struct {
	conn    Conn
	given   map[string]bool // the flags on the command line
	groups  Repeated
	topics  Repeated
	timeout time.Duration

	allGroups, allTopics                            bool
	dryRun, execute, export                         bool
	toEarliest, toLatest, toCurrent                 bool
	members, verbose, offsets                       bool
	toOffset, shiftBy                               int64
	fromFile, toDatetime, byDuration, state, gtypes string

	stdout, stderr io.Writer
}

// registerReset adds --reset-offsets' flags: its scenarios and how the
// plan is applied. consumer-groups and streams-groups reset alike.
func (o *cgOptions) registerReset(fs *flag.FlagSet) {
	fs.BoolVar(&o.dryRun, "dry-run", false, "--reset-offsets: only show the new offsets")
	fs.BoolVar(&o.execute, "execute", false, "--reset-offsets: commit the new offsets")
	fs.BoolVar(&o.export, "export", false, "--reset-offsets: print the new offsets as CSV (what --from-file reads)")
	fs.Int64Var(&o.toOffset, "to-offset", 0, "reset to this offset")
	fs.Int64Var(&o.shiftBy, "shift-by", 0, "reset to the committed offset plus n (n may be negative)")
	fs.StringVar(&o.toDatetime, "to-datetime", "", "reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[zone]")
	fs.StringVar(&o.byDuration, "by-duration", "", "reset to the first offset at or after now minus PnDTnHnMnS")
	fs.BoolVar(&o.toEarliest, "to-earliest", false, "reset to the log start")
	fs.BoolVar(&o.toLatest, "to-latest", false, "reset to the log end")
	fs.BoolVar(&o.toCurrent, "to-current", false, "reset to the committed offset (the log end where none)")
	fs.StringVar(&o.fromFile, "from-file", "", "reset to the offsets of a CSV file (topic,partition,offset or group,topic,partition,offset)")
}

func runConsumerGroups(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o := &cgOptions{stdout: stdout, stderr: stderr}
	fs := NewFlagSet("consumer-groups", stderr)
	o.conn.Register(fs)
	var list, describe, del, reset, delOffsets bool
	fs.BoolVar(&list, "list", false, "list all consumer groups")
	fs.BoolVar(&describe, "describe", false, "describe groups: offsets and lag (default), --members or --state")
	fs.BoolVar(&del, "delete", false, "delete groups (--group, repeatable, or --all-groups)")
	fs.BoolVar(&reset, "reset-offsets", false, "reset the committed offsets of inactive groups")
	fs.BoolVar(&delOffsets, "delete-offsets", false, "delete a group's committed offsets of --topic")
	fs.Var(&o.groups, "group", "a consumer group (repeatable)")
	fs.BoolVar(&o.allGroups, "all-groups", false, "act on every consumer group")
	fs.Var(&o.topics, "topic", "a topic, or topic:0,1,... for some partitions (repeatable)")
	fs.BoolVar(&o.allTopics, "all-topics", false, "--reset-offsets: every topic the group has offsets for")
	timeoutMs := fs.Int64("timeout", 5000, "timeout of each request, in ms")
	o.registerReset(fs)
	fs.BoolVar(&o.members, "members", false, "--describe: the members")
	fs.BoolVar(&o.verbose, "verbose", false, "--describe: more columns")
	fs.BoolVar(&o.offsets, "offsets", false, "--describe: offsets and lag (the default)")
	fs.StringVar(&o.state, "state", "", "--describe: the group's state; --list: the STATE column, [filtered to states s1,s2]")
	fs.StringVar(&o.gtypes, "type", "", "--list: the TYPE column, [filtered to types classic,consumer,share]")
	given, err := Parse(fs, cgOptionalValues(args))
	if err != nil {
		return err
	}
	o.given = given
	action, err := OneAction(fs, "list", "describe", "delete", "reset-offsets", "delete-offsets")
	if err != nil {
		return err
	}
	if *timeoutMs <= 0 {
		return fmt.Errorf("--timeout %d: must be a positive number of milliseconds", *timeoutMs)
	}
	o.timeout = time.Duration(*timeoutMs) * time.Millisecond
	if err := o.check(action); err != nil {
		return err
	}
	_, adm, err := o.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	switch action {
	case "list":
		return o.list(ctx, adm)
	case "describe":
		return o.describe(ctx, adm)
	case "delete":
		return o.deleteGroups(ctx, adm)
	case "reset-offsets":
		return o.resetOffsets(ctx, adm)
	default:
		return o.deleteOffsets(ctx, adm)
	}
}

// cgOptionalValues rewrites --state and --type, whose value is optional in
// Kafka's tool (`--list --state` shows the column, `--list --state stable`
// also filters), into the --flag=value form Go's flag package reads: the
// next argument is their value unless it is another flag.
func cgOptionalValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		switch a {
		case "--state", "-state", "--type", "-type":
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				out = append(out, a+"="+args[i+1])
				i++
			} else {
				out = append(out, a+"=")
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// check refuses the flag combinations Kafka's tool refuses (and flags that
// would be ignored by the action asked for), before anything is sent.
func (o *cgOptions) check(action string) error {
	if o.conn.Bootstrap == "" {
		return errors.New("missing required argument --bootstrap-server")
	}
	g := o.given
	onlyWith := func(flagName string, actions ...string) error {
		if !g[flagName] {
			return nil
		}
		for _, a := range actions {
			if a == action {
				return nil
			}
		}
		return fmt.Errorf("option --%s can only be used with --%s", flagName, strings.Join(actions, " or --"))
	}
	for _, c := range []struct {
		flag    string
		actions []string
	}{
		{"members", []string{"describe"}}, {"offsets", []string{"describe"}}, {"verbose", []string{"describe"}},
		{"state", []string{"describe", "list"}}, {"type", []string{"list"}},
		{"group", []string{"describe", "delete", "reset-offsets", "delete-offsets"}},
		{"all-groups", []string{"describe", "delete", "reset-offsets"}},
		{"topic", []string{"delete-offsets", "reset-offsets", "delete"}},
		{"all-topics", []string{"reset-offsets"}}, {"dry-run", []string{"reset-offsets"}},
		{"execute", []string{"reset-offsets"}}, {"export", []string{"reset-offsets"}},
	} {
		if err := onlyWith(c.flag, c.actions...); err != nil {
			return err
		}
	}
	for _, s := range cgResetScenarios {
		if err := onlyWith(s, "reset-offsets"); err != nil {
			return err
		}
	}
	if g["group"] && g["all-groups"] {
		return errors.New(`option --group can't be used with option --all-groups`)
	}
	needGroups := func() error {
		if !g["group"] && !g["all-groups"] {
			return fmt.Errorf("option --%s takes one of these options: --group, --all-groups", action)
		}
		return nil
	}
	switch action {
	case "list":
		if g["state"] {
			if _, err := cgParseStates(o.state); err != nil {
				return err
			}
		}
		if g["type"] {
			if _, err := cgParseTypes(o.gtypes); err != nil {
				return err
			}
		}
	case "describe":
		if err := needGroups(); err != nil {
			return err
		}
		if err := groupsDescribeView(g, o.state); err != nil {
			return err
		}
	case "delete":
		if err := needGroups(); err != nil {
			return err
		}
		if g["topic"] {
			return errors.New("--delete with --topic: the consumer does not support topic-specific offset deletion from a consumer group (use --delete-offsets)")
		}
	case "delete-offsets":
		if !g["group"] || !g["topic"] {
			return errors.New("option --delete-offsets takes the following options: --group, --topic")
		}
		if len(o.groups) > 1 {
			return errors.New("option --delete-offsets takes one --group")
		}
		for _, t := range o.topics {
			if _, _, err := cgParseTopicArg(t); err != nil {
				return err
			}
		}
	case "reset-offsets":
		return o.checkReset(needGroups)
	}
	return nil
}

func (o *cgOptions) checkReset(needGroups func() error) error {
	g := o.given
	if g["dry-run"] && g["execute"] {
		return errors.New("option --reset-offsets only accepts one of --execute and --dry-run")
	}
	if err := needGroups(); err != nil {
		return err
	}
	var scenarios []string
	for _, s := range cgResetScenarios {
		if g[s] {
			scenarios = append(scenarios, "--"+s)
		}
	}
	switch {
	case len(scenarios) == 0:
		return errors.New("option --reset-offsets requires one of the following scenarios: --to-datetime, --by-duration, --to-earliest, --to-latest, --shift-by, --from-file, --to-current, --to-offset")
	case len(scenarios) > 1:
		return fmt.Errorf("option %s can't be used with option %s", scenarios[0], scenarios[1])
	}
	if !g["from-file"] && !g["topic"] && !g["all-topics"] {
		return errors.New("one of the reset scopes should be defined: --all-topics, --topic")
	}
	if g["topic"] && g["all-topics"] {
		return errors.New("option --topic can't be used with option --all-topics")
	}
	for _, t := range o.topics {
		if _, _, err := cgParseTopicArg(t); err != nil {
			return err
		}
	}
	return o.checkResetTimes(g)
}

// checkResetTimes checks the times --to-datetime and --by-duration give,
// when given, before anything is asked of the cluster.
func (o *cgOptions) checkResetTimes(given map[string]bool) error {
	if given["to-datetime"] {
		if _, err := cgParseDateTime(o.toDatetime, time.Local); err != nil {
			return fmt.Errorf("--to-datetime: %w", err)
		}
	}
	if given["by-duration"] {
		if _, err := cgParseDuration(o.byDuration); err != nil {
			return fmt.Errorf("--by-duration: %w", err)
		}
	}
	return nil
}

// cgParseStates parses --state's list as Kafka does: case-insensitive
// names, answered in Kafka's spelling.
func cgParseStates(in string) ([]string, error) {
	if in == "" {
		return nil, nil
	}
	var out []string
	for _, s := range strings.Split(in, ",") {
		s = strings.TrimSpace(s)
		found := ""
		for _, v := range cgStates {
			if strings.EqualFold(s, v) {
				found = v
			}
		}
		if found == "" {
			return nil, fmt.Errorf("--state: invalid state list '%s'. Valid states are: %s", in, strings.Join(cgStates, ", "))
		}
		out = append(out, found)
	}
	return out, nil
}

// cgParseTypes parses --type's list (classic, consumer, share; any case).
func cgParseTypes(in string) ([]string, error) {
	if in == "" {
		return nil, nil
	}
	var out []string
	for _, s := range strings.Split(strings.ToLower(in), ",") {
		s = strings.TrimSpace(s)
		ok := false
		for _, v := range cgTypes {
			ok = ok || s == v
		}
		if !ok {
			return nil, fmt.Errorf("--type: invalid types list '%s'. Valid types are: %s", in, strings.Join(cgTypes, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

// cgParseTopicArg splits --topic's topic[:p1,p2,...]; nil partitions mean
// every partition of the topic.
func cgParseTopicArg(arg string) (string, []int32, error) {
	topic, parts, hasParts := strings.Cut(arg, ":")
	if topic == "" {
		return "", nil, fmt.Errorf("--topic %q: no topic name", arg)
	}
	if !hasParts {
		return topic, nil, nil
	}
	if parts == "" || strings.Contains(parts, ":") {
		return "", nil, fmt.Errorf("--topic: invalid topic arg '%s', expected topic name and partitions", arg)
	}
	var ps []int32
	for _, p := range strings.Split(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return "", nil, fmt.Errorf("--topic: invalid partition '%s' specified in topic arg '%s'", p, arg)
		}
		ps = append(ps, int32(n))
	}
	return topic, ps, nil
}

// op bounds one admin call by --timeout.
func (o *cgOptions) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.timeout)
}

// cgTypeName is a group type as Kafka's GroupType prints it.
func cgTypeName(t string) string {
	switch t {
	case "classic":
		return "Classic"
	case "consumer":
		return "Consumer"
	case "share":
		return "Share"
	}
	return "Unknown"
}

// listConsumerGroups lists the consumer groups (classic groups of the
// consumer protocol type, or of none, and KIP-848 groups), as Kafka's admin
// client does: connect and share groups are not consumer groups.
func (o *cgOptions) listConsumerGroups(ctx context.Context, adm *kadm.Client, types, states []string) ([]kadm.ListedGroup, error) {
	cctx, cancel := o.op(ctx)
	defer cancel()
	listed, err := adm.ListGroupsByType(cctx, types, states...)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	var out []kadm.ListedGroup
	for _, l := range listed.Sorted() {
		if l.ProtocolType == "consumer" || l.ProtocolType == "" {
			out = append(out, l)
		}
	}
	return out, nil
}

func (o *cgOptions) list(ctx context.Context, adm *kadm.Client) error {
	states, _ := cgParseStates(o.state)
	types, _ := cgParseTypes(o.gtypes)
	groups, err := o.listConsumerGroups(ctx, adm, types, states)
	if err != nil {
		return err
	}
	withType, withState := o.given["type"], o.given["state"]
	if !withType && !withState {
		for _, g := range groups {
			fmt.Fprintln(o.stdout, g.Group)
		}
		return nil
	}
	// Kafka's layout: the group column 10 wider than the longest id (at
	// least 15), then 20-wide TYPE and STATE columns.
	width := 15
	for _, g := range groups {
		width = max(width, len(g.Group))
	}
	row := func(id, typ, state string) {
		line := fmt.Sprintf("%-*s", width+10, id)
		if withType {
			line += fmt.Sprintf(" %-20s", typ)
		}
		if withState {
			line += fmt.Sprintf(" %-20s", state)
		}
		fmt.Fprintln(o.stdout, line)
	}
	row("GROUP", "TYPE", "STATE")
	for _, g := range groups {
		state := g.State
		if state == "" {
			state = "Unknown"
		}
		row(g.Group, cgTypeName(g.GroupType), state)
	}
	return nil
}

// cgMember is a member of a classic or a KIP-848 group, as the describe
// views show it.
type cgMember struct {
	id, instanceID, clientID, host string
	assigned, target               kadm.TopicsSet
	epoch                          int32
	kip848                         bool // epoch and target are known
}

// cgGroup is a described group, classic or KIP-848.
type cgGroup struct {
	id, state, assignor string
	coordinator         kadm.BrokerDetail
	kip848              bool // epochs are known
	epoch, assignEpoch  int32
	members             []cgMember
}

// describeGroups describes groups as Kafka 4's admin client does: first
// with ConsumerGroupDescribe (KIP-848 groups); what is not a KIP-848 group
// with DescribeGroups. Groups that exist in neither are returned as missing.
func (o *cgOptions) describeGroups(ctx context.Context, adm *kadm.Client, ids []string) (map[string]cgGroup, []string, error) {
	out := map[string]cgGroup{}
	if len(ids) == 0 {
		return out, nil, nil
	}
	cctx, cancel := o.op(ctx)
	defer cancel()
	var classic []string
	cgs, err := adm.DescribeConsumerGroups(cctx, ids...)
	switch {
	case errors.Is(err, kerr.UnsupportedVersion):
		// A broker without KIP-848: every group is a classic group.
		classic = ids
	case err != nil:
		return nil, nil, fmt.Errorf("describe groups: %w", err)
	default:
		for _, id := range ids {
			d, ok := cgs[id]
			if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) {
				classic = append(classic, id)
				continue
			}
			if d.Err != nil {
				return nil, nil, fmt.Errorf("describe group %s: %w", id, d.Err)
			}
			g := cgGroup{id: id, state: d.State, assignor: d.AssignorName, coordinator: d.Coordinator,
				kip848: true, epoch: d.Epoch, assignEpoch: d.AssignmentEpoch}
			for _, m := range d.Members {
				cm := cgMember{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost,
					assigned: m.Assignment, target: m.TargetAssignment, epoch: m.MemberEpoch, kip848: true}
				if m.InstanceID != nil {
					cm.instanceID = *m.InstanceID
				}
				g.members = append(g.members, cm)
			}
			out[id] = g
		}
	}
	if len(classic) == 0 {
		return out, nil, nil
	}
	dgs, err := adm.DescribeGroups(cctx, classic...)
	if err != nil {
		return nil, nil, fmt.Errorf("describe groups: %w", err)
	}
	var missing []string
	for _, id := range classic {
		d, ok := dgs[id]
		if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) || (d.Err == nil && d.State == "Dead") {
			missing = append(missing, id)
			continue
		}
		if d.Err != nil {
			return nil, nil, fmt.Errorf("describe group %s: %w", id, d.Err)
		}
		g := cgGroup{id: id, state: d.State, assignor: d.Protocol, coordinator: d.Coordinator}
		for _, m := range d.Members {
			cm := cgMember{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost, assigned: kadm.TopicsSet{}}
			if m.InstanceID != nil {
				cm.instanceID = *m.InstanceID
			}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					cm.assigned.Add(t.Topic, t.Partitions...)
				}
			}
			g.members = append(g.members, cm)
		}
		out[id] = g
	}
	return out, missing, nil
}

// groupIDs are the groups --group or --all-groups name.
func (o *cgOptions) groupIDs(ctx context.Context, adm *kadm.Client) ([]string, error) {
	if !o.allGroups {
		return o.groups, nil
	}
	listed, err := o.listConsumerGroups(ctx, adm, nil, nil)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(listed))
	for i, l := range listed {
		ids[i] = l.Group
	}
	return ids, nil
}

// cgNotFound is Kafka's message for a group that does not exist.
func cgNotFound(missing []string) error {
	if len(missing) == 0 {
		return nil
	}
	msgs := make([]string, len(missing))
	for i, g := range missing {
		msgs[i] = fmt.Sprintf("Consumer group '%s' does not exist.", g)
	}
	return errors.New(strings.Join(msgs, " "))
}

func (o *cgOptions) describe(ctx context.Context, adm *kadm.Client) error {
	ids, err := o.groupIDs(ctx, adm)
	if err != nil {
		return err
	}
	groups, missing, err := o.describeGroups(ctx, adm, ids)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(groups))
	for id := range groups {
		names = append(names, id)
	}
	sort.Strings(names)
	for _, id := range names {
		g := groups[id]
		switch {
		case o.members:
			o.printMembers(g)
		case o.given["state"]:
			o.printState(g)
		default:
			if err := o.printOffsets(ctx, adm, g); err != nil {
				return err
			}
		}
	}
	return cgNotFound(missing)
}

// noteState writes Kafka's note about an empty or rebalancing group.
func (o *cgOptions) noteState(g cgGroup) {
	switch g.state {
	case "Empty":
		fmt.Fprintf(o.stderr, "\nConsumer group '%s' has no active members.\n", g.id)
	case "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling":
		fmt.Fprintf(o.stderr, "\nWarning: Consumer group '%s' is rebalancing.\n", g.id)
	}
}

// cgOffsetRow is one row of the offsets view.
type cgOffsetRow struct {
	topic, partition, leaderEpoch, current, end, lag, consumer, host, client string
}

// offsetRows builds the offsets view of a group: each member's partitions
// (members with the most partitions first), then the partitions the group
// has offsets for that no member holds.
func (o *cgOptions) offsetRows(ctx context.Context, adm *kadm.Client, g cgGroup) ([]cgOffsetRow, error) {
	cctx, cancel := o.op(ctx)
	defer cancel()
	committed, err := adm.FetchOffsets(cctx, g.id)
	if err != nil {
		return nil, fmt.Errorf("fetch the offsets of group %s: %w", g.id, err)
	}
	type tp struct {
		t string
		p int32
	}
	var members []cgMember
	for _, m := range g.members {
		if len(m.assigned.Topics()) > 0 {
			members = append(members, m)
		}
	}
	count := func(s kadm.TopicsSet) int {
		n := 0
		s.Each(func(string, int32) { n++ })
		return n
	}
	sort.SliceStable(members, func(i, j int) bool { return count(members[i].assigned) > count(members[j].assigned) })
	type owned struct {
		tp
		m *cgMember
	}
	var rows []owned
	held := map[tp]bool{}
	topics := map[string]bool{}
	for i := range members {
		for _, tps := range members[i].assigned.Sorted() {
			for _, p := range tps.Partitions {
				rows = append(rows, owned{tp{tps.Topic, p}, &members[i]})
				held[tp{tps.Topic, p}] = true
				topics[tps.Topic] = true
			}
		}
	}
	var loose []tp
	committed.Each(func(r kadm.OffsetResponse) {
		if r.Err == nil && r.At >= 0 && !held[tp{r.Topic, r.Partition}] {
			loose = append(loose, tp{r.Topic, r.Partition})
			topics[r.Topic] = true
		}
	})
	sort.Slice(loose, func(i, j int) bool {
		if loose[i].t != loose[j].t {
			return loose[i].t < loose[j].t
		}
		return loose[i].p < loose[j].p
	})
	for _, l := range loose {
		rows = append(rows, owned{l, nil})
	}
	var ends kadm.ListedOffsets
	if len(topics) > 0 {
		names := make([]string, 0, len(topics))
		for t := range topics {
			names = append(names, t)
		}
		ends, err = adm.ListEndOffsets(cctx, names...)
		if err != nil {
			return nil, fmt.Errorf("list end offsets: %w", err)
		}
	}
	out := make([]cgOffsetRow, 0, len(rows))
	for _, r := range rows {
		row := cgOffsetRow{topic: r.t, partition: strconv.Itoa(int(r.p)), leaderEpoch: cgMissing,
			current: cgMissing, end: cgMissing, lag: cgMissing, consumer: cgMissing, host: cgMissing, client: cgMissing}
		if r.m != nil {
			row.consumer, row.host, row.client = r.m.id, r.m.host, r.m.clientID
		}
		c, hasCommit := committed.Lookup(r.t, r.p)
		hasCommit = hasCommit && c.Err == nil && c.At >= 0
		if hasCommit {
			row.current = strconv.FormatInt(c.At, 10)
			if c.LeaderEpoch >= 0 {
				row.leaderEpoch = strconv.Itoa(int(c.LeaderEpoch))
			}
		}
		if e, ok := ends.Lookup(r.t, r.p); ok && e.Err == nil && e.Offset >= 0 {
			row.end = strconv.FormatInt(e.Offset, 10)
			if hasCommit {
				row.lag = strconv.FormatInt(e.Offset-c.At, 10)
			}
		}
		out = append(out, row)
	}
	return out, nil
}

func (o *cgOptions) printOffsets(ctx context.Context, adm *kadm.Client, g cgGroup) error {
	o.noteState(g)
	rows, err := o.offsetRows(ctx, adm, g)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	// Kafka sizes the group, topic, consumer-id and host columns to the
	// data (at least 15 wide); the others are fixed.
	gw, tw, cw, hw := max(15, len(g.id)), 15, 15, 15
	for _, r := range rows {
		tw, cw, hw = max(tw, len(r.topic)), max(cw, len(r.consumer)), max(hw, len(r.host))
	}
	line := func(r cgOffsetRow, group string) {
		s := fmt.Sprintf("\n%-*s %-*s %-10s ", gw, group, tw, r.topic, r.partition)
		if o.verbose {
			s += fmt.Sprintf("%-15s ", r.leaderEpoch)
		}
		s += fmt.Sprintf("%-15s %-15s %-15s %-*s %-*s %s", r.current, r.end, r.lag, cw, r.consumer, hw, r.host, r.client)
		io.WriteString(o.stdout, s)
	}
	line(cgOffsetRow{topic: "TOPIC", partition: "PARTITION", leaderEpoch: "LEADER-EPOCH", current: "CURRENT-OFFSET",
		end: "LOG-END-OFFSET", lag: "LAG", consumer: "CONSUMER-ID", host: "HOST", client: "CLIENT-ID"}, "GROUP")
	for _, r := range rows {
		line(r, g.id)
	}
	fmt.Fprintln(o.stdout)
	return nil
}

// cgAssignment prints an assignment as Kafka 4's verbose members view does:
// topic:p1,p2 per topic, topics sorted.
func cgAssignment(s kadm.TopicsSet) string {
	var parts []string
	for _, tps := range s.Sorted() {
		if len(tps.Partitions) == 0 {
			continue
		}
		ps := make([]string, len(tps.Partitions))
		for i, p := range tps.Partitions {
			ps[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, tps.Topic+":"+strings.Join(ps, ","))
	}
	if len(parts) == 0 {
		return cgMissing
	}
	return strings.Join(parts, ";")
}

func (o *cgOptions) printMembers(g cgGroup) {
	o.noteState(g)
	gw, cw, iw, hw, lw := max(15, len(g.id)), 15, 17, 15, 15
	withInstance := false
	aw := 20
	for _, m := range g.members {
		cw, iw, hw, lw = max(cw, len(m.id)), max(iw, len(m.instanceID)), max(hw, len(m.host)), max(lw, len(m.clientID))
		withInstance = withInstance || m.instanceID != ""
		aw = max(aw, len(cgAssignment(m.assigned)))
	}
	line := func(group, id, instance, host, client, parts, epoch, current, targetEpoch, target string) string {
		s := fmt.Sprintf("%-*s %-*s ", gw, group, cw, id)
		if withInstance {
			s += fmt.Sprintf("%-*s ", iw, instance)
		}
		s += fmt.Sprintf("%-*s %-*s %-15s ", hw, host, lw, client, parts)
		if o.verbose {
			s += fmt.Sprintf("%-15s %-*s %-15s %s", epoch, aw, current, targetEpoch, target)
		}
		return s
	}
	fmt.Fprintln(o.stdout, "\n"+line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
		"CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"))
	for _, m := range g.members {
		n := 0
		m.assigned.Each(func(string, int32) { n++ })
		epoch, targetEpoch, target := cgMissing, cgMissing, cgMissing
		if m.kip848 {
			epoch, targetEpoch, target = strconv.Itoa(int(m.epoch)), strconv.Itoa(int(g.assignEpoch)), cgAssignment(m.target)
		}
		fmt.Fprintln(o.stdout, line(g.id, m.id, m.instanceID, m.host, m.clientID, strconv.Itoa(n),
			epoch, cgAssignment(m.assigned), targetEpoch, target))
	}
}

func (o *cgOptions) printState(g cgGroup) {
	o.noteState(g)
	coord := fmt.Sprintf("%s:%d  (%d)", g.coordinator.Host, g.coordinator.Port, g.coordinator.NodeID)
	gw, cw := max(15, len(g.id)), max(25, len(coord))
	line := func(group, coordinator, strategy, state, epoch, targetEpoch, members string) string {
		s := fmt.Sprintf("\n%-*s %-*s %-20s %-15s ", gw, group, cw, coordinator, strategy, state)
		if o.verbose {
			s += fmt.Sprintf("%-15s %-25s ", epoch, targetEpoch)
		}
		return s + members
	}
	epoch, targetEpoch := cgMissing, cgMissing
	if g.kip848 {
		epoch, targetEpoch = strconv.Itoa(int(g.epoch)), strconv.Itoa(int(g.assignEpoch))
	}
	io.WriteString(o.stdout, line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"))
	io.WriteString(o.stdout, line(g.id, coord, g.assignor, g.state, epoch, targetEpoch, strconv.Itoa(len(g.members))))
	fmt.Fprintln(o.stdout)
}

func (o *cgOptions) deleteGroups(ctx context.Context, adm *kadm.Client) error {
	ids, err := o.groupIDs(ctx, adm)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return errors.New("--all-groups: there are no consumer groups to delete")
	}
	cctx, cancel := o.op(ctx)
	defer cancel()
	resps, err := adm.DeleteGroups(cctx, ids...)
	if err != nil && len(resps) == 0 {
		return fmt.Errorf("delete groups: %w", err)
	}
	var deleted, failed []string
	for _, id := range ids {
		r, ok := resps[id]
		switch {
		case !ok:
			failed = append(failed, fmt.Sprintf("* Group '%s' could not be deleted due to: no answer from its coordinator (%v)", id, err))
		case r.Err != nil:
			failed = append(failed, fmt.Sprintf("* Group '%s' could not be deleted due to: %v", id, r.Err))
		default:
			deleted = append(deleted, id)
		}
	}
	if len(failed) == 0 {
		fmt.Fprintf(o.stdout, "Deletion of requested consumer groups ('%s') was successful.\n", strings.Join(deleted, ", "))
		return nil
	}
	fmt.Fprintln(o.stdout, "\nError: Deletion of some consumer groups failed:")
	for _, f := range failed {
		fmt.Fprintln(o.stdout, f)
	}
	if len(deleted) > 0 {
		fmt.Fprintf(o.stdout, "\nThese consumer groups were deleted successfully: '%s'\n", strings.Join(deleted, "', '"))
	}
	return fmt.Errorf("%d of %d consumer groups could not be deleted", len(failed), len(ids))
}

// topicPartitions resolves --topic arguments: named partitions as given,
// a bare topic to all of its partitions. Unknown topics are returned apart.
func (o *cgOptions) topicPartitions(ctx context.Context, adm *kadm.Client) (kadm.TopicsSet, map[string]error, error) {
	set := kadm.TopicsSet{}
	var whole []string
	for _, arg := range o.topics {
		t, ps, _ := cgParseTopicArg(arg)
		if ps == nil {
			whole = append(whole, t)
			continue
		}
		set.Add(t, ps...)
	}
	unknown := map[string]error{}
	if len(whole) > 0 {
		cctx, cancel := o.op(ctx)
		defer cancel()
		tds, err := adm.ListTopics(cctx, whole...)
		if err != nil {
			return nil, nil, fmt.Errorf("describe topics: %w", err)
		}
		for _, t := range whole {
			td, ok := tds[t]
			switch {
			case !ok:
				unknown[t] = kerr.UnknownTopicOrPartition
			case td.Err != nil:
				unknown[t] = td.Err
			default:
				for p := range td.Partitions {
					set.Add(t, p)
				}
			}
		}
	}
	return set, unknown, nil
}

func (o *cgOptions) deleteOffsets(ctx context.Context, adm *kadm.Client) error {
	group := o.groups[0]
	set, unknown, err := o.topicPartitions(ctx, adm)
	if err != nil {
		return err
	}
	type row struct {
		topic     string
		partition int32
		err       error
	}
	var rows []row
	for t, e := range unknown {
		rows = append(rows, row{t, -1, e})
	}
	var topErr error
	if len(set.Topics()) > 0 {
		cctx, cancel := o.op(ctx)
		defer cancel()
		resps, err := adm.DeleteOffsets(cctx, group, set)
		topErr = err
		set.Each(func(t string, p int32) {
			e := err
			if err == nil {
				if pe, ok := resps[t][p]; ok {
					e = pe
				} else {
					e = errors.New("no answer for this partition")
				}
			}
			rows = append(rows, row{t, p, e})
		})
	}
	failed := 0
	for _, r := range rows {
		if r.err != nil {
			failed++
		}
	}
	switch {
	case topErr == nil && failed == 0:
		fmt.Fprintf(o.stdout, "Request succeed for deleting offsets with topic %s group %s\n", strings.Join(o.topics, ", "), group)
	case errors.Is(topErr, kerr.InvalidGroupID):
		fmt.Fprintf(o.stdout, "\nError: '%s' is not valid.\n", group)
	case errors.Is(topErr, kerr.GroupIDNotFound):
		fmt.Fprintf(o.stdout, "\nError: '%s' does not exist.\n", group)
	case errors.Is(topErr, kerr.GroupAuthorizationFailed):
		fmt.Fprintf(o.stdout, "\nError: Access to '%s' is not authorized.\n", group)
	case errors.Is(topErr, kerr.NonEmptyGroup):
		fmt.Fprintf(o.stdout, "\nError: Deleting offsets of a consumer group '%s' is forbidden if the group is not empty.\n", group)
	case topErr == nil:
		fmt.Fprintln(o.stdout, "\nError: Encounter some partition level error, see the follow-up details:")
	default:
		fmt.Fprintf(o.stdout, "\nError: Encounter some unknown error: %v\n", topErr)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].topic != rows[j].topic {
			return rows[i].topic < rows[j].topic
		}
		return rows[i].partition < rows[j].partition
	})
	for i, r := range append([]row{{topic: "TOPIC"}}, rows...) {
		part, status := strconv.Itoa(int(r.partition)), "Successful"
		if r.partition < 0 {
			part = "Not Provided"
		}
		if r.err != nil {
			status = "Error: :" + r.err.Error()
		}
		if i == 0 {
			part, status = "PARTITION", "STATUS"
		}
		fmt.Fprintf(o.stdout, "\n%-30s %-15s %-15s", r.topic, part, status)
	}
	fmt.Fprintln(o.stdout)
	if topErr != nil || failed > 0 {
		return fmt.Errorf("offsets of group %s not deleted: %d of %d partitions failed", group, max(failed, 1), max(len(rows), 1))
	}
	return nil
}
