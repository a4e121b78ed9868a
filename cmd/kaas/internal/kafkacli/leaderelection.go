package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kaas leader-election is Kafka 4's kafka-leader-election.sh
// (LeaderElectionCommand): the same flags, checks and output. kaas runs no
// election (one copy per partition, leaders placed by the controller): a
// led partition answers ELECTION_NOT_NEEDED, which the tool prints as
// "Valid replica already elected".
var _ = register(Tool{Name: "leader-election", Kafka: "kafka-leader-election.sh", Run: runLeaderElection})

type electionOpts struct {
	conn        Conn
	adminConfig string
	jsonFile    string
	topic       string
	partition   int
	all         bool
	typeName    string // PREFERRED or UNCLEAN
	electType   int8
	partitions  []reassignTP // nil: every partition
}

func runLeaderElection(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseElectionArgs(args, stderr)
	if err != nil {
		return err
	}
	cl, adm, err := o.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()

	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = o.electType
	req.TimeoutMillis = 30000
	if o.partitions != nil {
		// A non-null topic list: a null one asks for every partition.
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
		idx := map[string]int{}
		for _, tp := range o.partitions {
			i, ok := idx[tp.Topic]
			if !ok {
				i = len(req.Topics)
				idx[tp.Topic] = i
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic = tp.Topic
				req.Topics = append(req.Topics, rt)
			}
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.Partition)
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if errors.Is(err, kerr.ClusterAuthorizationFailed) {
			fmt.Fprintln(stdout, "Not authorized to perform leader election")
			return errors.New("Not authorized to perform leader election")
		}
		return fmt.Errorf("leader election: %w", err)
	}
	var succeeded, noop, failed []reassignTP
	why := map[reassignTP]string{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			tp := reassignTP{rt.Topic, p.Partition}
			err := kerr.ErrorForCode(p.ErrorCode)
			switch {
			case err == nil:
				succeeded = append(succeeded, tp)
			case errors.Is(err, kerr.ElectionNotNeeded):
				noop = append(noop, tp)
			case errors.Is(err, kerr.ClusterAuthorizationFailed):
				fmt.Fprintln(stdout, "Not authorized to perform leader election")
				return errors.New("Not authorized to perform leader election")
			default:
				failed = append(failed, tp)
				why[tp] = err.Error()
				if p.ErrorMessage != nil && *p.ErrorMessage != "" {
					why[tp] += " (" + *p.ErrorMessage + ")"
				}
			}
		}
	}
	// Kafka prints its sets in hash order; kaas sorts them.
	reassignSortTPs(succeeded)
	reassignSortTPs(noop)
	reassignSortTPs(failed)
	if len(succeeded) > 0 {
		fmt.Fprintf(stdout, "Successfully completed leader election (%s) for partitions %s\n", o.typeName, reassignJoinTPs(succeeded, ", "))
	}
	if len(noop) > 0 {
		fmt.Fprintf(stdout, "Valid replica already elected for partitions %s\n", reassignJoinTPs(noop, ", "))
	}
	if len(failed) > 0 {
		for _, tp := range failed {
			fmt.Fprintf(stdout, "Error completing leader election (%s) for partition: %s: %s\n", o.typeName, tp, why[tp])
		}
		return fmt.Errorf("%d replica(s) could not be elected", len(failed))
	}
	return nil
}

