package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka-streams-application-reset.sh: reset a Kafka Streams application
// that uses a classic consumer group (named after its application.id):
// its committed offsets of the input topics, those of the intermediate
// topics to their end, and delete its internal topics. Flags, output lines
// and refusals follow Kafka 4.2's StreamsResetter; the offset planning
// reuses consumer-groups' (consumergroups_reset.go).
var _ = register(Tool{Name: "streams-application-reset", Kafka: "kafka-streams-application-reset.sh", Run: runStreamsReset})

// srScenarios are the reset scenarios, in the order Kafka checks them.
var srScenarios = []string{"to-offset", "to-datetime", "by-duration", "to-earliest", "to-latest", "from-file", "shift-by"}

type srOptions struct {
	// cg holds the connection, the scenario values and the offset
	// listing and committing the plan uses.
	cg    cgOptions
	given map[string]bool

	appID                              string
	inputs, intermediates, internals   []string
	inputsArg, intermediatesArg, inArg Repeated
	configFile                         string
	dryRun, force                      bool

	cl             *kgo.Client
	stdout, stderr io.Writer
}

func runStreamsReset(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o := &srOptions{stdout: stdout, stderr: stderr}
	c := &o.cg
	c.stdout, c.stderr, c.timeout = stdout, stderr, 30*time.Second
	if err := o.parse(args); err != nil {
		return err
	}
	if c.conn.Bootstrap == "" {
		c.conn.Bootstrap = "localhost:9092" // Kafka's default here
	}
	if o.given["config-file"] {
		fmt.Fprintln(stdout, "Option --config-file has been deprecated and will be removed in a future version. Use --command-config instead.")
		c.conn.CommandConfig = o.configFile
	}
	cl, adm, err := c.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	o.cl = cl
	return o.run(ctx, adm)
}

