package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kaas log-dirs is Kafka 4's kafka-log-dirs.sh (LogDirsCommand): the same
// flags and the same JSON. A kaas broker has one log directory (its data
// dir, or "memory") listing the partitions it leads.
var _ = register(Tool{Name: "log-dirs", Kafka: "kafka-log-dirs.sh", Run: runLogDirs})

func runLogDirs(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var conn Conn
	var describe bool
	var topicList, brokerList string
	fs := NewFlagSet("log-dirs", stderr)
	conn.Register(fs)
	fs.BoolVar(&describe, "describe", false, "REQUIRED: Describe the specified log directories on the specified brokers.")
	fs.StringVar(&topicList, "topic-list", "", "The list of topics to be queried in the form \"topic1,topic2,topic3\". All topics will be queried if no topic list is specified.")
	fs.StringVar(&brokerList, "broker-list", "", "The list of brokers to be queried in the form \"0,1,2\". All brokers in the cluster will be queried if no broker list is specified.")
	if len(args) == 0 {
		fs.Usage()
		return errors.New("This tool helps to query log directory usage on the specified brokers: give --bootstrap-server and --describe")
	}
	set, err := Parse(fs, args)
	if err != nil {
		return err
	}
	for _, name := range []string{"bootstrap-server", "describe"} {
		if !set[name] {
			return fmt.Errorf(`Missing required argument "[%s]"`, name)
		}
	}
	topics := map[string]bool{}
	for _, t := range strings.Split(topicList, ",") {
		if t != "" {
			topics[t] = true
		}
	}
	// Kafka drops empty entries of the list and asks each broker once.
	asked := map[int32]bool{}
	for _, f := range strings.Split(brokerList, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return fmt.Errorf("--broker-list %q: %q is not a broker id", brokerList, f)
		}
		asked[int32(id)] = true
	}

	cl, adm, err := conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	cluster, err := reassignClusterBrokers(ctx, cl)
	if err != nil {
		return err
	}
	inCluster := map[int32]bool{}
	var all []int32
	for _, b := range cluster {
		inCluster[b.id] = true
		all = append(all, b.id)
	}
	var query, unknown []int32
	if len(asked) == 0 {
		query = all
	}
	for id := range asked {
		if inCluster[id] {
			query = append(query, id)
		} else {
			unknown = append(unknown, id)
		}
	}
	sortIDs := func(ids []int32) { sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] }) }
	sortIDs(query)
	sortIDs(unknown)
	if len(unknown) > 0 {
		return fmt.Errorf("ERROR: The given brokers do not exist from --broker-list: %s. Current existent brokers: %s",
			reassignJoinIDs(unknown), reassignJoinIDs(all))
	}
	fmt.Fprintln(stdout, "Querying brokers for log directories information")
	described := map[int32]kadm.DescribedLogDirs{}
	for _, id := range query {
		ds, err := adm.DescribeBrokerLogDirs(ctx, id, nil)
		if err != nil {
			return fmt.Errorf("describe the log directories of broker %d: %w", id, err)
		}
		described[id] = ds
	}
	fmt.Fprintf(stdout, "Received log directory information from brokers %s\n", reassignJoinIDs(query))
	fmt.Fprintln(stdout, logDirsJSON(query, described, topics))
	return nil
}

// logDirsJSON is Kafka's JSON of the answers, keys in the order Kafka's
// hash maps print them; directories and partitions sorted.
func logDirsJSON(brokers []int32, described map[int32]kadm.DescribedLogDirs, topics map[string]bool) string {
	type partition struct {
		Partition string `json:"partition"`
		Size      int64  `json:"size"`
		OffsetLag int64  `json:"offsetLag"`
		IsFuture  bool   `json:"isFuture"`
	}
	type logDir struct {
		Partitions []partition `json:"partitions"`
		Error      *string     `json:"error"`
		LogDir     string      `json:"logDir"`
	}
	type broker struct {
		Broker  int32    `json:"broker"`
		LogDirs []logDir `json:"logDirs"`
	}
	doc := struct {
		Brokers []broker `json:"brokers"`
		Version int      `json:"version"`
	}{Brokers: []broker{}, Version: 1}
	for _, id := range brokers {
		b := broker{Broker: id, LogDirs: []logDir{}}
		dirs := make([]string, 0, len(described[id]))
		for d := range described[id] {
			dirs = append(dirs, d)
		}
		sort.Strings(dirs)
		for _, d := range dirs {
			desc := described[id][d]
			ld := logDir{LogDir: d, Partitions: []partition{}}
			if desc.Err != nil {
				// Kafka prints the exception's class name; kaas the error
				// code's name and description.
				s := desc.Err.Error()
				ld.Error = &s
			}
			for _, p := range desc.Topics.Sorted() {
				if len(topics) > 0 && !topics[p.Topic] {
					continue
				}
				ld.Partitions = append(ld.Partitions, partition{
					Partition: reassignTP{p.Topic, p.Partition}.String(),
					Size:      p.Size,
					OffsetLag: p.OffsetLag,
					IsFuture:  p.IsFuture,
				})
			}
			b.LogDirs = append(b.LogDirs, ld)
		}
		doc.Brokers = append(doc.Brokers, b)
	}
	return reassignMarshal(doc)
}
