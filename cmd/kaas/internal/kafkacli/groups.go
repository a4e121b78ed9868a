package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kafka-groups.sh (KIP-1043): list the groups of every type (classic,
// consumer, share, streams) with their type and protocol type. Flags,
// refusals and output follow Kafka 4's GroupsCommand.
var _ = register(Tool{Name: "groups", Kafka: "kafka-groups.sh", Run: runGroups})

// groupsTypes are the group types --group-type takes, lower-cased, and how
// Kafka's GroupType prints each.
var groupsTypes = map[string]string{
	"classic":  "Classic",
	"consumer": "Consumer",
	"share":    "Share",
	"streams":  "Streams",
}

// groupsFilter is what --list keeps: Kafka's combinedFilter. At most one
// of the --consumer, --share, --streams shorthands is set, and none of them
// with --group-type or --protocol.
type groupsFilter struct {
	groupType string // lower-cased; "" for any
	protocol  string
	byProto   bool // --protocol given (an empty protocol type is a value)
	consumer  bool
	share     bool
	streams   bool
}

// keep reports whether a listed group passes the filter. groupType is as
// the broker sent it (lower-case, empty before ListGroups v5).
func (f groupsFilter) keep(groupType, protocol string) bool {
	groupType = strings.ToLower(groupType)
	switch {
	case f.groupType != "":
		return groupType == f.groupType && (!f.byProto || protocol == f.protocol)
	case f.byProto:
		return protocol == f.protocol
	case f.consumer:
		// A classic group of Java's consumer, a simple group that only
		// commits offsets (no protocol type) and a KIP-848 group.
		return protocol == "consumer" || protocol == "" || groupType == "consumer"
	case f.share:
		return groupType == "share"
	case f.streams:
		return groupType == "streams"
	}
	return true
}

// groupsTypeName is a group type as Kafka's tool prints it: "" when the
// broker did not say, "Unknown" for a type Kafka does not know.
func groupsTypeName(groupType string) string {
	if groupType == "" {
		return ""
	}
	if n, ok := groupsTypes[strings.ToLower(groupType)]; ok {
		return n
	}
	return "Unknown"
}

// groupsTable writes Kafka's GROUP TYPE PROTOCOL table: every column as
// wide as the longest value shown (at least 20), the header without a
// trailing space, each row with one after every column.
func groupsTable(out io.Writer, rows [][3]string) {
	w := 20
	for _, r := range rows {
		for _, v := range r {
			w = max(w, len(v))
		}
	}
	fmt.Fprintf(out, "%-*s %-*s %-*s\n", w, "GROUP", w, "TYPE", w, "PROTOCOL")
	for _, r := range rows {
		fmt.Fprintf(out, "%-*s %-*s %-*s \n", w, r[0], w, r[1], w, r[2])
	}
}

// groupsCheck refuses what GroupsCommandOptions refuses, in its order.
func groupsCheck(given map[string]bool, groupType string) error {
	if given["group-type"] {
		if _, ok := groupsTypes[strings.ToLower(groupType)]; !ok {
			return fmt.Errorf("--group-type must be a valid group type (classic, consumer, share or streams), not %q", groupType)
		}
	}
	for _, rule := range [][]string{
		{"consumer", "group-type", "protocol", "share", "streams"},
		{"share", "consumer", "group-type", "protocol", "streams"},
		{"streams", "consumer", "group-type", "protocol", "share"},
	} {
		if !given[rule[0]] {
			continue
		}
		for _, other := range rule[1:] {
			if given[other] {
				return fmt.Errorf("Option \"[%s]\" can't be used with option \"[%s]\"", rule[0], other)
			}
		}
	}
	return nil
}

func runGroups(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var conn Conn
	fs := NewFlagSet("groups", stderr)
	conn.Register(fs)
	var list bool
	var f groupsFilter
	fs.BoolVar(&list, "list", false, "list the groups")
	fs.StringVar(&f.groupType, "group-type", "", "only groups of this type: classic, consumer, share or streams")
	fs.StringVar(&f.protocol, "protocol", "", "only groups of this protocol type (e.g. consumer, connect)")
	fs.BoolVar(&f.consumer, "consumer", false, "only consumer groups: type consumer, and type classic with protocol type consumer or none")
	fs.BoolVar(&f.share, "share", false, "only share groups")
	fs.BoolVar(&f.streams, "streams", false, "only streams groups")
	given, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if conn.Bootstrap == "" {
		return errors.New("missing required argument --bootstrap-server")
	}
	if !list {
		return errors.New("command must include exactly one action: --list")
	}
	if err := groupsCheck(given, f.groupType); err != nil {
		return err
	}
	f.groupType = strings.ToLower(f.groupType)
	f.byProto = given["protocol"]

	_, adm, err := conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	// Kafka's tool waits 30 s for the listing.
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return groupsListAll(lctx, adm, stdout, f)
}

// groupsListAll lists every group of every type (ListGroups without a type
// filter, so the broker also reports groups of types Kafka may add) and
// prints those f keeps, sorted by id.
func groupsListAll(ctx context.Context, adm *kadm.Client, out io.Writer, f groupsFilter) error {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	var rows [][3]string
	for _, g := range listed.Sorted() {
		if f.keep(g.GroupType, g.ProtocolType) {
			rows = append(rows, [3]string{g.Group, groupsTypeName(g.GroupType), g.ProtocolType})
		}
	}
	groupsTable(out, rows)
	return nil
}
