package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// kafka-share-groups.sh: list, describe and delete share groups (KIP-932),
// reset and delete their share-partition start offsets. Flags, refusals
// and output follow Kafka 4's ShareGroupCommand.
var _ = register(Tool{Name: "share-groups", Kafka: "kafka-share-groups.sh", Run: runShareGroups})

// shareStates are the states of a share group, as Kafka spells them.
var shareStates = []string{"Empty", "Stable", "Dead"}

type shareOptions struct {
	cg cgOptions // connection, --group, --topic, scenarios; plans resets

	stdout, stderr io.Writer
}

func runShareGroups(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o := &shareOptions{stdout: stdout, stderr: stderr}
	c := &o.cg
	c.stdout, c.stderr = stdout, stderr
	fs := NewFlagSet("share-groups", stderr)
	c.conn.Register(fs)
	var list, describe, del, reset, delOffsets bool
	fs.BoolVar(&list, "list", false, "list all share groups")
	fs.BoolVar(&describe, "describe", false, "describe share groups: start offsets and lag (default), --members or --state")
	fs.BoolVar(&del, "delete", false, "delete share groups (--group, repeatable, or --all-groups); they must be empty")
	fs.BoolVar(&reset, "reset-offsets", false, "reset the start offsets of an empty share group (--dry-run or --execute)")
	fs.BoolVar(&delOffsets, "delete-offsets", false, "delete a share group's offsets of --topic (repeatable)")
	fs.Var(&c.groups, "group", "a share group (repeatable for --describe and --delete)")
	fs.BoolVar(&c.allGroups, "all-groups", false, "--describe, --delete: every share group")
	fs.Var(&c.topics, "topic", "a topic (--reset-offsets: also topic:0,1,...; repeatable)")
	fs.BoolVar(&c.allTopics, "all-topics", false, "--reset-offsets: every topic the group has offsets for")
	timeoutMs := fs.Int64("timeout", 30000, "timeout of each request, in ms")
	fs.BoolVar(&c.dryRun, "dry-run", false, "--reset-offsets: only show the new offsets")
	fs.BoolVar(&c.execute, "execute", false, "--reset-offsets: set the new offsets")
	fs.StringVar(&c.toDatetime, "to-datetime", "", "reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[zone]")
	fs.BoolVar(&c.toEarliest, "to-earliest", false, "reset to the log start")
	fs.BoolVar(&c.toLatest, "to-latest", false, "reset to the log end")
	fs.BoolVar(&c.members, "members", false, "--describe: the members")
	fs.BoolVar(&c.offsets, "offsets", false, "--describe: start offsets and lag (the default)")
	fs.BoolVar(&c.verbose, "verbose", false, "--describe: more columns")
	fs.StringVar(&c.state, "state", "", "--describe: the group's state; --list: the STATE column, [filtered to states s1,s2]")
	given, err := Parse(fs, cgOptionalValues(args))
	if err != nil {
		return err
	}
	c.given = given
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
	_, adm, err := c.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	switch action {
	case "list":
		states, _ := groupsParseStates(c.state, shareStates)
		cctx, cancel := c.op(ctx)
		defer cancel()
		return groupsList(cctx, adm, stdout, "share", c.given["state"], states)
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

// check refuses, before anything is sent, what ShareGroupCommandOptions
// refuses, and flags the action asked for would ignore.
func (o *shareOptions) check(action string) error {
	c := &o.cg
	g := c.given
	if c.conn.Bootstrap == "" {
		return errors.New("missing required argument --bootstrap-server")
	}
	scenario := []string{"reset-offsets"}
	if err := groupsCheckPlacement(g, action, []groupsFlagRule{
		{"members", []string{"describe"}}, {"offsets", []string{"describe"}}, {"verbose", []string{"describe"}},
		{"state", []string{"describe", "list"}},
		{"group", []string{"describe", "delete", "reset-offsets", "delete-offsets"}},
		{"all-groups", []string{"describe", "delete"}},
		{"topic", []string{"reset-offsets", "delete-offsets"}},
		{"all-topics", scenario}, {"dry-run", scenario}, {"execute", scenario},
		{"to-datetime", scenario}, {"to-earliest", scenario}, {"to-latest", scenario},
	}); err != nil {
		if action == "delete" && g["topic"] {
			return errors.New("option --delete does not take the option: --topic (use --delete-offsets)")
		}
		return err
	}
	if g["group"] && g["all-groups"] {
		return errors.New("option --group can't be used with option --all-groups")
	}
	switch action {
	case "list":
		if _, err := groupsParseStates(c.state, shareStates); err != nil {
			return err
		}
	case "describe":
		if !g["group"] && !g["all-groups"] {
			return errors.New("option --describe takes one of these options: --all-groups, --group")
		}
		if err := groupsDescribeView(g, c.state); err != nil {
			return err
		}
	case "delete":
		if !g["group"] && !g["all-groups"] {
			return errors.New("option --delete takes the options --group or --all-groups")
		}
	case "delete-offsets":
		if !g["group"] || !g["topic"] {
			return errors.New("option --delete-offsets takes the following options: --group, --topic")
		}
		if len(c.groups) > 1 {
			return errors.New("option --delete-offsets takes one --group")
		}
		for _, t := range c.topics {
			// A share group's offsets are deleted a whole topic at a time.
			if strings.Contains(t, ":") {
				return fmt.Errorf("--topic %q: --delete-offsets takes topic names, without partitions", t)
			}
		}
	case "reset-offsets":
		return o.checkReset()
	}
	return nil
}

func (o *shareOptions) checkReset() error {
	c := &o.cg
	g := c.given
	switch {
	case g["dry-run"] && g["execute"]:
		return errors.New("option --reset-offsets only accepts one of --execute and --dry-run")
	case !g["dry-run"] && !g["execute"]:
		return errors.New("option --reset-offsets takes the option: --execute or --dry-run")
	case !g["group"]:
		return errors.New("option --reset-offsets takes the option: --group")
	case len(c.groups) > 1:
		return errors.New("option --reset-offsets takes one --group")
	case !g["topic"] && !g["all-topics"]:
		return errors.New("option --reset-offsets takes one of these options: --all-topics, --topic")
	case g["topic"] && g["all-topics"]:
		return errors.New("option --topic can't be used with option --all-topics")
	}
	var scenarios []string
	for _, s := range []string{"to-datetime", "to-earliest", "to-latest"} {
		if g[s] {
			scenarios = append(scenarios, "--"+s)
		}
	}
	switch len(scenarios) {
	case 0:
		return errors.New("option --reset-offsets takes one of these options: --to-datetime, --to-earliest, --to-latest")
	case 1:
	default:
		return fmt.Errorf("option %s can't be used with option %s", scenarios[0], scenarios[1])
	}
	for _, t := range c.topics {
		if _, _, err := cgParseTopicArg(t); err != nil {
			return err
		}
	}
	if g["to-datetime"] {
		if _, err := cgParseDateTime(c.toDatetime, time.Local); err != nil {
			return fmt.Errorf("--to-datetime: %w", err)
		}
	}
	return nil
}

// groupIDs are the groups --group or --all-groups name.
func (o *shareOptions) groupIDs(ctx context.Context, adm *kadm.Client) ([]string, error) {
	if !o.cg.allGroups {
		return cgUnique(o.cg.groups), nil
	}
	cctx, cancel := o.cg.op(ctx)
	defer cancel()
	listed, err := groupsListed(cctx, adm, "share")
	if err != nil {
		return nil, err
	}
	return listed.Groups(), nil
}

// describeGroups describes share groups; the ones that do not exist (or
// are not share groups) are returned apart, sorted.
func (o *shareOptions) describeGroups(ctx context.Context, adm *kadm.Client, ids []string) ([]kadm.DescribedShareGroup, []string, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	cctx, cancel := o.cg.op(ctx)
	defer cancel()
	described, err := adm.DescribeShareGroups(cctx, ids...)
	if err != nil {
		return nil, nil, fmt.Errorf("describe share groups: %w", err)
	}
	var found []kadm.DescribedShareGroup
	var missing []string
	for _, id := range ids {
		d, ok := described[id]
		switch {
		case !ok || errors.Is(d.Err, kerr.GroupIDNotFound) || (d.Err == nil && d.GroupState == "Dead"):
			missing = append(missing, id)
		case d.Err != nil:
			return nil, nil, fmt.Errorf("describe share group %s: %w", id, d.Err)
		default:
			found = append(found, d)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].GroupID < found[j].GroupID })
	sort.Strings(missing)
	return found, missing, nil
}

// shareMissing is Kafka's message for share groups that do not exist.
func shareMissing(missing []string) error {
	if len(missing) == 0 {
		return nil
	}
	msgs := make([]string, len(missing))
	for i, g := range missing {
		msgs[i] = fmt.Sprintf("Share group '%s' does not exist.", g)
	}
	return errors.New(strings.Join(msgs, " "))
}

func (o *shareOptions) describe(ctx context.Context, adm *kadm.Client) error {
	ids, err := o.groupIDs(ctx, adm)
	if err != nil {
		return err
	}
	groups, missing, err := o.describeGroups(ctx, adm, ids)
	if err != nil {
		return err
	}
	for _, g := range groups {
		switch {
		case o.cg.members:
			o.printMembers(g)
		case o.cg.given["state"]:
			o.printState(g)
		default:
			if err := o.printOffsets(ctx, adm, g); err != nil {
				return err
			}
		}
	}
	return shareMissing(missing)
}

// noteEmpty writes Kafka's note about a group without members.
func (o *shareOptions) noteEmpty(g kadm.DescribedShareGroup) {
	if g.GroupState == "Empty" {
		fmt.Fprintf(o.stderr, "\nShare group '%s' has no active members.\n", g.GroupID)
	}
}

// shareValue prints a start offset, lag or leader epoch; Kafka prints "-"
// for the ones the broker does not know (negative).
func shareValue(v int64) string {
	if v < 0 {
		return cgMissing
	}
	return strconv.FormatInt(v, 10)
}

// printOffsets prints each share-partition's start offset and lag
// (DescribeShareGroupOffsets of every topic the group has state for).
func (o *shareOptions) printOffsets(ctx context.Context, adm *kadm.Client, g kadm.DescribedShareGroup) error {
	cctx, cancel := o.cg.op(ctx)
	defer cancel()
	resps, err := adm.DescribeShareGroupOffsets(cctx, g.GroupID)
	if err != nil {
		return fmt.Errorf("describe the offsets of share group %s: %w", g.GroupID, err)
	}
	d, ok := resps[g.GroupID]
	if !ok {
		return fmt.Errorf("describe the offsets of share group %s: no answer", g.GroupID)
	}
	if d.Err != nil {
		return fmt.Errorf("describe the offsets of share group %s: %w", g.GroupID, d.Err)
	}
	rows := d.Offsets.Sorted()
	if len(rows) == 0 {
		fmt.Fprintf(o.stdout, "\nShare group '%s' has no offset information.\n", g.GroupID)
		return nil
	}
	gw, tw := max(15, len(g.GroupID)), 15
	for _, r := range rows {
		tw = max(tw, len(r.Topic))
	}
	line := func(group, topic, partition, epoch, start, lag string) {
		s := fmt.Sprintf("\n%-*s %-*s %-10s ", gw, group, tw, topic, partition)
		if o.cg.verbose {
			s += fmt.Sprintf("%-13s ", epoch)
		}
		io.WriteString(o.stdout, s+fmt.Sprintf("%-13s %s", start, lag))
	}
	line("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG")
	for _, r := range rows {
		if r.Err != nil {
			return fmt.Errorf("describe the offsets of share group %s: %s-%d: %w", g.GroupID, r.Topic, r.Partition, r.Err)
		}
		start, lag, epoch := shareValue(r.StartOffset), shareValue(r.Lag), shareValue(int64(r.LeaderEpoch))
		if r.StartOffset < 0 {
			// No start offset: Kafka's admin client has no offset
			// information for the partition at all.
			lag, epoch = cgMissing, cgMissing
		}
		line(g.GroupID, r.Topic, strconv.Itoa(int(r.Partition)), epoch, start, lag)
	}
	fmt.Fprintln(o.stdout)
	return nil
}

func (o *shareOptions) printState(g kadm.DescribedShareGroup) {
	o.noteEmpty(g)
	coord := fmt.Sprintf("%s:%d  (%d)", g.Coordinator.Host, g.Coordinator.Port, g.Coordinator.NodeID)
	gw, cw := max(15, len(g.GroupID)), max(25, len(coord))
	members := strconv.Itoa(len(g.Members))
	if o.cg.verbose {
		f := "\n%-*s %-*s %-15s %-12s %-17s %s"
		fmt.Fprintf(o.stdout, f, gw, "GROUP", cw, "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS")
		fmt.Fprintf(o.stdout, f, gw, g.GroupID, cw, coord, g.GroupState, strconv.Itoa(int(g.GroupEpoch)), strconv.Itoa(int(g.AssignmentEpoch)), members)
	} else {
		f := "\n%-*s %-*s %-15s %s"
		fmt.Fprintf(o.stdout, f, gw, "GROUP", cw, "COORDINATOR (ID)", "STATE", "#MEMBERS")
		fmt.Fprintf(o.stdout, f, gw, g.GroupID, cw, coord, g.GroupState, members)
	}
	fmt.Fprintln(o.stdout)
}

// shareAssignment prints an assignment as Kafka's share tool does:
// topic:p1,p2 per topic, topics sorted, joined by ';' (empty when none).
func shareAssignment(s kadm.TopicsSet) string {
	if a := cgAssignment(s); a != cgMissing {
		return a
	}
	return ""
}

func (o *shareOptions) printMembers(g kadm.DescribedShareGroup) {
	o.noteEmpty(g)
	if len(g.Members) == 0 {
		return
	}
	gw, cw, hw, lw := max(15, len(g.GroupID)), 15, 15, 15
	for _, m := range g.Members {
		cw, hw, lw = max(cw, len(m.MemberID)), max(hw, len(m.ClientHost)), max(lw, len(m.ClientID))
	}
	line := func(id, host, client, parts, epoch, assignment string) {
		s := fmt.Sprintf("\n%-*s %-*s %-*s %-*s %-12s ", gw, g.GroupID, cw, id, hw, host, lw, client, parts)
		if o.cg.verbose {
			s += fmt.Sprintf("%-13s ", epoch)
		}
		io.WriteString(o.stdout, s+assignment)
	}
	s := fmt.Sprintf("\n%-*s %-*s %-*s %-*s %-12s ", gw, "GROUP", cw, "CONSUMER-ID", hw, "HOST", lw, "CLIENT-ID", "#PARTITIONS")
	if o.cg.verbose {
		s += fmt.Sprintf("%-13s ", "MEMBER-EPOCH")
	}
	io.WriteString(o.stdout, s+"ASSIGNMENT")
	for _, m := range g.Members { // kadm sorts them by member id, as Kafka's tool does
		n := 0
		m.Assignment.Each(func(string, int32) { n++ })
		line(m.MemberID, m.ClientHost, m.ClientID, strconv.Itoa(n), strconv.Itoa(int(m.MemberEpoch)), shareAssignment(m.Assignment))
	}
	fmt.Fprintln(o.stdout)
}

// deleteGroups deletes share groups that are empty, refusing as Kafka's
// tool does (before asking the broker) the groups that are not share
// groups or still have members.
func (o *shareOptions) deleteGroups(ctx context.Context, adm *kadm.Client) error {
	cctx, cancel := o.cg.op(ctx)
	defer cancel()
	listed, err := groupsListed(cctx, adm, "share")
	if err != nil {
		return err
	}
	ids := cgUnique(o.cg.groups)
	if o.cg.allGroups {
		ids = listed.Groups()
		if len(ids) == 0 {
			return errors.New("--all-groups: there are no share groups to delete")
		}
	}
	refused := map[string]string{}
	for _, id := range ids {
		l, ok := listed[id]
		switch {
		case !ok:
			refused[id] = fmt.Sprintf("Group '%s' is not a share group.", id)
		case l.State == "Dead":
			refused[id] = fmt.Sprintf("Share group '%s' group state is DEAD.", id)
		case l.State != "Empty":
			refused[id] = fmt.Sprintf("Share group '%s' is not EMPTY.", id)
		}
	}
	_, err = groupsDeleted(cctx, adm, o.stdout, "share", ids, refused)
	return err
}

// deleteOffsets deletes the group's share-partition state of each --topic
// (DeleteShareGroupOffsets): the group starts those topics again at its
// share.auto.offset.reset.
func (o *shareOptions) deleteOffsets(ctx context.Context, adm *kadm.Client) error {
	group := o.cg.groups[0]
	topics := cgUnique(o.cg.topics)
	cctx, cancel := o.cg.op(ctx)
	defer cancel()
	resps, err := adm.DeleteShareGroupOffsets(cctx, group, topics...)
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			switch ke {
			case kerr.GroupIDNotFound:
				err = fmt.Errorf("share group '%s' does not exist: %w", group, err)
			case kerr.NonEmptyGroup:
				err = fmt.Errorf("share group '%s' is not empty: %w", group, err)
			}
		}
		fmt.Fprintf(o.stdout, "\nError: %v\n", err)
		return fmt.Errorf("offsets of share group %s not deleted: %w", group, err)
	}
	tw := 15
	for _, t := range topics {
		tw = max(tw, len(t))
	}
	sort.Strings(topics)
	failed := 0
	fmt.Fprintf(o.stdout, "\n%-*s %s", tw, "TOPIC", "STATUS")
	for _, t := range topics {
		e, ok := resps[t]
		if !ok {
			e = errors.New("no answer for this topic")
		}
		status := "Successful"
		if e != nil {
			failed++
			status = "Error: " + e.Error()
		}
		fmt.Fprintf(o.stdout, "\n%-*s %s", tw, t, status)
	}
	fmt.Fprintln(o.stdout)
	if failed > 0 {
		return fmt.Errorf("offsets of share group %s: %d of %d topics not deleted", group, failed, len(topics))
	}
	return nil
}

