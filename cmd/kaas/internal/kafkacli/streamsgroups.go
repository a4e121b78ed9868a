package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka-streams-groups.sh: list, describe and delete the streams groups of
// Kafka Streams applications (KIP-1071), reset and delete their committed
// offsets, and delete their internal topics. Flags, refusals and output
// follow Kafka 4.2's StreamsGroupCommand.
var _ = register(Tool{Name: "streams-groups", Kafka: "kafka-streams-groups.sh", Run: runStreamsGroups})

// streamsStates are the states of a streams group, as Kafka spells them.
var streamsStates = []string{"Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead"}

type streamsOptions struct {
	// cg holds the connection, --group, the scopes (--input-topic as its
	// topics, --all-input-topics as its all-topics) and the reset
	// scenarios, and plans resets as consumer-groups does.
	cg    cgOptions
	given map[string]bool // the flags on the command line, by their own names

	deleteInternal    Repeated // --delete-internal-topic
	deleteAllInternal bool

	cl             *kgo.Client
	stdout, stderr io.Writer
}

func runStreamsGroups(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o := &streamsOptions{stdout: stdout, stderr: stderr}
	c := &o.cg
	c.stdout, c.stderr = stdout, stderr
	fs := NewFlagSet("streams-groups", stderr)
	c.conn.Register(fs)
	var list, describe, del, reset, delOffsets bool
	fs.BoolVar(&list, "list", false, "list all streams groups")
	fs.BoolVar(&describe, "describe", false, "describe streams groups: offset lag (default), --members or --state")
	fs.BoolVar(&del, "delete", false, "delete streams groups (--group, repeatable, or --all-groups); they must be empty")
	fs.BoolVar(&reset, "reset-offsets", false, "reset the committed offsets of inactive streams groups (--dry-run or --execute)")
	fs.BoolVar(&delOffsets, "delete-offsets", false, "delete a streams group's committed offsets of --input-topic or --all-input-topics")
	fs.Var(&c.groups, "group", "a streams group, the application.id (repeatable)")
	fs.BoolVar(&c.allGroups, "all-groups", false, "act on every streams group")
	fs.Var(&c.topics, "input-topic", "an input topic, or topic:0,1,... for some partitions (repeatable)")
	fs.BoolVar(&c.allTopics, "all-input-topics", false, "every source topic of the group's topology")
	timeoutMs := fs.Int64("timeout", 30000, "timeout of each request, in ms")
	c.registerReset(fs)
	fs.Var(&o.deleteInternal, "delete-internal-topic", "--reset-offsets --execute: also delete this internal topic of the group (repeatable)")
	fs.BoolVar(&o.deleteAllInternal, "delete-all-internal-topics", false, "--delete, --reset-offsets --execute: also delete the group's internal topics")
	fs.BoolVar(&c.members, "members", false, "--describe: the members and their tasks")
	fs.BoolVar(&c.offsets, "offsets", false, "--describe: the offset lag of the active tasks' partitions (the default)")
	fs.BoolVar(&c.verbose, "verbose", false, "--describe: more columns")
	fs.StringVar(&c.state, "state", "", "--describe: the group's state; --list: the STATE column, [filtered to states s1,s2]")
	given, err := Parse(fs, cgOptionalValues(args))
	if err != nil {
		return err
	}
	o.given, c.given = given, map[string]bool{}
	for name := range given {
		// The reset planner knows the scopes by consumer-groups' names.
		if as := map[string]string{"input-topic": "topic", "all-input-topics": "all-topics"}[name]; as != "" {
			name = as
		}
		c.given[name] = true
	}
	action, err := OneAction(fs, "list", "describe", "delete", "reset-offsets", "delete-offsets")
	if err != nil {
		return err
	}
	if *timeoutMs <= 0 {
		return fmt.Errorf("--timeout %d: must be a positive number of milliseconds", *timeoutMs)
	}
	c.timeout = time.Duration(*timeoutMs) * time.Millisecond
	if err := o.check(action); err != nil {
		return err
	}
	cl, adm, err := c.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	o.cl = cl
	switch action {
	case "list":
		states, _ := groupsParseStates(c.state, streamsStates)
		cctx, cancel := c.op(ctx)
		defer cancel()
		return groupsList(cctx, adm, stdout, "streams", o.given["state"], states)
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

// check refuses, before anything is sent, what StreamsGroupCommandOptions
// refuses, and flags the action asked for would ignore.
func (o *streamsOptions) check(action string) error {
	c := &o.cg
	g := o.given
	if c.conn.Bootstrap == "" {
		return errors.New("missing required argument --bootstrap-server")
	}
	if (g["dry-run"] || g["execute"]) && action != "reset-offsets" {
		return errors.New("only option --reset-offsets accepts --execute or --dry-run")
	}
	reset := []string{"reset-offsets"}
	rules := []groupsFlagRule{
		{"members", []string{"describe"}}, {"offsets", []string{"describe"}}, {"verbose", []string{"describe"}},
		{"state", []string{"describe", "list"}},
		{"group", []string{"describe", "delete", "reset-offsets", "delete-offsets"}},
		{"all-groups", []string{"describe", "delete", "reset-offsets"}},
		{"input-topic", []string{"reset-offsets", "delete-offsets"}},
		{"all-input-topics", []string{"reset-offsets", "delete-offsets"}},
		{"export", reset}, {"delete-internal-topic", reset},
		{"delete-all-internal-topics", []string{"reset-offsets", "delete"}},
	}
	for _, s := range cgResetScenarios {
		rules = append(rules, groupsFlagRule{s, reset})
	}
	if action == "delete" && (g["input-topic"] || g["all-input-topics"]) {
		return errors.New("Kafka Streams does not support topic-specific offset deletion from a streams group (use --delete-offsets)")
	}
	if err := groupsCheckPlacement(g, action, rules); err != nil {
		return err
	}
	if g["group"] && g["all-groups"] {
		return errors.New("option --group can't be used with option --all-groups")
	}
	if g["input-topic"] && g["all-input-topics"] {
		return errors.New("option --input-topic can't be used with option --all-input-topics")
	}
	for _, t := range c.topics {
		if _, _, err := cgParseTopicArg(t); err != nil {
			return fmt.Errorf("--input-topic: %w", err)
		}
	}
	needGroups := func() error {
		if !g["group"] && !g["all-groups"] {
			return fmt.Errorf("option --%s takes one of these options: --all-groups, --group", action)
		}
		return nil
	}
	switch action {
	case "list":
		if _, err := groupsParseStates(c.state, streamsStates); err != nil {
			return err
		}
	case "describe":
		if err := needGroups(); err != nil {
			return err
		}
		if err := groupsDescribeView(g, c.state); err != nil {
			return err
		}
	case "delete":
		return needGroups()
	case "delete-offsets":
		if !g["group"] || (!g["input-topic"] && !g["all-input-topics"]) {
			return errors.New("option --delete-offsets takes the --group and one of these options: --all-input-topics, --input-topic")
		}
		if len(c.groups) > 1 {
			return fmt.Errorf("option --delete-offsets supports only one --group at a time, but found: [%s]", strings.Join(c.groups, ", "))
		}
	case "reset-offsets":
		return o.checkReset(needGroups)
	}
	return nil
}

func (o *streamsOptions) checkReset(needGroups func() error) error {
	c := &o.cg
	g := o.given
	switch {
	case g["dry-run"] && g["execute"]:
		return errors.New("option --reset-offsets only accepts one of --execute and --dry-run")
	case !g["dry-run"] && !g["execute"]:
		return errors.New("option --reset-offsets takes the option: --execute or --dry-run")
	case g["delete-all-internal-topics"] && !g["execute"]:
		return errors.New("option --delete-all-internal-topics takes --execute when --reset-offsets is used")
	case g["delete-internal-topic"] && !g["execute"]:
		return errors.New("option --delete-internal-topic takes --reset-offsets when --execute is used")
	case g["delete-internal-topic"] && g["delete-all-internal-topics"]:
		return errors.New("option --delete-internal-topic can't be used with option --delete-all-internal-topics")
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
	if !g["from-file"] && !g["input-topic"] && !g["all-input-topics"] {
		return errors.New("one of the reset scopes should be defined: --all-input-topics, --input-topic")
	}
	for _, t := range o.deleteInternal {
		if !streamsInternalTopicName(t) {
			return fmt.Errorf("--delete-internal-topic %s: not the name of a Kafka Streams internal topic (-changelog, -repartition, ...)", t)
		}
	}
	return c.checkResetTimes(g)
}

// streamsFKJoinTopic matches the foreign-key join topics Kafka Streams
// names after their processors.
var streamsFKJoinTopic = regexp.MustCompile(`.+-KTABLE-FK-JOIN-SUBSCRIPTION-(REGISTRATION|RESPONSE)-\d+-topic$`)

// streamsInternalTopicName says whether name has the shape of a Kafka
// Streams internal topic, as Kafka's tool infers it.
func streamsInternalTopicName(name string) bool {
	for _, suffix := range []string{"-changelog", "-repartition", "-subscription-registration-topic", "-subscription-response-topic"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return streamsFKJoinTopic.MatchString(name)
}

// streamsInternalTopicOf says whether topic is an internal topic of the
// application group: its name starts with the application id and a dash.
func streamsInternalTopicOf(topic, group string) bool {
	return strings.HasPrefix(topic, group+"-") && streamsInternalTopicName(topic)
}

// streamsGroup is a described streams group and its coordinator.
type streamsGroup struct {
	kmsg.StreamsGroupDescribeResponseGroup
	coordinator kadm.BrokerDetail
}

// sourceTopics are the topics the group's tasks read (the subtopologies'
// source and repartition source topics), by subtopology.
func (g streamsGroup) sourceTopics() map[string][]string {
	out := map[string][]string{}
	if g.Topology == nil {
		return out
	}
	for _, s := range g.Topology.Subtopologies {
		ts := slices.Clone(s.SourceTopics)
		for _, r := range s.RepartitionSourceTopics {
			ts = append(ts, r.Topic)
		}
		out[s.SubtopologyID] = ts
	}
	return out
}

func (g streamsGroup) isSource(topic string) bool {
	for _, ts := range g.sourceTopics() {
		if slices.Contains(ts, topic) {
			return true
		}
	}
	return false
}

// internalTopics are the group's repartition and changelog topics that
// are not also source topics; those whose names do not mark them as this
// application's are left out with Kafka's warning, as they may be shared.
func (o *streamsOptions) internalTopics(g streamsGroup) []string {
	var out []string
	if g.Topology == nil {
		return nil
	}
	for _, s := range g.Topology.Subtopologies {
		var names []string
		for _, r := range s.RepartitionSourceTopics {
			names = append(names, r.Topic)
		}
		for _, c := range s.StateChangelogTopics {
			names = append(names, c.Topic)
		}
		for _, t := range names {
			switch {
			case slices.Contains(out, t) || slices.Contains(s.SourceTopics, t):
			case !streamsInternalTopicOf(t, g.Group):
				fmt.Fprintf(o.stdout, "\nError: The internal topic '%s' is not inferred as internal and thus will not be deleted with the group '%s'.\n", t, g.Group)
			default:
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// describeGroup describes one streams group with StreamsGroupDescribe,
// sent to the group's coordinator (franz-go routes the group requests it
// knows, not this one). A group that does not exist, or is not a streams
// group, answers GROUP_ID_NOT_FOUND.
func (o *streamsOptions) describeGroup(ctx context.Context, adm *kadm.Client, group string) (streamsGroup, error) {
	cctx, cancel := o.cg.op(ctx)
	defer cancel()
	coord, ok := adm.FindGroupCoordinators(cctx, group)[group]
	if !ok {
		return streamsGroup{}, fmt.Errorf("find the coordinator of %s: no answer", group)
	}
	if coord.Err != nil {
		return streamsGroup{}, fmt.Errorf("find the coordinator of %s: %w", group, coord.Err)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(cctx, o.cl.Broker(int(coord.NodeID)))
	if err != nil {
		return streamsGroup{}, fmt.Errorf("describe streams group %s: %w", group, err)
	}
	if len(resp.Groups) != 1 {
		return streamsGroup{}, fmt.Errorf("describe streams group %s: %d groups in the answer", group, len(resp.Groups))
	}
	d := streamsGroup{StreamsGroupDescribeResponseGroup: resp.Groups[0],
		coordinator: kadm.BrokerDetail{NodeID: coord.NodeID, Host: coord.Host, Port: coord.Port}}
	if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
		if d.ErrorMessage != nil {
			err = fmt.Errorf("%w (%s)", err, *d.ErrorMessage)
		}
		return d, fmt.Errorf("describe streams group %s: %w", group, err)
	}
	sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].MemberID < d.Members[j].MemberID })
	return d, nil
}

// groupIDs are the groups --group or --all-groups name.
func (o *streamsOptions) groupIDs(ctx context.Context, adm *kadm.Client) ([]string, error) {
	if !o.cg.allGroups {
		return cgUnique(o.cg.groups), nil
	}
	cctx, cancel := o.cg.op(ctx)
	defer cancel()
	listed, err := groupsListed(cctx, adm, "streams")
	if err != nil {
		return nil, err
	}
	return listed.Groups(), nil
}

func (o *streamsOptions) describe(ctx context.Context, adm *kadm.Client) error {
	ids, err := o.groupIDs(ctx, adm)
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range ids {
		g, err := o.describeGroup(ctx, adm, id)
		if errors.Is(err, kerr.GroupIDNotFound) {
			missing = append(missing, fmt.Sprintf("Streams group '%s' does not exist.", id))
			continue
		}
		if err != nil {
			return err
		}
		switch {
		case o.cg.members:
			o.printMembers(g)
		case o.given["state"]:
			o.printState(g)
		default:
			if err := o.printOffsets(ctx, adm, g); err != nil {
				return err
			}
		}
	}
	if len(missing) > 0 {
		return errors.New(strings.Join(missing, " "))
	}
	return nil
}

// noteState writes Kafka's note about an empty or dead group (Kafka's
// streams tool prints it on standard output).
func (o *streamsOptions) noteState(g streamsGroup) {
	switch g.State {
	case "Dead":
		fmt.Fprintf(o.stdout, "\nError: Streams group '%s' does not exist.\n", g.Group)
	case "Empty":
		fmt.Fprintf(o.stdout, "\nError: Streams group '%s' has no active members.\n", g.Group)
	}
}

func (o *streamsOptions) printState(g streamsGroup) {
	o.noteState(g)
	coord := fmt.Sprintf("%s:%d (%d)", g.coordinator.Host, g.coordinator.Port, g.coordinator.NodeID)
	gw, cw := max(15, len(g.Group)), max(25, len(coord))
	members := strconv.Itoa(len(g.Members))
	if o.cg.verbose {
		f := "%-*s %-*s %-25s %-15s %-25s %s\n"
		fmt.Fprintf(o.stdout, f, gw, "GROUP", cw, "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS")
		fmt.Fprintf(o.stdout, f, gw, g.Group, cw, coord, g.State, strconv.Itoa(int(g.Epoch)), strconv.Itoa(int(g.AssignmentEpoch)), members)
		return
	}
	f := "%-*s %-*s %-25s %s\n"
	fmt.Fprintf(o.stdout, f, gw, "GROUP", cw, "COORDINATOR (ID)", "STATE", "#MEMBERS")
	fmt.Fprintf(o.stdout, f, gw, g.Group, cw, coord, g.State, members)
}

// streamsTasks prints a member's tasks as Kafka's tool does:
// "ACTIVE: 0:[0,1]; STANDBY: 1:[2]; ", kinds without tasks left out.
func streamsTasks(a kmsg.StreamsAssignment, prefix string) string {
	var b strings.Builder
	for _, k := range []struct {
		name  string
		tasks []kmsg.TaskIDs
	}{{"ACTIVE", a.ActiveTasks}, {"STANDBY", a.StandbyTasks}, {"WARMUP", a.WarmupTasks}} {
		if len(k.tasks) == 0 {
			continue
		}
		b.WriteString(prefix + k.name + ": ")
		for _, t := range k.tasks {
			ps := make([]string, len(t.Partitions))
			for i, p := range slices.Sorted(slices.Values(t.Partitions)) {
				ps[i] = strconv.Itoa(int(p))
			}
			fmt.Fprintf(&b, "%s:[%s]; ", t.SubtopologyID, strings.Join(ps, ","))
		}
	}
	return b.String()
}

func (o *streamsOptions) printMembers(g streamsGroup) {
	if g.State == "Dead" || len(g.Members) == 0 {
		return
	}
	gw, mw, pw, cw := max(15, len(g.Group)), 15, 15, 15
	for _, m := range g.Members {
		mw, pw, cw = max(mw, len(m.MemberID)), max(pw, len(m.ProcessID)), max(cw, len(m.ClientID))
	}
	if !o.cg.verbose {
		f := "%-*s %-*s %-*s %-*s %s\n"
		fmt.Fprintf(o.stdout, f, gw, "GROUP", mw, "MEMBER", pw, "PROCESS", cw, "CLIENT-ID", "ASSIGNMENTS")
		for _, m := range g.Members {
			fmt.Fprintf(o.stdout, f, gw, g.Group, mw, m.MemberID, pw, m.ProcessID, cw, m.ClientID, streamsTasks(m.Assignment, ""))
		}
		return
	}
	topologyEpoch := cgMissing
	if g.Topology != nil {
		topologyEpoch = strconv.Itoa(int(g.Topology.Epoch))
	}
	// Kafka's layout runs TOPOLOGY-EPOCH into MEMBER without a space.
	f := "%-*s %-25s %-15s%-*s %-15s %-15s %-*s %-*s %s\n"
	fmt.Fprintf(o.stdout, f, gw, "GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", mw, "MEMBER", "MEMBER-PROTOCOL", "MEMBER-EPOCH", pw, "PROCESS", cw, "CLIENT-ID", "ASSIGNMENTS")
	for _, m := range g.Members {
		protocol := "streams"
		if m.IsClassic {
			protocol = "classic"
		}
		fmt.Fprintf(o.stdout, f, gw, g.Group, strconv.Itoa(int(g.AssignmentEpoch)), topologyEpoch, mw, m.MemberID, protocol,
			strconv.Itoa(int(m.MemberEpoch)), pw, m.ProcessID, cw, m.ClientID, streamsTasks(m.Assignment, "")+streamsTasks(m.TargetAssignment, "TARGET-"))
	}
}

// committed are the group's committed offsets of its source topics.
func (o *streamsOptions) committed(ctx context.Context, adm *kadm.Client, g streamsGroup) (map[cgTP]kadm.OffsetResponse, error) {
	cctx, cancel := o.cg.op(ctx)
	defer cancel()
	resps, err := adm.FetchOffsets(cctx, g.Group)
	if err != nil {
		return nil, fmt.Errorf("fetch the offsets of streams group %s: %w", g.Group, err)
	}
	out := map[cgTP]kadm.OffsetResponse{}
	resps.Each(func(r kadm.OffsetResponse) {
		if r.Err == nil && r.At >= 0 && g.isSource(r.Topic) {
			out[cgTP{r.Topic, r.Partition}] = r
		}
	})
	return out, nil
}

// printOffsets prints the lag of each partition the members' active tasks
// read: the log end less the committed offset (less the log start where
// nothing is committed), as Kafka's tool computes it.
func (o *streamsOptions) printOffsets(ctx context.Context, adm *kadm.Client, g streamsGroup) error {
	if g.State == "Dead" || len(g.Members) == 0 {
		return nil
	}
	sources := g.sourceTopics()
	seen := map[cgTP]bool{}
	var tps []cgTP
	for _, m := range g.Members {
		for _, task := range m.Assignment.ActiveTasks {
			topics, ok := sources[task.SubtopologyID]
			if !ok {
				return fmt.Errorf("streams group %s: subtopology %s not found in the group's description", g.Group, task.SubtopologyID)
			}
			for _, t := range topics {
				for _, p := range task.Partitions {
					if tp := (cgTP{t, p}); !seen[tp] {
						seen[tp] = true
						tps = append(tps, tp)
					}
				}
			}
		}
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
	starts, err := o.cg.listOffsets(ctx, adm, cgStart, 0, tps)
	if err != nil {
		return err
	}
	ends, err := o.cg.listOffsets(ctx, adm, cgEnd, 0, tps)
	if err != nil {
		return err
	}
	committed, err := o.committed(ctx, adm, g)
	if err != nil {
		return err
	}
	o.noteState(g)
	gw, tw := max(15, len(g.Group)), 15
	for _, tp := range tps {
		tw = max(tw, len(tp.topic))
	}
	if o.cg.verbose {
		fmt.Fprintf(o.stdout, "%-*s %-*s %-10s %-15s %-15s %-15s %-15s\n", gw, "GROUP", tw, "TOPIC", "PARTITION", "CURRENT-OFFSET", "LEADER-EPOCH", "LOG-END-OFFSET", "OFFSET-LAG")
	} else {
		fmt.Fprintf(o.stdout, "%-*s %-*s %-10s %s\n", gw, "GROUP", tw, "TOPIC", "PARTITION", "OFFSET-LAG")
	}
	for _, tp := range tps {
		current, epoch := cgMissing, cgMissing
		lag := ends[tp] - starts[tp]
		if c, ok := committed[tp]; ok {
			current, lag = strconv.FormatInt(c.At, 10), ends[tp]-c.At
			if c.LeaderEpoch >= 0 {
				epoch = strconv.Itoa(int(c.LeaderEpoch))
			}
		}
		part := strconv.Itoa(int(tp.partition))
		if o.cg.verbose {
			fmt.Fprintf(o.stdout, "%-*s %-*s %-10s %-15s %-15s %-15s %-15s\n", gw, g.Group, tw, tp.topic, part, current, epoch, strconv.FormatInt(ends[tp], 10), strconv.FormatInt(lag, 10))
		} else {
			fmt.Fprintf(o.stdout, "%-*s %-*s %-10s %d\n", gw, g.Group, tw, tp.topic, part, lag)
		}
	}
	return nil
}

// deleteGroups deletes streams groups that are empty, refusing as Kafka's
// tool does (before asking the broker) the groups that are not streams
// groups or still have members; with --delete-all-internal-topics the
// internal topics of the groups deleted go too.
func (o *streamsOptions) deleteGroups(ctx context.Context, adm *kadm.Client) error {
	cctx, cancel := o.cg.op(ctx)
	listed, err := groupsListed(cctx, adm, "streams")
	cancel()
	if err != nil {
		return err
	}
	ids := cgUnique(o.cg.groups)
	if o.cg.allGroups {
		if ids = listed.Groups(); len(ids) == 0 {
			return errors.New("--all-groups: there are no streams groups to delete")
		}
	}
	refused := map[string]string{}
	for _, id := range ids {
		l, ok := listed[id]
		switch {
		case !ok:
			refused[id] = fmt.Sprintf("Group '%s' does not exist or is not a streams group.", id)
		case l.State == "Dead":
			refused[id] = fmt.Sprintf("Streams group '%s' group state is DEAD.", id)
		case l.State != "Empty":
			refused[id] = fmt.Sprintf("Streams group '%s' is not EMPTY.", id)
		}
	}
	// The topology names the internal topics: read it before the group
	// (and its topology) is gone.
	internal := map[string][]string{}
	if o.deleteAllInternal {
		for _, id := range ids {
			if _, no := refused[id]; no {
				continue
			}
			g, err := o.describeGroup(ctx, adm, id)
			if err != nil {
				return err
			}
			if ts := o.internalTopics(g); len(ts) > 0 {
				internal[id] = ts
			}
		}
	}
	cctx, cancel = o.cg.op(ctx)
	defer cancel()
	deleted, delErr := groupsDeleted(cctx, adm, o.stdout, "streams", ids, refused)
	var withTopics []string
	failures := map[string]error{}
	for _, id := range deleted {
		ts := internal[id]
		if len(ts) == 0 {
			continue
		}
		withTopics = append(withTopics, id)
		resps, err := adm.DeleteTopics(cctx, ts...)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			failures[id] = err
			for _, t := range ts {
				if r, ok := resps[t]; !ok || r.Err != nil {
					fmt.Fprintf(o.stdout, "Failed to delete internal topic: %s\n", t)
				}
			}
		}
	}
	switch {
	case len(withTopics) == 0:
	case len(failures) == 0:
		fmt.Fprintf(o.stdout, "Deletion of associated internal topics of the streams groups ('%s') was successful.\n", strings.Join(withTopics, "', '"))
	default:
		fmt.Fprintln(o.stdout, "Deletion of some associated internal topics failed:")
		for _, id := range withTopics {
			if e, ok := failures[id]; ok {
				fmt.Fprintf(o.stdout, "* Internal topics of the streams group '%s' could not be deleted due to: %v\n", id, e)
			}
		}
	}
	if delErr != nil {
		return delErr
	}
	// Internal topics already gone are no failure, as in Kafka's tool.
	for id, e := range failures {
		if !errors.Is(e, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("internal topics of streams group %s not deleted: %w", id, e)
		}
	}
	return nil
}

// deleteOffsets deletes a streams group's committed offsets (OffsetDelete)
// of --input-topic or of every source topic it has offsets for.
func (o *streamsOptions) deleteOffsets(ctx context.Context, adm *kadm.Client) error {
	group := o.cg.groups[0]
	type row struct {
		tp  cgTP
		err error
	}
	var rows []row
	set := kadm.TopicsSet{}
	if o.cg.allTopics {
		g, err := o.describeGroup(ctx, adm, group)
		if err != nil {
			return err
		}
		committed, err := o.committed(ctx, adm, g)
		if err != nil {
			return err
		}
		for tp := range committed {
			set.Add(tp.topic, tp.partition)
		}
	} else {
		s, unknown, err := o.cg.topicPartitions(ctx, adm)
		if err != nil {
			return err
		}
		set = s
		for t, e := range unknown {
			rows = append(rows, row{cgTP{t, -1}, e})
		}
	}
	var topErr error
	if len(set) > 0 {
		cctx, cancel := o.cg.op(ctx)
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
			rows = append(rows, row{cgTP{t, p}, e})
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
		fmt.Fprintf(o.stdout, "Request succeeded for deleting offsets from group %s.\n", group)
	case topErr != nil:
		fmt.Fprintf(o.stdout, "\nError: %v\n", topErr)
	default:
		fmt.Fprintln(o.stdout, "\nError: Encountered some partition-level error, see the follow-up details.")
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].tp.topic != rows[j].tp.topic {
			return rows[i].tp.topic < rows[j].tp.topic
		}
		return rows[i].tp.partition < rows[j].tp.partition
	})
	tw := 15
	for _, r := range rows {
		tw = max(tw, len(r.tp.topic))
	}
	fmt.Fprintf(o.stdout, "\n%-*s %-10s %-15s", tw, "TOPIC", "PARTITION", "STATUS")
	for _, r := range rows {
		part, status := strconv.Itoa(int(r.tp.partition)), "Successful"
		if r.tp.partition < 0 {
			part = cgMissing
		}
		if r.err != nil {
			status = "Error: " + r.err.Error()
		}
		fmt.Fprintf(o.stdout, "\n%-*s %-10s %-15s", tw, r.tp.topic, part, status)
	}
	fmt.Fprintln(o.stdout)
	if topErr != nil || failed > 0 {
		return fmt.Errorf("offsets of streams group %s not deleted: %d of %d partitions failed", group, max(failed, 1), max(len(rows), 1))
	}
	return nil
}

// resetOffsets plans new committed offsets for inactive streams groups,
// prints (or --export) the plan and, with --execute, commits it and
// deletes the internal topics asked for.
func (o *streamsOptions) resetOffsets(ctx context.Context, adm *kadm.Client) error {
	c := &o.cg
	var filePlans map[string]cgPlan
	if c.given["from-file"] {
		data, err := os.ReadFile(c.fromFile)
		if err != nil {
			return fmt.Errorf("--from-file: %w", err)
		}
		single := ""
		if len(c.groups) == 1 {
			single = c.groups[0]
		}
		if filePlans, err = cgParseResetPlan(string(data), single); err != nil {
			return err
		}
	}
	ids, err := o.groupIDs(ctx, adm)
	if err != nil {
		return err
	}
	// Describe every group first: nothing is changed unless every named
	// internal topic belongs to one of them.
	described := map[string]streamsGroup{}
	for _, id := range ids {
		g, err := o.describeGroup(ctx, adm, id)
		switch {
		case errors.Is(err, kerr.GroupIDNotFound):
			g = streamsGroup{StreamsGroupDescribeResponseGroup: kmsg.NewStreamsGroupDescribeResponseGroup()}
			g.Group, g.State = id, "Dead"
		case err != nil:
			return err
		}
		described[id] = g
	}
	for _, t := range o.deleteInternal {
		if !slices.ContainsFunc(ids, func(id string) bool { return streamsInternalTopicOf(t, id) }) {
			return fmt.Errorf("--delete-internal-topic %s: not an internal topic of streams group %s (its name must start with the application id and a dash)", t, strings.Join(ids, " or "))
		}
	}
	plans := map[string]cgPlan{}
	var planned, refusals []string
	for _, id := range ids {
		g := described[id]
		if g.State != "Empty" && g.State != "Dead" {
			refusals = append(refusals, fmt.Sprintf("Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", id, g.State))
			continue
		}
		plan, refusal, err := o.planGroup(ctx, adm, g, filePlans)
		if err != nil {
			return err
		}
		if refusal != "" {
			refusals = append(refusals, refusal)
			continue
		}
		if c.execute {
			if len(plan) > 0 {
				if err := c.commit(ctx, adm, id, plan); err != nil {
					return err
				}
			}
			if err := o.deleteInternalTopics(ctx, adm, g); err != nil {
				refusals = append(refusals, err.Error())
			}
		}
		plans[id] = plan
		planned = append(planned, id)
	}
	if c.export {
		fmt.Fprintln(o.stdout, cgExportCSV(plans, planned, len(c.groups) != 1))
	} else if len(planned) > 0 {
		groupsPrintResetPlan(o.stdout, planned, plans)
	}
	if len(refusals) > 0 {
		return errors.New(strings.Join(refusals, " "))
	}
	return nil
}

// planGroup computes one inactive group's new offsets: from the file, or
// by the scenario over the scope (--all-input-topics: the source topics
// the group has offsets for; --input-topic: partitions that must all have
// offsets, else Kafka's refusal).
func (o *streamsOptions) planGroup(ctx context.Context, adm *kadm.Client, g streamsGroup, filePlans map[string]cgPlan) (cgPlan, string, error) {
	c := o.cg
	if filePlans != nil {
		plan := filePlans[g.Group]
		if plan == nil {
			return nil, fmt.Sprintf("No reset plan for group %s found", g.Group), nil
		}
		plan, err := c.clamp(ctx, adm, plan)
		return plan, "", err
	}
	committed, err := c.committed(ctx, adm, g.Group)
	if err != nil {
		return nil, "", err
	}
	if c.allTopics {
		// Hand the planner the source partitions with offsets as an
		// explicit --input-topic list.
		byTopic := map[string][]string{}
		for tp := range committed {
			if g.isSource(tp.topic) {
				byTopic[tp.topic] = append(byTopic[tp.topic], strconv.Itoa(int(tp.partition)))
			}
		}
		c.allTopics, c.topics = false, nil
		for t, ps := range byTopic {
			c.topics = append(c.topics, t+":"+strings.Join(ps, ","))
		}
		if len(c.topics) == 0 {
			return cgPlan{}, "", nil
		}
	} else {
		set, unknown, err := c.topicPartitions(ctx, adm)
		if err != nil {
			return nil, "", err
		}
		for t, e := range unknown {
			return nil, "", fmt.Errorf("--input-topic %s: %w", t, e)
		}
		in := true
		set.Each(func(t string, p int32) {
			_, ok := committed[cgTP{t, p}]
			in = in && ok
		})
		if !in {
			return nil, fmt.Sprintf("One or more topics are not part of the group '%s'.", g.Group), nil
		}
	}
	plan, err := c.planGroup(ctx, adm, g.Group)
	return plan, "", err
}

// deleteInternalTopics deletes, after a reset, the group's internal topics
// --delete-all-internal-topics or --delete-internal-topic ask for.
func (o *streamsOptions) deleteInternalTopics(ctx context.Context, adm *kadm.Client, g streamsGroup) error {
	var topics []string
	if o.deleteAllInternal {
		topics = o.internalTopics(g)
	}
	for _, t := range o.deleteInternal {
		if streamsInternalTopicOf(t, g.Group) {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return nil
	}
	cctx, cancel := o.cg.op(ctx)
	defer cancel()
	resps, err := adm.DeleteTopics(cctx, topics...)
	if err == nil {
		err = resps.Error()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		fmt.Fprintf(o.stdout, "\nError: Deleting internal topics for group '%s' failed because the topics do not exist.\n", g.Group)
	default:
		fmt.Fprintf(o.stdout, "\nError: Deleting internal topics for group '%s' failed due to %v\n", g.Group, err)
	}
	return fmt.Errorf("internal topics of streams group %s not deleted: %w", g.Group, err)
}