// parseElectionArgs reads the flags and the JSON file with Kafka's checks,
// in Kafka's order.
func parseElectionArgs(args []string, stderr io.Writer) (*electionOpts, error) {
	o := &electionOpts{}
	fs := NewFlagSet("leader-election", stderr)
	o.conn.Register(fs)
	fs.StringVar(&o.adminConfig, "admin.config", "", "Configuration properties files to pass to the admin client (Kafka 4.0's name for --command-config).")
	fs.StringVar(&o.jsonFile, "path-to-json-file", "", "The JSON file with the list of partitions for which leader elections should be performed:\n{\"partitions\": [{\"topic\": \"foo\", \"partition\": 1}, {\"topic\": \"foobar\", \"partition\": 2}]}\nNot allowed if --all-topic-partitions or --topic flags are specified.")
	fs.StringVar(&o.topic, "topic", "", "Name of topic for which to perform an election. Not allowed if --path-to-json-file or --all-topic-partitions is specified.")
	fs.IntVar(&o.partition, "partition", 0, "Partition id for which to perform an election. REQUIRED if --topic is specified.")
	fs.BoolVar(&o.all, "all-topic-partitions", false, "Perform election on all of the eligible topic partitions based on the type of election. Not allowed if --topic or --path-to-json-file is specified.")
	fs.StringVar(&o.typeName, "election-type", "", "Type of election to attempt: preferred or unclean. REQUIRED.")
	if len(args) == 0 {
		fs.Usage()
		return nil, errors.New("This tool attempts to elect a new leader for a set of topic partitions: give --election-type and one of --topic, --all-topic-partitions or --path-to-json-file")
	}
	set, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if set["admin.config"] {
		if set["command-config"] {
			return nil, errors.New("--admin.config and --command-config name the same file: give one")
		}
		o.conn.CommandConfig = o.adminConfig
	}
	var missing []string
	if o.conn.Bootstrap == "" {
		missing = append(missing, "bootstrap-server")
	}
	if !set["election-type"] {
		missing = append(missing, "election-type")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("Missing required option(s): %s", strings.Join(missing, ", "))
	}
	switch strings.ToUpper(o.typeName) {
	case "PREFERRED":
		o.typeName, o.electType = "PREFERRED", 0
	case "UNCLEAN":
		o.typeName, o.electType = "UNCLEAN", 1
	default:
		return nil, fmt.Errorf("--election-type %q: want preferred or unclean", o.typeName)
	}
	n := 0
	for _, f := range []string{"topic", "all-topic-partitions", "path-to-json-file"} {
		if set[f] {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file")
	}
	if set["topic"] && !set["partition"] {
		return nil, errors.New("Missing required option(s): partition")
	}
	if !set["topic"] && set["partition"] {
		return nil, errors.New("Option partition is only allowed if topic is used")
	}
	switch {
	case set["topic"]:
		if o.partition < 0 || o.partition > 1<<31-1 {
			return nil, fmt.Errorf("--partition %d: not a partition id", o.partition)
		}
		o.partitions = []reassignTP{{o.topic, int32(o.partition)}}
	case set["path-to-json-file"]:
		tps, err := electionReadJSON(o.jsonFile)
		if err != nil {
			return nil, err
		}
		o.partitions = tps
	}
	return o, nil
}

// electionReadJSON reads --path-to-json-file with Kafka's checks.
func electionReadJSON(path string) ([]reassignTP, error) {
	const flagName = "path-to-json-file"
	var f struct {
		Partitions *[]struct {
			Topic     *string `json:"topic"`
			Partition *int32  `json:"partition"`
		} `json:"partitions"`
	}
	if err := reassignReadJSON(flagName, path, &f); err != nil {
		return nil, err
	}
	if f.Partitions == nil {
		return nil, errors.New(`Replica election data is missing "partitions" field`)
	}
	out := []reassignTP{}
	seen := map[reassignTP]int{}
	var dups []string
	for i, p := range *f.Partitions {
		if p.Topic == nil || p.Partition == nil {
			return nil, fmt.Errorf("--%s: partitions[%d] needs \"topic\" and \"partition\"", flagName, i)
		}
		tp := reassignTP{*p.Topic, *p.Partition}
		if seen[tp]++; seen[tp] == 2 {
			dups = append(dups, tp.String())
		}
		out = append(out, tp)
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("Replica election data contains duplicate partitions: %s", reassignJavaSet(dups))
	}
	return out, nil
}