// parse reads the flags and refuses, before anything is sent, what
// StreamsResetterOptions refuses.
func (o *srOptions) parse(args []string) error {
	c := &o.cg
	fs := NewFlagSet("streams-application-reset", o.stderr)
	c.conn.Register(fs)
	var removedServers, removedZK string
	fs.StringVar(&removedServers, "bootstrap-servers", "", "not supported: removed in Kafka 4.0 (use --bootstrap-server)")
	fs.StringVar(&removedZK, "zookeeper", "", "not supported: Kafka 4 has no ZooKeeper mode (use --bootstrap-server)")
	fs.StringVar(&o.configFile, "config-file", "", "deprecated name of --command-config")
	fs.StringVar(&o.appID, "application-id", "", "REQUIRED: the Kafka Streams application ID (application.id)")
	fs.Var(&o.inputsArg, "input-topics", "comma-separated user input topics, reset to the earliest offset or by the scenario given")
	fs.Var(&o.intermediatesArg, "intermediate-topics", "[deprecated] comma-separated intermediate user topics, skipped to their end")
	fs.Var(&o.inArg, "internal-topics", "comma-separated internal topics to delete, a subset of those the tool infers (default: all of them)")
	fs.Int64Var(&c.toOffset, "to-offset", 0, "reset offsets to this offset")
	fs.StringVar(&c.toDatetime, "to-datetime", "", "reset offsets to the first at or after YYYY-MM-DDTHH:mm:SS.sss[zone]")
	fs.StringVar(&c.byDuration, "by-duration", "", "reset offsets to the first at or after now minus PnDTnHnMnS")
	fs.BoolVar(&c.toEarliest, "to-earliest", false, "reset offsets to the earliest offset (the default)")
	fs.BoolVar(&c.toLatest, "to-latest", false, "reset offsets to the latest offset")
	fs.StringVar(&c.fromFile, "from-file", "", "reset offsets to those of a CSV file of TOPIC,PARTITION,OFFSET lines")
	fs.Int64Var(&c.shiftBy, "shift-by", 0, "reset offsets to the current offset plus n (n may be negative)")
	fs.BoolVar(&o.force, "force", false, "remove the members of the application's consumer group first (stop every instance before)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "show what would be done, change nothing")
	given, err := Parse(fs, args)
	if err != nil {
		return err
	}
	o.given = given
	c.given = given
	switch {
	case given["bootstrap-servers"]:
		return errors.New("--bootstrap-servers is not supported: Kafka 4.0 removed it; use --bootstrap-server")
	case given["zookeeper"]:
		return errors.New("--zookeeper is not supported: Kafka 4 has no ZooKeeper mode; use --bootstrap-server")
	case !given["application-id"]:
		return errors.New("missing required option(s) [application-id]")
	case o.appID == "":
		return errors.New("--application-id: the application id must not be empty")
	case given["config-file"] && given["command-config"]:
		return errors.New(`option "[config-file]" can't be used with option "[command-config]"`)
	}
	for i, s := range srScenarios {
		for _, other := range srScenarios[i+1:] {
			if given[s] && given[other] {
				return fmt.Errorf(`option "[%s]" can't be used with option "[%s]"`, s, other)
			}
		}
	}
	if err := c.checkResetTimes(given); err != nil {
		return err
	}
	for _, l := range []struct {
		name string
		arg  Repeated
		into *[]string
	}{{"input-topics", o.inputsArg, &o.inputs}, {"intermediate-topics", o.intermediatesArg, &o.intermediates}, {"internal-topics", o.inArg, &o.internals}} {
		for _, v := range l.arg {
			for _, t := range strings.Split(v, ",") {
				if t == "" {
					return fmt.Errorf("--%s %q: an empty topic name", l.name, v)
				}
				*l.into = append(*l.into, t)
			}
		}
	}
	return nil
}

// srList is a list as Java prints one: [a, b].
func srList(s []string) string { return "[" + strings.Join(s, ", ") + "]" }

func (o *srOptions) isInput(t string) bool        { return slices.Contains(o.inputs, t) }
func (o *srOptions) isIntermediate(t string) bool { return slices.Contains(o.intermediates, t) }

// run checks everything the reset needs before it changes anything (Kafka's
// tool finds a missing input topic or a bad --internal-topics only halfway
// through), then removes members (--force), resets the offsets and
// deletes the internal topics, printing Kafka's lines.
func (o *srOptions) run(ctx context.Context, adm *kadm.Client) error {
	c := &o.cg
	cctx, cancel := c.op(ctx)
	topics, err := adm.ListTopics(cctx)
	cancel()
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	for _, l := range []struct {
		name, kind string
		topics     []string
	}{{"input-topics", "input", o.inputs}, {"intermediate-topics", "intermediate", o.intermediates}} {
		var missing []string
		for _, t := range l.topics {
			if !topics.Has(t) {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("--%s: Following %s topics are not found: %s (nothing was reset or deleted)", l.name, l.kind, srList(missing))
		}
	}
	var inferred []string
	for _, t := range topics.Names() {
		// An input or intermediate topic named like an internal one is
		// not internal (KAFKA-7930).
		if !o.isInput(t) && !o.isIntermediate(t) && streamsInternalTopicOf(t, o.appID) {
			inferred = append(inferred, t)
		}
	}
	sort.Strings(inferred)
	for _, t := range o.internals {
		if !slices.Contains(inferred, t) {
			return errors.New("--internal-topics: Invalid topic specified in the --internal-topics option. " +
				"Ensure that the topics specified are all internal topics. " +
				"Do a dry run without the --internal-topics option to see the list of all internal topics that can be deleted.")
		}
	}
	var inputTPs, intermediateTPs []cgTP
	for _, t := range cgUnique(append(slices.Clone(o.inputs), o.intermediates...)) {
		for _, p := range topics[t].Partitions.Numbers() {
			if o.isInput(t) {
				inputTPs = append(inputTPs, cgTP{t, p})
			} else {
				intermediateTPs = append(intermediateTPs, cgTP{t, p})
			}
		}
	}
	sortTPs := func(tps []cgTP) {
		sort.Slice(tps, func(i, j int) bool {
			if tps[i].topic != tps[j].topic {
				return tps[i].topic < tps[j].topic
			}
			return tps[i].partition < tps[j].partition
		})
	}
	sortTPs(inputTPs)
	sortTPs(intermediateTPs)
	var filePlan cgPlan
	if c.given["from-file"] {
		if filePlan, err = o.readPlan(inputTPs); err != nil {
			return err
		}
	}
	if err := o.checkMembers(ctx, adm); err != nil {
		return err
	}

	if o.dryRun {
		fmt.Fprintln(o.stdout, "----Dry run displays the actions which will be performed when running Streams Reset Tool----")
	}
	if err := o.resetOffsets(ctx, adm, inputTPs, intermediateTPs, filePlan); err != nil {
		return err
	}
	return o.deleteInternalTopics(ctx, adm, inferred)
}

// readPlan reads --from-file: TOPIC,PARTITION,OFFSET lines, one for each
// partition of the input topics and none for another partition (which
// Kafka's tool fails on with a NullPointerException).
func (o *srOptions) readPlan(inputTPs []cgTP) (cgPlan, error) {
	data, err := os.ReadFile(o.cg.fromFile)
	if err != nil {
		return nil, fmt.Errorf("--from-file: %w", err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return nil, errors.New("--from-file: Error parsing reset plan CSV file. It is empty")
	}
	plans, err := cgParseResetPlan(string(data), o.appID)
	if err != nil {
		return nil, err
	}
	for g := range plans {
		if g != o.appID {
			return nil, fmt.Errorf("--from-file: a line for group %s; the file's lines are TOPIC,PARTITION,OFFSET of application %s", g, o.appID)
		}
	}
	plan := plans[o.appID]
	for _, tp := range plan.sorted() {
		if !slices.Contains(inputTPs, tp) {
			return nil, fmt.Errorf("--from-file: partition %s is not a partition of --input-topics", tp)
		}
	}
	for _, tp := range inputTPs {
		if _, ok := plan[tp]; !ok {
			return nil, fmt.Errorf("--from-file: no offset for partition %s of the input topics", tp)
		}
	}
	return plan, nil
}

// checkMembers refuses an application whose group has members, or with
// --force removes them from a consumer group, as Kafka's tool does. A
// streams group's members (KIP-1071) cannot be removed by an admin, and
// Kafka's tool would fail to commit for it: that is refused at once.
func (o *srOptions) checkMembers(ctx context.Context, adm *kadm.Client) error {
	c := &o.cg
	so := &streamsOptions{cg: *c, cl: o.cl, stdout: o.stdout, stderr: o.stderr}
	sg, err := so.describeGroup(ctx, adm, o.appID)
	switch {
	case err == nil:
		if len(sg.Members) == 0 {
			return nil
		}
		ids := make([]string, len(sg.Members))
		for i, m := range sg.Members {
			ids[i] = fmt.Sprintf("(memberId=%s, processId=%s, clientId=%s, host=%s)", m.MemberID, m.ProcessID, m.ClientID, m.ClientHost)
		}
		return fmt.Errorf("Streams group '%s' is still active and has following members: %s. "+
			"Make sure to stop all running application instances before running the reset tool. "+
			"The application uses the streams rebalance protocol: --force cannot remove the members of a streams group; "+
			"once they are gone, this tool or kaas streams-groups --reset-offsets (kafka-streams-groups.sh) resets it.", o.appID, srList(ids))
	case errors.Is(err, kerr.GroupIDNotFound), errors.Is(err, kerr.UnsupportedVersion):
	default:
		return err
	}
	described, _, err := c.describeGroups(ctx, adm, []string{o.appID})
	if err != nil {
		return err
	}
	g, ok := described[o.appID]
	if !ok || len(g.members) == 0 {
		return nil
	}
	if !o.force {
		ids := make([]string, len(g.members))
		for i, m := range g.members {
			inst := "null"
			if m.instanceID != "" {
				inst = m.instanceID
			}
			ids[i] = fmt.Sprintf("(memberId=%s, groupInstanceId=%s, clientId=%s, host=%s)", m.id, inst, m.clientID, m.host)
		}
		return fmt.Errorf("Consumer group '%s' is still active and has following members: %s. "+
			"Make sure to stop all running application instances before running the reset tool. "+
			"You can use option '--force' to remove active members from the group.", o.appID, srList(ids))
	}
	fmt.Fprintln(o.stdout, "Force deleting all active members in the group: "+o.appID)
	if o.dryRun {
		return nil
	}
	return o.removeMembers(ctx, adm, g)
}

// removeMembers removes every member of a consumer group with LeaveGroup
// (as Kafka's removeMembersFromConsumerGroup does) and waits for the group
// to settle empty, so that the offsets can be committed.
func (o *srOptions) removeMembers(ctx context.Context, adm *kadm.Client, g cgGroup) error {
	c := &o.cg
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = o.appID
	for _, m := range g.members {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = m.id
		if m.instanceID != "" {
			lm.InstanceID = kmsg.StringPtr(m.instanceID)
		}
		lm.Reason = kmsg.StringPtr("removed by kaas streams-application-reset --force")
		req.Members = append(req.Members, lm)
	}
	cctx, cancel := c.op(ctx)
	defer cancel()
	resp, err := req.RequestWith(cctx, o.cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err == nil {
		for _, m := range resp.Members {
			if merr := kerr.ErrorForCode(m.ErrorCode); merr != nil {
				err = fmt.Errorf("member %s: %w", m.MemberID, merr)
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("remove the members of group %s: %w", o.appID, err)
	}
	for {
		described, _, err := c.describeGroups(cctx, adm, []string{o.appID})
		if err != nil {
			return err
		}
		if d, ok := described[o.appID]; !ok || (len(d.members) == 0 && (d.state == "Empty" || d.state == "Dead")) {
			return nil
		}
		select {
		case <-cctx.Done():
			return fmt.Errorf("group %s did not become empty after its members were removed: %w", o.appID, cctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// resetOffsets plans the input partitions' new offsets by the scenario
// and the intermediate ones' at their end, prints them as Kafka does and,
// unless --dry-run, commits them for the application's group.
func (o *srOptions) resetOffsets(ctx context.Context, adm *kadm.Client, inputTPs, intermediateTPs []cgTP, filePlan cgPlan) error {
	c := &o.cg
	if len(o.intermediates) > 0 {
		fmt.Fprintln(o.stdout, "WARN: `--intermediate-topics` is deprecated and will be removed in a future release")
	}
	if len(o.inputs) == 0 && len(o.intermediates) == 0 {
		fmt.Fprintln(o.stdout, "No input or intermediate topics specified. Skipping seek.")
		return nil
	}
	if len(o.inputs) > 0 {
		fmt.Fprintln(o.stdout, "Reset-offsets for input topics "+srList(o.inputs))
	}
	if len(o.intermediates) > 0 {
		fmt.Fprintln(o.stdout, "Seek-to-end for intermediate topics "+srList(o.intermediates))
	}
	plan := cgPlan{}
	if len(inputTPs) > 0 {
		fmt.Fprintf(o.stdout, "Following input topics offsets will be reset to (for consumer group %s)\n", o.appID)
		in, err := o.planInputs(ctx, adm, inputTPs, filePlan)
		if err != nil {
			return err
		}
		for _, tp := range inputTPs {
			plan[tp] = in[tp]
			fmt.Fprintf(o.stdout, "Topic: %s Partition: %d Offset: %d\n", tp.topic, tp.partition, in[tp])
		}
	}
	if len(intermediateTPs) > 0 {
		fmt.Fprintf(o.stdout, "Following intermediate topics offsets will be reset to end (for consumer group %s)\n", o.appID)
		ends, err := c.listOffsets(ctx, adm, cgEnd, 0, intermediateTPs)
		if err != nil {
			return err
		}
		for _, tp := range intermediateTPs {
			plan[tp] = ends[tp]
			fmt.Fprintln(o.stdout, "Topic: "+tp.topic) // one line a partition, as Kafka prints it
		}
	}
	if !o.dryRun && len(plan) > 0 {
		if err := c.commit(ctx, adm, o.appID, plan); err != nil {
			return err
		}
	}
	fmt.Fprintln(o.stdout, "Done.")
	return nil
}

// planInputs computes the input partitions' new offsets by the scenario
// (--to-earliest by default), with Kafka's messages for offsets outside a
// partition's log and for times after its last record.
func (o *srOptions) planInputs(ctx context.Context, adm *kadm.Client, tps []cgTP, filePlan cgPlan) (cgPlan, error) {
	c := &o.cg
	g := c.given
	starts, err := c.listOffsets(ctx, adm, cgStart, 0, tps)
	if err != nil {
		return nil, err
	}
	ends, err := c.listOffsets(ctx, adm, cgEnd, 0, tps)
	if err != nil {
		return nil, err
	}
	// inRange is Kafka's checkOffsetRange, which speaks up even for an
	// offset equal to a bound.
	inRange := func(tp cgTP, off int64) int64 {
		switch {
		case off >= ends[tp]:
			fmt.Fprintf(o.stdout, "New offset (%d) is higher than latest offset. Value will be set to %d\n", off, ends[tp])
			return ends[tp]
		case off <= starts[tp]:
			fmt.Fprintf(o.stdout, "New offset (%d) is lower than earliest offset. Value will be set to %d\n", off, starts[tp])
			return starts[tp]
		}
		return off
	}
	plan := cgPlan{}
	switch {
	case g["to-offset"]:
		for _, tp := range tps {
			plan[tp] = inRange(tp, c.toOffset)
		}
	case g["to-latest"]:
		return ends, nil
	case g["shift-by"]:
		committed, err := c.committed(ctx, adm, o.appID)
		if err != nil {
			return nil, err
		}
		for _, tp := range tps {
			pos, ok := committed[tp]
			if !ok {
				// Kafka's consumer starts a partition without a committed
				// offset where auto.offset.reset says: latest by default.
				if pos, err = o.resetPosition(tp, starts, ends); err != nil {
					return nil, err
				}
			}
			plan[tp] = inRange(tp, pos+c.shiftBy)
		}
	case g["to-datetime"], g["by-duration"]:
		milli, _ := cgParseDateTime(c.toDatetime, time.Local)
		if g["by-duration"] {
			d, _ := cgParseDuration(c.byDuration)
			milli = time.Now().Add(-d).UnixMilli()
		}
		at, err := c.listOffsets(ctx, adm, cgAfterMilli, milli, tps)
		if err != nil {
			return nil, err
		}
		for _, tp := range tps {
			plan[tp] = at[tp]
			if at[tp] < 0 || at[tp] >= ends[tp] {
				plan[tp] = ends[tp]
				fmt.Fprintf(o.stdout, "Partition %d from topic %s is empty, without a committed record. Falling back to latest known offset.\n", tp.partition, tp.topic)
			}
		}
	case g["from-file"]:
		for _, tp := range tps {
			plan[tp] = inRange(tp, filePlan[tp])
		}
	default: // --to-earliest
		return starts, nil
	}
	return plan, nil
}

// resetPosition is where Kafka's consumer would start tp, which has no
// committed offset, by the auto.offset.reset of --command-config.
func (o *srOptions) resetPosition(tp cgTP, starts, ends cgPlan) (int64, error) {
	policy := "latest"
	if f := o.cg.conn.CommandConfig; f != "" {
		props, err := ReadProperties(f)
		if err != nil {
			return 0, err
		}
		if p := props["auto.offset.reset"]; p != "" {
			policy = strings.ToLower(p)
		}
	}
	switch policy {
	case "earliest":
		return starts[tp], nil
	case "latest":
		return ends[tp], nil
	}
	return 0, fmt.Errorf("--shift-by: partition %s has no committed offset and auto.offset.reset is %s", tp, policy)
}

// deleteInternalTopics deletes the application's internal topics, those
// of --internal-topics or else all that the tool infers.
func (o *srOptions) deleteInternalTopics(ctx context.Context, adm *kadm.Client, inferred []string) error {
	topics := inferred
	if len(o.internals) > 0 {
		topics = o.internals
		fmt.Fprintln(o.stdout, "Deleting specified internal topics "+srList(topics))
	} else {
		fmt.Fprintln(o.stdout, "Deleting inferred internal topics "+srList(topics))
	}
	if !o.dryRun && len(topics) > 0 {
		cctx, cancel := o.cg.op(ctx)
		defer cancel()
		resps, err := adm.DeleteTopics(cctx, topics...)
		if err != nil {
			return fmt.Errorf("delete topics: %w", err)
		}
		failed := false
		for _, t := range topics {
			if r, ok := resps[t]; !ok || r.Err != nil {
				failed = true
				fmt.Fprintf(o.stderr, "ERROR: deleting topic %s: %v\n", t, r.Err)
			}
		}
		if failed {
			return errors.New("Encountered an error deleting one or more topics")
		}
	}
	fmt.Fprintln(o.stdout, "Done.")
	return nil
}
