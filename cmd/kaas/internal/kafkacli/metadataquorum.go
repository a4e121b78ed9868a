package kafkacli

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka-metadata-quorum.sh: the metadata quorum's status and replication,
// with Kafka 4's MetadataQuorumCommand subcommands, flags and output. kaas
// answers DescribeQuorum from its controller: the controller is the leader
// and only voter, every other broker an observer.
var _ = register(Tool{Name: "metadata-quorum", Kafka: "kafka-metadata-quorum.sh", Run: runMetadataQuorum})

type metadataQuorumOpts struct {
	conn                       Conn
	controller                 string
	status, replication, human bool
	// add-controller's and remove-controller's flags, taken so that the
	// refusal names the command rather than a flag.
	dryRun                bool
	controllerID          int
	controllerDirectoryID string
}

// errNoVoterChanges refuses add-controller and remove-controller: a kaas
// cluster's controller is elected among the brokers by a Kubernetes Lease,
// not by a KRaft quorum whose voters could be changed.
func errNoVoterChanges(cmd string) error {
	return fmt.Errorf("%s is not supported: kaas has no KRaft controller quorum; its controller is the broker holding the kaas-controller Lease, and any broker may take it over", cmd)
}

func runMetadataQuorum(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o := &metadataQuorumOpts{}
	tool := subcommandTool{
		name:     "metadata-quorum",
		commands: []string{"describe", "add-controller", "remove-controller"},
		global: func(fs *flag.FlagSet) {
			o.conn.Register(fs)
			fs.StringVar(&o.controller, "bootstrap-controller", "", "not supported: kaas has no separate controllers; use --bootstrap-server")
		},
		command: func(cmd string, fs *flag.FlagSet) {
			switch cmd {
			case "describe":
				fs.BoolVar(&o.status, "status", false, "a short summary of the quorum status")
				fs.BoolVar(&o.replication, "replication", false, "detailed information about the status of replication")
				fs.BoolVar(&o.human, "human-readable", false, "with --replication, timestamps as how long ago")
			case "add-controller":
				fs.BoolVar(&o.dryRun, "dry-run", false, "not supported")
			case "remove-controller":
				for _, n := range []string{"controller-id", "i"} {
					fs.IntVar(&o.controllerID, n, 0, "not supported")
				}
				for _, n := range []string{"controller-directory-id", "d"} {
					fs.StringVar(&o.controllerDirectoryID, n, "", "not supported")
				}
				fs.BoolVar(&o.dryRun, "dry-run", false, "not supported")
			}
		},
	}
	cmd, given, err := tool.parse(args, stderr)
	if err != nil {
		return err
	}
	if given["bootstrap-controller"] {
		return errNoControllers
	}
	if o.conn.Bootstrap == "" {
		return errors.New("missing required argument --bootstrap-server")
	}
	if cmd != "describe" {
		return errNoVoterChanges(cmd)
	}
	switch {
	case o.status && o.replication:
		return errors.New("Only one of --status or --replication should be specified with describe sub-command")
	case o.status && o.human:
		return errors.New("The option --human-readable is only supported along with --replication")
	case !o.status && !o.replication:
		return errors.New("One of --status or --replication must be specified with describe sub-command")
	}
	cl, adm, err := o.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	if o.status {
		dc, err := clusterDescribe(ctx, cl, false)
		if err != nil {
			return err
		}
		q, err := describeQuorum(ctx, cl)
		if err != nil {
			return err
		}
		text, err := quorumStatusText(dc.ClusterID, q)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, text)
		return nil
	}
	q, err := describeQuorum(ctx, cl)
	if err != nil {
		return err
	}
	text, err := quorumReplicationText(q, o.human, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, text)
	return nil
}

// quorumInfo is Kafka's QuorumInfo: the metadata log partition's state and
// the voters' endpoints.
type quorumInfo struct {
	kmsg.DescribeQuorumResponseTopicPartition
	nodes map[int32][]kmsg.DescribeQuorumResponseNodeListener
}

