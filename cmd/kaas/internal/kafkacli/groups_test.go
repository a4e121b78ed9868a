package kafkacli

import (
	"bytes"
	"strings"
	"testing"
)

// TestGroupsFilter checks Kafka's combinedFilter over the kinds of groups a
// broker lists: type as sent on the wire, protocol type.
func TestGroupsFilter(t *testing.T) {
	groups := []struct{ id, typ, proto string }{
		{"classic-consumer", "classic", "consumer"},
		{"classic-simple", "classic", ""},
		{"classic-connect", "classic", "connect"},
		{"kip848", "consumer", "consumer"},
		{"share", "share", "share"},
		{"streams", "streams", "streams"},
		{"old-broker", "", "consumer"},
	}
	cases := []struct {
		name string
		f    groupsFilter
		want string
	}{
		{"none", groupsFilter{}, "classic-consumer classic-simple classic-connect kip848 share streams old-broker"},
		{"type classic", groupsFilter{groupType: "classic"}, "classic-consumer classic-simple classic-connect"},
		{"type classic protocol connect", groupsFilter{groupType: "classic", protocol: "connect", byProto: true}, "classic-connect"},
		{"type classic empty protocol", groupsFilter{groupType: "classic", byProto: true}, "classic-simple"},
		{"protocol consumer", groupsFilter{protocol: "consumer", byProto: true}, "classic-consumer kip848 old-broker"},
		{"consumer", groupsFilter{consumer: true}, "classic-consumer classic-simple kip848 old-broker"},
		{"share", groupsFilter{share: true}, "share"},
		{"streams", groupsFilter{streams: true}, "streams"},
		{"type share", groupsFilter{groupType: "share"}, "share"},
	}
	for _, c := range cases {
		var kept []string
		for _, g := range groups {
			if c.f.keep(g.typ, g.proto) {
				kept = append(kept, g.id)
			}
		}
		if got := strings.Join(kept, " "); got != c.want {
			t.Errorf("%s: kept %q, want %q", c.name, got, c.want)
		}
	}
}

func TestGroupsCheck(t *testing.T) {
	cases := []struct {
		given     []string
		groupType string
		want      string // "" for accepted
	}{
		{nil, "", ""},
		{[]string{"group-type", "protocol"}, "Classic", ""},
		{[]string{"group-type"}, "STREAMS", ""},
		{[]string{"group-type"}, "bogus", `--group-type must be a valid group type`},
		{[]string{"group-type"}, "unknown", `--group-type must be a valid group type`},
		{[]string{"group-type"}, "", `--group-type must be a valid group type`},
		{[]string{"consumer", "group-type"}, "share", `Option "[consumer]" can't be used with option "[group-type]"`},
		{[]string{"consumer", "share"}, "", `Option "[consumer]" can't be used with option "[share]"`},
		{[]string{"share", "protocol"}, "", `Option "[share]" can't be used with option "[protocol]"`},
		{[]string{"share", "streams"}, "", `Option "[share]" can't be used with option "[streams]"`},
		{[]string{"streams", "protocol"}, "", `Option "[streams]" can't be used with option "[protocol]"`},
	}
	for _, c := range cases {
		given := map[string]bool{}
		for _, g := range c.given {
			given[g] = true
		}
		err := groupsCheck(given, c.groupType)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v %q: refused: %v", c.given, c.groupType, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v %q: got %v, want %q", c.given, c.groupType, err, c.want)
		}
	}
}

// TestGroupsTable checks Kafka's widths: one width for all columns, the
// longest value or 20.
func TestGroupsTable(t *testing.T) {
	var b bytes.Buffer
	groupsTable(&b, [][3]string{{"g", "Classic", ""}})
	want := "GROUP                TYPE                 PROTOCOL            \n" +
		"g                    Classic                                   \n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	long := "a-group-id-of-25-chars-xx"
	groupsTable(&b, [][3]string{{long, "Consumer", "consumer"}})
	pad := func(s string) string { return s + strings.Repeat(" ", 25-len(s)) }
	want = pad("GROUP") + " " + pad("TYPE") + " " + pad("PROTOCOL") + "\n" +
		pad(long) + " " + pad("Consumer") + " " + pad("consumer") + " \n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	if groupsTypeName("") != "" || groupsTypeName("share") != "Share" || groupsTypeName("future") != "Unknown" {
		t.Error("groupsTypeName")
	}
}
