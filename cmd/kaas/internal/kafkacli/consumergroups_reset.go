package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kafka-consumer-groups.sh --reset-offsets: plan new offsets for inactive
// groups, print (or --export) the plan, and with --execute commit it.

// cgTP is a topic partition.
type cgTP struct {
	topic     string
	partition int32
}

func (tp cgTP) String() string { return fmt.Sprintf("%s-%d", tp.topic, tp.partition) }

// cgPlan is the new offset of each partition of one group.
type cgPlan map[cgTP]int64

func (p cgPlan) sorted() []cgTP {
	tps := make([]cgTP, 0, len(p))
	for tp := range p {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
	return tps
}

// cgDateTime is --to-datetime's format: Kafka's yyyy-MM-dd'T'HH:mm:ss.SSS
// with an optional ISO-8601 zone (Z, +hh, +hhmm, +hh:mm); the seconds'
// fraction is optional here.
var cgDateTime = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}(?::?\d{2})?)?$`)

// cgParseDateTime reads --to-datetime as epoch milliseconds; without a zone
// the time is local, as in Kafka's tool.
func cgParseDateTime(s string, local *time.Location) (int64, error) {
	m := cgDateTime.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a date and time of the form YYYY-MM-DDTHH:mm:SS.sss, optionally followed by Z or an offset such as +01:00", s)
	}
	loc := local
	if z := m[3]; z == "Z" {
		loc = time.UTC
	} else if z != "" {
		digits := strings.ReplaceAll(z[1:], ":", "")
		h, _ := strconv.Atoi(digits[:2])
		mins := 0
		if len(digits) == 4 {
			mins, _ = strconv.Atoi(digits[2:])
		}
		off := h*3600 + mins*60
		if z[0] == '-' {
			off = -off
		}
		loc = time.FixedZone(z, off)
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], loc)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	if frac := m[2]; frac != "" {
		ns, _ := strconv.Atoi((frac[1:] + "000000000")[:9])
		t = t.Add(time.Duration(ns))
	}
	return t.UnixMilli(), nil
}

// cgISODuration is Java's Duration.parse format: PnDTnHnMn.nS, each part
// optional and signed, the whole optionally negated.
var cgISODuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$`)

// cgParseDuration reads --by-duration (ISO-8601, as Java's Duration).
func cgParseDuration(s string) (time.Duration, error) {
	m := cgISODuration.FindStringSubmatch(s)
	if m == nil || (m[2] == "" && m[3] == "" && m[4] == "" && m[5] == "") || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, fmt.Errorf("%q is not an ISO-8601 duration of the form PnDTnHnMnS (e.g. P1DT2H, PT30M)", s)
	}
	num := func(v string) int64 {
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	days, hours, mins, secs := num(m[2]), num(m[3]), num(m[4]), num(m[5])
	// Beyond a million days the nanoseconds of time.Duration overflow.
	for _, n := range []int64{days, hours / 24, mins / 1440, secs / 86400} {
		if n > 1e5 || n < -1e5 {
			return 0, fmt.Errorf("%q: longer than 100000 days", s)
		}
	}
	d := time.Duration(days)*24*time.Hour + time.Duration(hours)*time.Hour + time.Duration(mins)*time.Minute + time.Duration(secs)*time.Second
	if frac := m[6]; frac != "" {
		ns := time.Duration(num((frac + "000000000")[:9]))
		if strings.HasPrefix(m[5], "-") {
			ns = -ns
		}
		d += ns
	}
	if m[1] == "-" {
		d = -d
	}
	return d, nil
}

