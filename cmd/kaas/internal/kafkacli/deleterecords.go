package kafkacli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kaas delete-records is Kafka 4's kafka-delete-records.sh
// (DeleteRecordsCommand): each partition of --offset-json-file has its log
// start moved up to the offset given (-1: the high watermark).
var _ = register(Tool{Name: "delete-records", Kafka: "kafka-delete-records.sh", Run: runDeleteRecords})

// deleteRecordsTarget is one partition of the offset JSON file.
type deleteRecordsTarget struct {
	topic     string
	partition int32
	offset    int64
}

func runDeleteRecords(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var conn Conn
	var file string
	fs := NewFlagSet("delete-records", stderr)
	conn.Register(fs)
	fs.StringVar(&file, "offset-json-file", "", "REQUIRED: the JSON file with the offset per partition, as\n"+
		`{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version": 1}`)
	if len(args) == 0 {
		fs.Usage()
		return errors.New("This tool helps to delete records of the given partitions down to the specified offset: give --bootstrap-server and --offset-json-file")
	}
	set, err := Parse(fs, args)
	if err != nil {
		return err
	}
	for _, name := range []string{"bootstrap-server", "offset-json-file"} {
		if !set[name] {
			return fmt.Errorf(`Missing required argument "[%s]"`, name)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--offset-json-file: %w", err)
	}
	targets, err := deleteRecordsParse(data)
	if err != nil {
		return err
	}
	cl, adm, err := conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, txnOpTimeout)
	defer cancel()

	results := map[string]error{}
	lows := map[string]int64{}
	// Partitions of unknown topics are answered as Kafka's admin client
	// answers them, from metadata, without a request.
	var topics []string
	for _, t := range targets {
		topics = append(topics, t.topic)
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 30_000
	byTopic := map[string]int{}
	for _, t := range targets {
		td := md.Topics[t.topic]
		if td.Err != nil {
			results[txnTP(t.topic, t.partition)] = td.Err
			continue
		}
		if _, ok := td.Partitions[t.partition]; !ok {
			results[txnTP(t.topic, t.partition)] = kerr.UnknownTopicOrPartition
			continue
		}
		i, ok := byTopic[t.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[t.topic] = i
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = t.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = t.partition, t.offset
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	fmt.Fprintln(stdout, "Executing records delete operation")
	if len(req.Topics) > 0 {
		for _, shard := range cl.RequestSharded(ctx, req) {
			sreq := shard.Req.(*kmsg.DeleteRecordsRequest)
			if shard.Err != nil {
				for _, rt := range sreq.Topics {
					for _, rp := range rt.Partitions {
						results[txnTP(rt.Topic, rp.Partition)] = shard.Err
					}
				}
				continue
			}
			for _, rt := range shard.Resp.(*kmsg.DeleteRecordsResponse).Topics {
				for _, rp := range rt.Partitions {
					tp := txnTP(rt.Topic, rp.Partition)
					results[tp], lows[tp] = kerr.ErrorForCode(rp.ErrorCode), rp.LowWatermark
				}
			}
		}
	}
	fmt.Fprintln(stdout, "Records delete operation completed:")
	// Kafka prints its results in a hash map's order; kaas in the file's.
	failed := 0
	var b strings.Builder
	for _, t := range targets {
		tp := txnTP(t.topic, t.partition)
		err, answered := results[tp]
		if !answered {
			err = errors.New("no answer from the partition's leader")
		}
		if err != nil {
			failed++
			fmt.Fprintf(&b, "partition: %s\terror: %v\n", tp, err)
			continue
		}
		fmt.Fprintf(&b, "partition: %s\tlow_watermark: %d\n", tp, lows[tp])
	}
	io.WriteString(stdout, b.String())
	if failed > 0 {
		return fmt.Errorf("records were not deleted from %d of %d partition(s)", failed, len(targets))
	}
	return nil
}

// deleteRecordsParse reads the offset JSON file as Kafka's
// parseOffsetJsonStringWithoutDedup, then refuses a partition named twice.
func deleteRecordsParse(data []byte) ([]deleteRecordsTarget, error) {
	var doc map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return nil, errors.New("The input string is not a valid JSON")
	}
	version := 1
	if v, ok := doc["version"]; ok {
		if err := json.Unmarshal(v, &version); err != nil {
			return nil, fmt.Errorf("version: %s is not an int", v)
		}
	}
	if version != 1 {
		return nil, fmt.Errorf("Not supported version field value %d", version)
	}
	raw, ok := doc["partitions"]
	if !ok {
		return nil, errors.New("Missing partitions field")
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, errors.New("partitions: an array of {\"topic\": ..., \"partition\": ..., \"offset\": ...} objects is expected")
	}
	var out []deleteRecordsTarget
	seen := map[string]int{}
	var dups []string
	for _, e := range entries {
		var t deleteRecordsTarget
		for _, f := range []struct {
			name string
			into any
			kind string
		}{{"topic", &t.topic, "string"}, {"partition", &t.partition, "int"}, {"offset", &t.offset, "long"}} {
			v, ok := e[f.name]
			if !ok {
				return nil, fmt.Errorf("No such field exists: `%s`", f.name)
			}
			if err := json.Unmarshal(v, f.into); err != nil {
				return nil, fmt.Errorf("%s: %s is not a %s", f.name, v, f.kind)
			}
		}
		tp := txnTP(t.topic, t.partition)
		if seen[tp]++; seen[tp] == 2 {
			dups = append(dups, tp)
		}
		out = append(out, t)
	}
	if len(dups) > 0 {
		sort.Strings(dups)
		return nil, fmt.Errorf("Offset json file contains duplicate topic partitions: %s", strings.Join(dups, ","))
	}
	return out, nil
}