// resetOffsets plans new start offsets for an empty (or absent) share
// group and, with --execute, sets them with AlterShareGroupOffsets.
func (o *shareOptions) resetOffsets(ctx context.Context, adm *kadm.Client) error {
	c := &o.cg
	group := c.groups[0]
	found, _, err := o.describeGroups(ctx, adm, []string{group})
	if err != nil {
		return err
	}
	// An absent group is reset as Kafka's tool resets it: the broker
	// creates it empty.
	if len(found) == 1 {
		if found[0].GroupState != "Empty" {
			return fmt.Errorf("Share group '%s' is not empty.", group)
		}
	}
	var tps []cgTP
	if c.allTopics {
		cctx, cancel := c.op(ctx)
		resps, err := adm.DescribeShareGroupOffsets(cctx, group)
		cancel()
		if err != nil {
			return fmt.Errorf("describe the offsets of share group %s: %w", group, err)
		}
		if d, ok := resps[group]; ok && d.Err == nil {
			for _, r := range d.Offsets.Sorted() {
				tps = append(tps, cgTP{r.Topic, r.Partition})
			}
		} else if ok && !errors.Is(d.Err, kerr.GroupIDNotFound) {
			return fmt.Errorf("describe the offsets of share group %s: %w", group, d.Err)
		}
	} else {
		set, unknown, err := c.topicPartitions(ctx, adm)
		if err != nil {
			return err
		}
		for t, e := range unknown {
			return fmt.Errorf("--topic %s: %w", t, e)
		}
		set.Each(func(t string, p int32) { tps = append(tps, cgTP{t, p}) })
	}
	var plan cgPlan
	switch {
	case c.toEarliest:
		plan, err = c.listOffsets(ctx, adm, cgStart, 0, tps)
	case c.toLatest:
		plan, err = c.listOffsets(ctx, adm, cgEnd, 0, tps)
	default:
		milli, _ := cgParseDateTime(c.toDatetime, time.Local)
		plan, err = c.byTime(ctx, adm, milli, tps)
	}
	if err != nil {
		return err
	}
	if c.execute && len(plan) > 0 {
		offs := kadm.Offsets{}
		for tp, off := range plan {
			if offs[tp.topic] == nil {
				offs[tp.topic] = map[int32]kadm.Offset{}
			}
			offs[tp.topic][tp.partition] = kadm.Offset{Topic: tp.topic, Partition: tp.partition, At: off}
		}
		cctx, cancel := c.op(ctx)
		defer cancel()
		resps, err := adm.AlterShareGroupOffsets(cctx, group, offs)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			return fmt.Errorf("set the new start offsets of share group %s: %w", group, err)
		}
	}
	groupsPrintResetPlan(o.stdout, []string{group}, map[string]cgPlan{group: plan})
	return nil
}