// cgParseResetPlan reads a --from-file CSV as --export writes it:
// topic,partition,offset lines for one group (when exactly one --group is
// named), else group,topic,partition,offset lines.
func cgParseResetPlan(data, singleGroup string) (map[string]cgPlan, error) {
	plans := map[string]cgPlan{}
	var lines []string
	for _, l := range strings.Split(data, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	withGroup := singleGroup == "" || (len(lines) > 0 && strings.Count(lines[0], ",") == 3)
	for i, l := range lines {
		f := strings.Split(l, ",")
		group := singleGroup
		if withGroup {
			if len(f) != 4 {
				return nil, fmt.Errorf("--from-file line %d %q: want group,topic,partition,offset", i+1, l)
			}
			group, f = f[0], f[1:]
		} else if len(f) != 3 {
			return nil, fmt.Errorf("--from-file line %d %q: want topic,partition,offset", i+1, l)
		}
		p, perr := strconv.ParseInt(f[1], 10, 32)
		off, oerr := strconv.ParseInt(f[2], 10, 64)
		if f[0] == "" || group == "" || perr != nil || oerr != nil || p < 0 {
			return nil, fmt.Errorf("--from-file line %d %q: want a topic, a partition number and an offset", i+1, l)
		}
		if plans[group] == nil {
			plans[group] = cgPlan{}
		}
		plans[group][cgTP{f[0], int32(p)}] = off
	}
	return plans, nil
}

// cgExportCSV writes plans as --export does: without the group column when
// one --group was named.
func cgExportCSV(plans map[string]cgPlan, groups []string, withGroup bool) string {
	var b strings.Builder
	for _, g := range groups {
		for _, tp := range plans[g].sorted() {
			if withGroup {
				fmt.Fprintf(&b, "%s,", g)
			}
			fmt.Fprintf(&b, "%s,%d,%d\n", tp.topic, tp.partition, plans[g][tp])
		}
	}
	return b.String()
}

func (o *cgOptions) resetOffsets(ctx context.Context, adm *kadm.Client) error {
	if !o.dryRun && !o.execute {
		fmt.Fprintln(o.stderr, "WARN: No action will be performed as the --execute option is missing. "+
			"In a future major release, the default behavior of this command will be to prompt the user before "+
			"executing the reset rather than doing a dry run. You should add the --dry-run option explicitly "+
			"if you are scripting this command and want to keep the current default behavior without prompting.")
	}
	var filePlans map[string]cgPlan
	if o.given["from-file"] {
		data, err := os.ReadFile(o.fromFile)
		if err != nil {
			return fmt.Errorf("--from-file: %w", err)
		}
		single := ""
		if len(o.groups) == 1 {
			single = o.groups[0]
		}
		if filePlans, err = cgParseResetPlan(string(data), single); err != nil {
			return err
		}
	}
	ids, err := o.groupIDs(ctx, adm)
	if err != nil {
		return err
	}
	ids = cgUnique(ids)
	described, _, err := o.describeGroups(ctx, adm, ids)
	if err != nil {
		return err
	}
	plans := map[string]cgPlan{}
	var planned, refusals []string
	for _, id := range ids {
		// A group that does not exist is Dead; committing offsets for it
		// creates it, as with Kafka's tool.
		state := "Dead"
		if g, ok := described[id]; ok {
			state = g.state
		}
		if state != "Empty" && state != "Dead" {
			refusals = append(refusals, fmt.Sprintf("Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", id, state))
			continue
		}
		var plan cgPlan
		if filePlans != nil {
			if plan = filePlans[id]; plan == nil {
				refusals = append(refusals, fmt.Sprintf("No reset plan for group %s found", id))
				continue
			}
			if plan, err = o.clamp(ctx, adm, plan); err != nil {
				return err
			}
		} else if plan, err = o.planGroup(ctx, adm, id); err != nil {
			return err
		}
		if o.execute && len(plan) > 0 {
			if err := o.commit(ctx, adm, id, plan); err != nil {
				return err
			}
		}
		plans[id] = plan
		planned = append(planned, id)
	}
	if o.export {
		fmt.Fprintln(o.stdout, cgExportCSV(plans, planned, len(o.groups) != 1))
	} else if len(planned) > 0 {
		row := func(g, t, p, off string) { fmt.Fprintf(o.stdout, "\n%-30s %-30s %-10s %-15s", g, t, p, off) }
		row("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
		for _, g := range planned {
			for _, tp := range plans[g].sorted() {
				row(g, tp.topic, strconv.Itoa(int(tp.partition)), strconv.FormatInt(plans[g][tp], 10))
			}
		}
		fmt.Fprintln(o.stdout)
	}
	if len(refusals) > 0 {
		return errors.New(strings.Join(refusals, " "))
	}
	return nil
}

func cgUnique(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// committed are a group's committed offsets.
func (o *cgOptions) committed(ctx context.Context, adm *kadm.Client, group string) (cgPlan, error) {
	cctx, cancel := o.op(ctx)
	defer cancel()
	resps, err := adm.FetchOffsets(cctx, group)
	if err != nil {
		return nil, fmt.Errorf("fetch the offsets of group %s: %w", group, err)
	}
	out := cgPlan{}
	resps.Each(func(r kadm.OffsetResponse) {
		if r.Err == nil && r.At >= 0 {
			out[cgTP{r.Topic, r.Partition}] = r.At
		}
	})
	return out, nil
}

// cgOffsetKind is which offsets listOffsets asks for.
type cgOffsetKind int

const (
	cgStart cgOffsetKind = iota
	cgEnd
	cgAfterMilli
)

// listOffsets lists the start, end or first-at-or-after-a-time offsets of
// the partitions in tps; a partition that has none is an error.
func (o *cgOptions) listOffsets(ctx context.Context, adm *kadm.Client, kind cgOffsetKind, milli int64, tps []cgTP) (cgPlan, error) {
	out := cgPlan{}
	if len(tps) == 0 {
		return out, nil
	}
	topics := map[string]bool{}
	for _, tp := range tps {
		topics[tp.topic] = true
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	cctx, cancel := o.op(ctx)
	defer cancel()
	var listed kadm.ListedOffsets
	var err error
	switch kind {
	case cgStart:
		listed, err = adm.ListStartOffsets(cctx, names...)
	case cgEnd:
		listed, err = adm.ListEndOffsets(cctx, names...)
	default:
		listed, err = adm.ListOffsetsAfterMilli(cctx, milli, names...)
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	for _, tp := range tps {
		l, ok := listed.Lookup(tp.topic, tp.partition)
		if !ok {
			if bad, ok := listed.Lookup(tp.topic, -1); ok && bad.Err != nil {
				return nil, fmt.Errorf("topic %s: %w", tp.topic, bad.Err)
			}
			return nil, fmt.Errorf("partition %s does not exist", tp)
		}
		if l.Err != nil {
			return nil, fmt.Errorf("list offsets of %s: %w", tp, l.Err)
		}
		out[tp] = l.Offset
	}
	return out, nil
}

// partitionsToReset is the scope of a reset: --all-topics (the partitions
// the group has offsets for) or --topic.
func (o *cgOptions) partitionsToReset(ctx context.Context, adm *kadm.Client, committed cgPlan) ([]cgTP, error) {
	if o.allTopics {
		return committed.sorted(), nil
	}
	set, unknown, err := o.topicPartitions(ctx, adm)
	if err != nil {
		return nil, err
	}
	for t, e := range unknown {
		return nil, fmt.Errorf("--topic %s: %w", t, e)
	}
	var tps []cgTP
	set.Each(func(t string, p int32) { tps = append(tps, cgTP{t, p}) })
	sort.Slice(tps, func(i, j int) bool { return tps[i].String() < tps[j].String() })
	return tps, nil
}

// planGroup computes the new offsets of one group by the scenario given.
func (o *cgOptions) planGroup(ctx context.Context, adm *kadm.Client, group string) (cgPlan, error) {
	committed, err := o.committed(ctx, adm, group)
	if err != nil {
		return nil, err
	}
	tps, err := o.partitionsToReset(ctx, adm, committed)
	if err != nil {
		return nil, err
	}
	switch {
	case o.given["to-offset"]:
		plan := cgPlan{}
		for _, tp := range tps {
			plan[tp] = o.toOffset
		}
		return o.clamp(ctx, adm, plan)
	case o.toEarliest:
		return o.listOffsets(ctx, adm, cgStart, 0, tps)
	case o.toLatest:
		return o.listOffsets(ctx, adm, cgEnd, 0, tps)
	case o.given["shift-by"]:
		plan := cgPlan{}
		for _, tp := range tps {
			c, ok := committed[tp]
			if !ok {
				return nil, fmt.Errorf("--shift-by: cannot shift offset for partition %s since there is no current committed offset", tp)
			}
			plan[tp] = c + o.shiftBy
		}
		return o.clamp(ctx, adm, plan)
	case o.given["to-datetime"]:
		milli, _ := cgParseDateTime(o.toDatetime, time.Local)
		return o.byTime(ctx, adm, milli, tps)
	case o.given["by-duration"]:
		d, _ := cgParseDuration(o.byDuration)
		return o.byTime(ctx, adm, time.Now().Add(-d).UnixMilli(), tps)
	default: // --to-current
		var uncommitted []cgTP
		plan := cgPlan{}
		for _, tp := range tps {
			if c, ok := committed[tp]; ok {
				plan[tp] = c
			} else {
				uncommitted = append(uncommitted, tp)
			}
		}
		ends, err := o.listOffsets(ctx, adm, cgEnd, 0, uncommitted)
		if err != nil {
			return nil, err
		}
		for tp, e := range ends {
			plan[tp] = e
		}
		return plan, nil
	}
}

// byTime resets to the first offset whose timestamp is at or after milli;
// a partition with no such record goes to its end, with Kafka's warning.
func (o *cgOptions) byTime(ctx context.Context, adm *kadm.Client, milli int64, tps []cgTP) (cgPlan, error) {
	at, err := o.listOffsets(ctx, adm, cgAfterMilli, milli, tps)
	if err != nil {
		return nil, err
	}
	ends, err := o.listOffsets(ctx, adm, cgEnd, 0, tps)
	if err != nil {
		return nil, err
	}
	for _, tp := range tps {
		if at[tp] < 0 || at[tp] >= ends[tp] {
			fmt.Fprintf(o.stderr, "\nWarn: Partition %d from topic %s is empty. Falling back to latest known offset.\n", tp.partition, tp.topic)
			at[tp] = ends[tp]
		}
	}
	return at, nil
}

// clamp moves offsets outside a partition's log to its start or end, with
// Kafka's warning.
func (o *cgOptions) clamp(ctx context.Context, adm *kadm.Client, plan cgPlan) (cgPlan, error) {
	tps := plan.sorted()
	starts, err := o.listOffsets(ctx, adm, cgStart, 0, tps)
	if err != nil {
		return nil, err
	}
	ends, err := o.listOffsets(ctx, adm, cgEnd, 0, tps)
	if err != nil {
		return nil, err
	}
	out := cgPlan{}
	for _, tp := range tps {
		off := plan[tp]
		switch {
		case off > ends[tp]:
			fmt.Fprintf(o.stderr, "WARN: New offset (%d) is higher than latest offset for topic partition %s. Value will be set to %d\n", off, tp, ends[tp])
			off = ends[tp]
		case off < starts[tp]:
			fmt.Fprintf(o.stderr, "WARN: New offset (%d) is lower than earliest offset for topic partition %s. Value will be set to %d\n", off, tp, starts[tp])
			off = starts[tp]
		}
		out[tp] = off
	}
	return out, nil
}

// commit writes a plan as the group's committed offsets (an admin commit:
// no member, no generation, which the coordinator accepts only from an
// inactive group).
func (o *cgOptions) commit(ctx context.Context, adm *kadm.Client, group string, plan cgPlan) error {
	offs := kadm.Offsets{}
	for tp, off := range plan {
		if offs[tp.topic] == nil {
			offs[tp.topic] = map[int32]kadm.Offset{}
		}
		offs[tp.topic][tp.partition] = kadm.Offset{Topic: tp.topic, Partition: tp.partition, At: off, LeaderEpoch: -1}
	}
	cctx, cancel := o.op(ctx)
	defer cancel()
	resps, err := adm.CommitOffsets(cctx, group, offs)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("commit the new offsets of group %s: %w", group, err)
	}
	return nil
}
