package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kaas get-offsets is Kafka 4's kafka-get-offsets.sh (GetOffsetShell): the
// offset of each matching partition at --time, one topic:partition:offset
// line each.
var _ = register(Tool{Name: "get-offsets", Kafka: "kafka-get-offsets.sh", Run: runGetOffsets})

// getOffsetsTimes are --time's names and the ListOffsets timestamps they
// stand for.
var getOffsetsTimes = map[string]int64{"latest": -1, "earliest": -2, "max-timestamp": -3, "earliest-local": -4, "latest-tiered": -5}

// getOffsetsRule is one --topic-partitions pattern (or --topic with
// --partitions): topics matching topic, partitions in [from, to) or in set.
type getOffsetsRule struct {
	topic    *regexp.Regexp
	from, to int32
	set      map[int32]bool // --partitions; nil: the range
}

func (r getOffsetsRule) allows(topic string, p int32) bool {
	if !r.topic.MatchString(topic) {
		return false
	}
	if r.set != nil {
		return len(r.set) == 0 || r.set[p]
	}
	return p >= r.from && p < r.to
}

type getOffsetsOpts struct {
	conn            Conn
	rules           []getOffsetsRule
	timestamp       int64
	excludeInternal bool
}

func runGetOffsets(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseGetOffsetsArgs(args, stderr)
	if err != nil {
		return err
	}
	cl, adm, err := o.conn.Client(kgo.ClientID("GetOffsetShell"))
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, txnOpTimeout)
	defer cancel()
	md, err := adm.Metadata(ctx)
	if err != nil {
		return fmt.Errorf("Error occurred: %w", err)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	matched := 0
	for _, td := range md.Topics.Sorted() {
		if td.Err != nil || td.IsInternal && o.excludeInternal || !o.topicAllowed(td.Topic) {
			continue
		}
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = td.Topic
		for _, pd := range td.Partitions.Sorted() {
			if !o.allowed(td.Topic, pd.Partition) {
				continue
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = pd.Partition, o.timestamp, -1
			rt.Partitions = append(rt.Partitions, rp)
			matched++
		}
		if len(rt.Partitions) > 0 {
			req.Topics = append(req.Topics, rt)
		}
	}
	if matched == 0 {
		return errors.New("Error occurred: Could not match any topic-partitions with the specified filters")
	}
	type line struct {
		tp  string // Kafka sorts by the TopicPartition's text
		out string
	}
	var lines []line
	for _, shard := range cl.RequestSharded(ctx, req) {
		sreq := shard.Req.(*kmsg.ListOffsetsRequest)
		if shard.Err != nil {
			for _, rt := range sreq.Topics {
				for _, rp := range rt.Partitions {
					fmt.Fprintf(stderr, "Skip getting offsets for topic-partition %s due to error: %v\n", txnTP(rt.Topic, rp.Partition), shard.Err)
				}
			}
			continue
		}
		for _, rt := range shard.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					fmt.Fprintf(stderr, "Skip getting offsets for topic-partition %s due to error: %v\n", txnTP(rt.Topic, rp.Partition), err)
					continue
				}
				// No offset (a time past the last record, a max timestamp of
				// an empty partition, nothing tiered): Kafka prints no line.
				if rp.Offset < 0 {
					continue
				}
				lines = append(lines, line{txnTP(rt.Topic, rp.Partition), fmt.Sprintf("%s:%d:%d", rt.Topic, rp.Partition, rp.Offset)})
			}
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].tp < lines[j].tp })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.out)
		b.WriteByte('\n')
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

func (o *getOffsetsOpts) topicAllowed(topic string) bool {
	for _, r := range o.rules {
		if r.topic.MatchString(topic) {
			return true
		}
	}
	return false
}

func (o *getOffsetsOpts) allowed(topic string, p int32) bool {
	for _, r := range o.rules {
		if r.allows(topic, p) {
			return true
		}
	}
	return false
}

