package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/storage/assignment"
)

const assignmentUsage = `usage:
  kaas assignment show (--data-dir DIR | --file FILE)
      print assignment.json as tables: header, brokers (with partitions led),
      every partition's leader and leader epoch
  kaas assignment plan --in FILE
      run the balancer on FILE = {"previous": <assignment or null>,
      "controller": "kaas-0", "controller_epoch": N, "controller_heartbeat": "...",
      "brokers": [{"name": "kaas-0", "state": "alive", "host": "...", "port": 9092}],
      "topics": {"t": {"id": "...", "partitions": N, "config": {}}}}
      and print the next assignment.json on stdout, the moves on stderr
`

// runAssignment implements "kaas assignment ...": args are what follows
// "assignment" on the command line.
func runAssignment(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, assignmentUsage)
		return errors.New("assignment: missing subcommand (show or plan)")
	}
	switch args[0] {
	case "show":
		return assignmentShow(args[1:], stdout, stderr)
	case "plan":
		return assignmentPlan(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, assignmentUsage)
		return flag.ErrHelp
	default:
		fmt.Fprint(stderr, assignmentUsage)
		return fmt.Errorf("assignment: unknown subcommand %q (show or plan)", args[0])
	}
}

func newAssignmentFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kaas assignment "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, assignmentUsage)
		fs.PrintDefaults()
	}
	return fs
}

func assignmentShow(args []string, stdout, stderr io.Writer) error {
	fs := newAssignmentFlags("show", stderr)
	dataDir := fs.String("data-dir", "", "data directory (reads DIR/__cluster/assignment.json)")
	file := fs.String("file", "", "assignment file to read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("assignment show: unexpected argument %q", fs.Arg(0))
	}
	path := *file
	switch {
	case *dataDir != "" && *file != "":
		return errors.New("assignment show: give --data-dir or --file, not both")
	case *dataDir != "":
		path = assignment.Path(*dataDir)
	case *file == "":
		return errors.New("assignment show: missing --data-dir or --file")
	}
	a, err := assignment.ReadFile(path)
	if err != nil {
		return fmt.Errorf("assignment show: %w", err)
	}
	return printAssignment(stdout, a)
}

