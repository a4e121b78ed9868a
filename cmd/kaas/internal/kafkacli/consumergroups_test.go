package kafkacli

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestConsumerGroupsDateTime(t *testing.T) {
	local := time.FixedZone("local", 2*3600)
	utc := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	for in, want := range map[string]int64{
		"2024-03-01T10:00:00.000Z":      utc("2024-03-01T10:00:00Z"),
		"2024-03-01T10:00:00.250Z":      utc("2024-03-01T10:00:00.25Z"),
		"2024-03-01T10:00:00Z":          utc("2024-03-01T10:00:00Z"),
		"2024-03-01T10:00:00.000+01:00": utc("2024-03-01T09:00:00Z"),
		"2024-03-01T10:00:00.000-0530":  utc("2024-03-01T15:30:00Z"),
		"2024-03-01T10:00:00.000+03":    utc("2024-03-01T07:00:00Z"),
		"2024-03-01T10:00:00.000":       utc("2024-03-01T08:00:00Z"), // local time: +02:00
	} {
		got, err := cgParseDateTime(in, local)
		if err != nil || got != want {
			t.Errorf("%s: got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "2024-03-01", "2024-03-01 10:00:00.000", "2024-13-01T10:00:00.000", "2024-03-01T10:00:00.000UTC", "yesterday"} {
		if _, err := cgParseDateTime(bad, local); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConsumerGroupsDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT1H":         time.Hour,
		"P1DT2H3M4S":   26*time.Hour + 3*time.Minute + 4*time.Second,
		"p2d":          48 * time.Hour,
		"PT0.5S":       500 * time.Millisecond,
		"PT-30M":       -30 * time.Minute,
		"-PT10S":       -10 * time.Second,
		"PT1M-1.5S":    time.Minute - 1500*time.Millisecond,
		"P0DT0H0M10S":  10 * time.Second,
		"PT36H":        36 * time.Hour,
		"P100DT0.001S": 100*24*time.Hour + time.Millisecond,
	} {
		got, err := cgParseDuration(in)
		if err != nil || got != want {
			t.Errorf("%s: got %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "P", "PT", "P1DT", "1H", "P1Y", "P1W", "PT1H30", "P999999999D"} {
		if _, err := cgParseDuration(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConsumerGroupsTopicArg(t *testing.T) {
	topic, ps, err := cgParseTopicArg("orders:0,2,5")
	if err != nil || topic != "orders" || !reflect.DeepEqual(ps, []int32{0, 2, 5}) {
		t.Errorf("orders:0,2,5: %s %v %v", topic, ps, err)
	}
	if topic, ps, err = cgParseTopicArg("orders"); err != nil || topic != "orders" || ps != nil {
		t.Errorf("orders: %s %v %v", topic, ps, err)
	}
	for _, bad := range []string{"orders:", "orders:a", "orders:1:2", ":1", "orders:-1"} {
		if _, _, err := cgParseTopicArg(bad); err == nil || !strings.Contains(err.Error(), "--topic") {
			t.Errorf("%q: %v, want a refusal naming --topic", bad, err)
		}
	}
}

// The CSV --export writes is what --from-file reads, with and without the
// group column.
func TestConsumerGroupsResetPlanCSV(t *testing.T) {
	plans := map[string]cgPlan{
		"g1": {{"orders", 0}: 5, {"orders", 1}: 7, {"audit", 0}: 0},
		"g2": {{"orders", 0}: 9},
	}
	one := cgExportCSV(plans, []string{"g1"}, false)
	if one != "audit,0,0\norders,0,5\norders,1,7\n" {
		t.Errorf("single-group CSV:\n%s", one)
	}
	back, err := cgParseResetPlan(one, "g1")
	if err != nil || !reflect.DeepEqual(back, map[string]cgPlan{"g1": plans["g1"]}) {
		t.Errorf("single-group round trip: %v %v", back, err)
	}
	both := cgExportCSV(plans, []string{"g1", "g2"}, true)
	if !strings.HasPrefix(both, "g1,audit,0,0\n") || !strings.HasSuffix(both, "g2,orders,0,9\n") {
		t.Errorf("multi-group CSV:\n%s", both)
	}
	back, err = cgParseResetPlan(both, "")
	if err != nil || !reflect.DeepEqual(back, plans) {
		t.Errorf("multi-group round trip: %v %v", back, err)
	}
	// One --group and a file with the group column: the file's groups.
	if back, err = cgParseResetPlan(both, "g2"); err != nil || !reflect.DeepEqual(back, plans) {
		t.Errorf("group column with one --group: %v %v", back, err)
	}
	for _, bad := range []string{"orders,0,5\n", "g,orders,x,5\n", "g,orders,0,5,6\n", "g,,0,5\n"} {
		if _, err := cgParseResetPlan(bad, ""); err == nil || !strings.Contains(err.Error(), "--from-file line 1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestConsumerGroupsOptionalValues(t *testing.T) {
	in := []string{"--list", "--state", "--type", "consumer,classic", "--state", "stable", "--bootstrap-server", "x"}
	want := []string{"--list", "--state=", "--type=consumer,classic", "--state=stable", "--bootstrap-server", "x"}
	if got := cgOptionalValues(in); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := cgOptionalValues([]string{"--describe", "--state"}); !reflect.DeepEqual(got, []string{"--describe", "--state="}) {
		t.Errorf("trailing --state: %q", got)
	}
	states, err := cgParseStates("stable, EMPTY")
	if err != nil || !reflect.DeepEqual(states, []string{"Stable", "Empty"}) {
		t.Errorf("states: %v %v", states, err)
	}
	if _, err := cgParseStates("stable,sleepy"); err == nil || !strings.Contains(err.Error(), "Valid states are: PreparingRebalance") {
		t.Errorf("bad state: %v", err)
	}
	if types, err := cgParseTypes("Consumer,classic"); err != nil || !reflect.DeepEqual(types, []string{"consumer", "classic"}) {
		t.Errorf("types: %v %v", types, err)
	}
	if _, err := cgParseTypes("streams"); err == nil || !strings.Contains(err.Error(), "Valid types are: consumer, classic, share") {
		t.Errorf("bad type: %v", err)
	}
}

// Refused flag combinations are refused before any connection is made (the
// bootstrap address here does not answer).
func TestConsumerGroupsRefusals(t *testing.T) {
	bs := []string{"--bootstrap-server", "127.0.0.1:1"}
	cases := []struct {
		args []string
		want string
	}{
		{nil, "exactly one of --list, --describe, --delete, --reset-offsets, --delete-offsets"},
		{[]string{"--list", "--describe"}, "exactly one of"},
		{[]string{"--describe"}, "option --describe takes one of these options: --group, --all-groups"},
		{[]string{"--describe", "--group", "g", "--all-groups"}, "--group can't be used with option --all-groups"},
		{[]string{"--describe", "--group", "g", "--members", "--state"}, "at most one of these options: --members, --offsets, --state"},
		{[]string{"--describe", "--group", "g", "--state", "stable"}, "does not take a value for --state"},
		{[]string{"--describe", "--group", "g", "--topic", "t"}, "option --topic can only be used with"},
		{[]string{"--describe", "--group", "g", "--type"}, "option --type can only be used with --list"},
		{[]string{"--list", "--members"}, "option --members can only be used with --describe"},
		{[]string{"--list", "--group", "g"}, "option --group can only be used with"},
		{[]string{"--list", "--state", "sleepy"}, "invalid state list 'sleepy'"},
		{[]string{"--list", "--type", "streams"}, "invalid types list 'streams'"},
		{[]string{"--delete"}, "option --delete takes one of these options"},
		{[]string{"--delete", "--group", "g", "--topic", "t"}, "topic-specific offset deletion"},
		{[]string{"--delete-offsets", "--group", "g"}, "option --delete-offsets takes the following options: --group, --topic"},
		{[]string{"--delete-offsets", "--group", "g", "--group", "h", "--topic", "t"}, "takes one --group"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t"}, "requires one of the following scenarios"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--to-latest"}, "option --to-earliest can't be used with option --to-latest"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--execute", "--dry-run"}, "only accepts one of --execute and --dry-run"},
		{[]string{"--reset-offsets", "--group", "g", "--to-earliest"}, "one of the reset scopes should be defined: --all-topics, --topic"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--all-topics", "--to-earliest"}, "--topic can't be used with option --all-topics"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t:x", "--to-earliest"}, "invalid partition 'x'"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "2024-01-01"}, "--to-datetime:"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--by-duration", "1h"}, "--by-duration:"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-offset", "x"}, "invalid value \"x\" for flag -to-offset"},
		{[]string{"--list", "--execute"}, "option --execute can only be used with --reset-offsets"},
		{[]string{"--list", "--to-earliest"}, "option --to-earliest can only be used with --reset-offsets"},
		{[]string{"--list", "--timeout", "0"}, "--timeout 0"},
		{[]string{"--list", "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		err := runConsumerGroups(context.Background(), append(append([]string{}, bs...), c.args...), nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error()+errb.String(), c.want) {
			t.Errorf("%q: got %v (stderr %q), want an error containing %q", c.args, err, errb.String(), c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%q: printed %q", c.args, out.String())
		}
	}
	var errb bytes.Buffer
	if err := runConsumerGroups(context.Background(), []string{"--list"}, nil, &bytes.Buffer{}, &errb); err == nil || !strings.Contains(err.Error(), "--bootstrap-server") {
		t.Errorf("no --bootstrap-server: %v", err)
	}
}

func TestConsumerGroupsAssignmentString(t *testing.T) {
	s := kadm.TopicsSet{}
	if got := cgAssignment(s); got != "-" {
		t.Errorf("empty: %q", got)
	}
	s.Add("orders", 2, 0)
	s.Add("audit", 1)
	if got := cgAssignment(s); got != "audit:1;orders:0,2" {
		t.Errorf("got %q", got)
	}
}