func parseGetOffsetsArgs(args []string, stderr io.Writer) (*getOffsetsOpts, error) {
	o := &getOffsetsOpts{}
	fs := NewFlagSet("get-offsets", stderr)
	o.conn.Register(fs)
	var topicPartitions, topic, partitions, timeArg string
	fs.StringVar(&topicPartitions, "topic-partitions", "", "Comma-separated topic-partition patterns: TOPIC_REGEX[:PARTITIONS], PARTITIONS being N, N-M (M exclusive), N- or -M; e.g. topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3. Not with --topic or --partitions.")
	fs.StringVar(&topic, "topic", "", "The topic (a regular expression) to get offsets for; unset, every topic.")
	fs.StringVar(&partitions, "partitions", "", "Comma-separated partition ids; unset, every partition.")
	fs.StringVar(&timeArg, "time", "latest", "The offsets at this time: a timestamp in ms (the first offset at or after it), -1 or latest, -2 or earliest, -3 or max-timestamp, -4 or earliest-local, -5 or latest-tiered.")
	fs.BoolVar(&o.excludeInternal, "exclude-internal-topics", false, "Leave out internal topics (included by default).")
	if len(args) == 0 {
		fs.Usage()
		return nil, errors.New("An interactive shell for getting topic-partition offsets: give --bootstrap-server")
	}
	set, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if o.conn.Bootstrap == "" {
		return nil, errors.New(`Missing required argument "[bootstrap-server]"`)
	}
	if set["topic-partitions"] && (set["topic"] || set["partitions"]) {
		return nil, errors.New("Error occurred: --topic-partitions cannot be used with --topic or --partitions")
	}
	ts, err := getOffsetsParseTime(timeArg)
	if err != nil {
		return nil, err
	}
	o.timestamp = ts
	if set["topic-partitions"] {
		for _, spec := range strings.Split(topicPartitions, ",") {
			r, err := getOffsetsParseRule(spec)
			if err != nil {
				return nil, err
			}
			o.rules = append(o.rules, r)
		}
		return o, nil
	}
	r := getOffsetsRule{set: map[int32]bool{}}
	if r.topic, err = topicsIncludeList(".*"); set["topic"] {
		r.topic, err = topicsIncludeList(topic)
	}
	if err != nil {
		return nil, err
	}
	if partitions != "" {
		for _, s := range strings.Split(partitions, ",") {
			n, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("Error occurred: --partitions expects a comma separated list of numeric partition ids, but received: %s", partitions)
			}
			r.set[int32(n)] = true
		}
	}
	o.rules = []getOffsetsRule{r}
	return o, nil
}

// getOffsetsParseTime reads --time as Kafka's parseOffsetSpec.
func getOffsetsParseTime(s string) (int64, error) {
	if ts, ok := getOffsetsTimes[s]; ok {
		return ts, nil
	}
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ts < -5 {
		// Kafka passes -6 and below to the broker, which refuses them per
		// partition; kaas names the flag instead.
		return 0, fmt.Errorf("Error occurred: Malformed time argument %s. Please use -1 or latest / -2 or earliest / -3 or max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long format timestamp", s)
	}
	return ts, nil
}

// getOffsetsRulePattern is Kafka's TOPIC_PARTITION_PATTERN: a topic regex,
// then optionally :N, :N-M, :N- or :-M.
var getOffsetsRulePattern = regexp.MustCompile(`^([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?$`)

func getOffsetsParseRule(spec string) (getOffsetsRule, error) {
	m := getOffsetsRulePattern.FindStringSubmatch(spec)
	if m == nil {
		return getOffsetsRule{}, fmt.Errorf("Error occurred: Invalid rule specification: %s", spec)
	}
	r := getOffsetsRule{from: 0, to: math.MaxInt32}
	var err error
	if m[1] == "" {
		m[1] = ".*"
	}
	if r.topic, err = topicsIncludeList(m[1]); err != nil {
		return r, fmt.Errorf("--topic-partitions: %s is an invalid regex.", m[1])
	}
	num := func(s string) (int32, error) {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("Error occurred: Invalid rule specification: %s (%s is not a partition number)", spec, s)
		}
		return int32(n), nil
	}
	switch {
	case m[2] != "":
		if r.from, err = num(m[2]); err != nil {
			return r, err
		}
		r.to = r.from + 1
	default:
		if m[3] != "" {
			if r.from, err = num(m[3]); err != nil {
				return r, err
			}
		}
		if m[4] != "" {
			if r.to, err = num(m[4]); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}