func printAssignment(w io.Writer, a *assignment.Assignment) error {
	led := map[int32]int{}
	leaderless := 0
	parts := 0
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			parts++
			if p.Leader == assignment.NoLeader {
				leaderless++
			} else {
				led[p.Leader]++
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "format:\t%d\n", a.Format)
	fmt.Fprintf(tw, "controller:\t%s\n", a.Controller)
	fmt.Fprintf(tw, "controller heartbeat:\t%s\n", a.ControllerHeartbeat)
	fmt.Fprintf(tw, "controller epoch:\t%d\n", a.ControllerEpoch)
	fmt.Fprintf(tw, "assignment version:\t%d\n", a.AssignmentVersion)
	fmt.Fprintf(tw, "topics:\t%d (%d partitions, %d without leader)\n", len(a.Topics), parts, leaderless)
	fmt.Fprintf(tw, "group slots:\t%s\n", slotShares(a.ConsumerGroups.Slots))
	if owners := assignment.SlotOwners(a); !slices.Equal(owners, a.ConsumerGroups.Slots) {
		// The slots of brokers not alive, served where they fall.
		for i, o := range owners {
			if o == "" {
				owners[i] = "nobody"
			}
		}
		fmt.Fprintf(tw, "group slots served:\t%s\n", slotShares(owners))
	}
	if len(a.ConsumerGroups.Held) > 0 {
		// Between coordinators: their groups answer COORDINATOR_NOT_AVAILABLE.
		held := make([]string, len(a.ConsumerGroups.Held))
		for i, s := range a.ConsumerGroups.Held {
			held[i] = strconv.Itoa(s)
		}
		fmt.Fprintf(tw, "held group slots:\t%s\n", strings.Join(held, " "))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "ID\tNAME\tADDRESS\tRACK\tSTATE\tLEADS\tLISTENERS")
	brokers := append([]assignment.Broker(nil), a.Brokers...)
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].ID < brokers[j].ID })
	for _, b := range brokers {
		rack := b.Rack
		if rack == "" {
			rack = "-"
		}
		listeners := b.Listeners
		if listeners == "" {
			listeners = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", b.ID, b.Name, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), rack, b.State, led[b.ID], listeners)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tLEADER_EPOCH\tTOPIC_ID")
	names := make(map[int32]string, len(a.Brokers))
	for _, b := range a.Brokers {
		names[b.ID] = b.Name
	}
	for _, name := range a.TopicNames() {
		t := a.Topics[name]
		for i, p := range t.Partitions {
			leader := "-"
			if p.Leader != assignment.NoLeader {
				leader = fmt.Sprintf("%d (%s)", p.Leader, names[p.Leader])
			}
			id := ""
			if i == 0 {
				id = t.ID
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", name, i, leader, p.LeaderEpoch, id)
		}
	}
	return tw.Flush()
}

// planInput is the file "assignment plan --in" reads.
type planInput struct {
	Previous            json.RawMessage               `json:"previous"`
	Controller          string                        `json:"controller"`
	ControllerEpoch     int64                         `json:"controller_epoch"`
	ControllerHeartbeat string                        `json:"controller_heartbeat"`
	Brokers             []balancer.BrokerInfo         `json:"brokers"`
	Topics              map[string]balancer.TopicSpec `json:"topics"`
}

func assignmentPlan(args []string, stdout, stderr io.Writer) error {
	fs := newAssignmentFlags("plan", stderr)
	in := fs.String("in", "", "input file (see usage)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("assignment plan: unexpected argument %q", fs.Arg(0))
	}
	if *in == "" {
		return errors.New("assignment plan: missing --in FILE")
	}
	data, err := os.ReadFile(*in)
	if err != nil {
		return fmt.Errorf("assignment plan: %w", err)
	}
	var p planInput
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("assignment plan: parse %s: %w", *in, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("assignment plan: parse %s: trailing data after the document", *in)
	}
	input := balancer.Input{
		Controller:          p.Controller,
		ControllerEpoch:     p.ControllerEpoch,
		ControllerHeartbeat: p.ControllerHeartbeat,
		Brokers:             p.Brokers,
		Topics:              p.Topics,
	}
	if prev := bytes.TrimSpace(p.Previous); len(prev) > 0 && !bytes.Equal(prev, []byte("null")) {
		if input.Previous, err = assignment.Decode(prev); err != nil {
			return fmt.Errorf("assignment plan: previous: %w", err)
		}
	}
	next, moves, err := balancer.Compute(input)
	if err != nil {
		return fmt.Errorf("assignment plan: %w", err)
	}
	out, err := assignment.Encode(next)
	if err != nil {
		return fmt.Errorf("assignment plan: %w", err)
	}
	if _, err := stdout.Write(out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "moves: %d\n", len(moves))
	for _, m := range moves {
		from := "none"
		if m.From != assignment.NoLeader {
			from = strconv.Itoa(int(m.From))
		}
		fmt.Fprintf(stderr, "  %s/%d: %s -> %d\n", m.Topic, m.Partition, from, m.To)
	}
	prevVersion := "none"
	if input.Previous != nil {
		prevVersion = strconv.FormatInt(input.Previous.AssignmentVersion, 10)
	}
	fmt.Fprintf(stderr, "assignment_version: %d (previous %s)\n", next.AssignmentVersion, prevVersion)
	return nil
}

// slotShares summarizes a slot list: how many slots, then how many each
// broker serves, in the order the brokers first appear.
func slotShares(slots []string) string {
	count := map[string]int{}
	var order []string
	for _, s := range slots {
		if count[s] == 0 {
			order = append(order, s)
		}
		count[s]++
	}
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%s %d", s, count[s])
	}
	return fmt.Sprintf("%d (%s)", len(slots), strings.Join(parts, ", "))
}