// describeQuorum asks for __cluster_metadata-0, as Kafka's admin client's
// describeMetadataQuorum does.
func describeQuorum(ctx context.Context, cl *kgo.Client) (*quorumInfo, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := clusterBrokerError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, fmt.Errorf("DescribeQuorum: %w", err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != t.Topic || len(resp.Topics[0].Partitions) != 1 {
		return nil, errors.New("DescribeQuorum: the answer is not about __cluster_metadata-0 alone")
	}
	p := resp.Topics[0].Partitions[0]
	if err := clusterBrokerError(p.ErrorCode, p.ErrorMessage); err != nil {
		return nil, fmt.Errorf("DescribeQuorum: %w", err)
	}
	q := &quorumInfo{DescribeQuorumResponseTopicPartition: p, nodes: map[int32][]kmsg.DescribeQuorumResponseNodeListener{}}
	for _, n := range resp.Nodes {
		q.nodes[n.NodeID] = n.Listeners
	}
	return q, nil
}

// leader is the leader's replica state, which Kafka's tool requires
// among the voters.
func (q *quorumInfo) leader() (*kmsg.DescribeQuorumResponseTopicPartitionReplicaState, error) {
	for i := range q.CurrentVoters {
		if q.CurrentVoters[i].ReplicaID == q.LeaderID {
			return &q.CurrentVoters[i], nil
		}
	}
	return nil, fmt.Errorf("DescribeQuorum: the leader %d is not among the voters", q.LeaderID)
}

// quorumStatusText is `describe --status`: the lag is the leader's log end
// offset less the voter furthest behind (the first of equals), its time
// the gap between their last caught-up times (-1 if either is unknown).
func quorumStatusText(clusterID string, q *quorumInfo) (string, error) {
	leader, err := q.leader()
	if err != nil {
		return "", err
	}
	behind := &q.CurrentVoters[0]
	for i := range q.CurrentVoters {
		if q.CurrentVoters[i].LogEndOffset < behind.LogEndOffset {
			behind = &q.CurrentVoters[i]
		}
	}
	lagTime := int64(-1)
	switch {
	case behind == leader:
		lagTime = 0
	case leader.LastCaughtUpTimestamp != -1 && behind.LastCaughtUpTimestamp != -1:
		lagTime = leader.LastCaughtUpTimestamp - behind.LastCaughtUpTimestamp
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ClusterId:              %s\n", clusterID)
	fmt.Fprintf(&b, "LeaderId:               %d\n", q.LeaderID)
	fmt.Fprintf(&b, "LeaderEpoch:            %d\n", q.LeaderEpoch)
	fmt.Fprintf(&b, "HighWatermark:          %d\n", q.HighWatermark)
	fmt.Fprintf(&b, "MaxFollowerLag:         %d\n", leader.LogEndOffset-behind.LogEndOffset)
	fmt.Fprintf(&b, "MaxFollowerLagTimeMs:   %d\n", lagTime)
	fmt.Fprintf(&b, "CurrentVoters:          %s\n", q.replicasText(q.CurrentVoters))
	fmt.Fprintf(&b, "CurrentObservers:       %s\n", q.replicasText(q.Observers))
	return b.String(), nil
}

// replicasText is Kafka's list of replicas: [{"id": 0, "directoryId":
// null, "endpoints": ["PLAINTEXT://host:9092"]}, ...], endpoints only for
// nodes the answer lists (the voters).
func (q *quorumInfo) replicasText(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) string {
	items := make([]string, len(rs))
	for i, r := range rs {
		dir := "null"
		if r.ReplicaDirectoryID != ([16]byte{}) {
			dir = `"` + quorumUUIDText(r.ReplicaDirectoryID) + `"`
		}
		s := fmt.Sprintf(`{"id": %d, "directoryId": %s`, r.ReplicaID, dir)
		if ls := q.nodes[r.ReplicaID]; len(ls) > 0 {
			eps := make([]string, len(ls))
			for j, l := range ls {
				host := l.Host
				if strings.Contains(host, ":") {
					host = "[" + host + "]"
				}
				eps[j] = fmt.Sprintf(`"%s://%s:%d"`, l.Name, host, l.Port)
			}
			s += `, "endpoints": [` + strings.Join(eps, ", ") + "]"
		}
		items[i] = s + "}"
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// quorumUUIDText is Kafka's Uuid.toString: URL-safe base64 without padding.
func quorumUUIDText(u [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// quorumReplicationText is `describe --replication`: the leader, the
// other voters (Follower) and the observers, in Kafka's table (each cell
// padded to its column and followed by a tab).
func quorumReplicationText(q *quorumInfo, human bool, now time.Time) (string, error) {
	leader, err := q.leader()
	if err != nil {
		return "", err
	}
	rows := [][]string{{"NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"}}
	add := func(r *kmsg.DescribeQuorumResponseTopicPartitionReplicaState, status string) error {
		fetch, err := quorumTimestamp(r.LastFetchTimestamp, "last fetch", human, now)
		if err != nil {
			return err
		}
		caughtUp, err := quorumTimestamp(r.LastCaughtUpTimestamp, "last caught up", human, now)
		if err != nil {
			return err
		}
		rows = append(rows, []string{fmt.Sprint(r.ReplicaID), quorumUUIDText(r.ReplicaDirectoryID), fmt.Sprint(r.LogEndOffset),
			fmt.Sprint(leader.LogEndOffset - r.LogEndOffset), fetch, caughtUp, status})
		return nil
	}
	if err := add(leader, "Leader"); err != nil {
		return "", err
	}
	for i := range q.CurrentVoters {
		if q.CurrentVoters[i].ReplicaID != q.LeaderID {
			if err := add(&q.CurrentVoters[i], "Follower"); err != nil {
				return "", err
			}
		}
	}
	for i := range q.Observers {
		if err := add(&q.Observers[i], "Observer"); err != nil {
			return "", err
		}
	}
	return quorumTable(rows), nil
}

// quorumTimestamp is a replica's timestamp as Kafka's tool prints it: -1
// when unknown, else milliseconds since the epoch or, human-readable, how
// long ago; a time in the future (clocks apart) is an error, as in Kafka.
func quorumTimestamp(ms int64, what string, human bool, now time.Time) (string, error) {
	if ms == -1 {
		return "-1", nil
	}
	if !human {
		return fmt.Sprint(ms), nil
	}
	nowMs := now.UnixMilli()
	if ms <= 0 || ms > nowMs {
		return "", fmt.Errorf("Error while computing relative time, possible drift in system clock.\nCurrent timestamp is %d, %s timestamp is %d", nowMs, what, ms)
	}
	return fmt.Sprintf("%d ms ago", nowMs-ms), nil
}

// quorumTable is Kafka's ToolsUtils.prettyPrintTable: the first row is
// the header; every cell is padded to its column's width and followed by a
// tab.
func quorumTable(rows [][]string) string {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-len(c)))
			b.WriteByte('\t')
		}
		b.WriteByte('\n')
	}
	return b.String()
}
