package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka-broker-api-versions.sh: every broker's ApiVersions, annotated with
// the version this tool would use, in Kafka 4's format.
var _ = register(Tool{Name: "broker-api-versions", Kafka: "kafka-broker-api-versions.sh", Run: runBrokerAPIVersions})

// apiKafkaNames are Kafka's names (ApiKeys) where franz-go's kmsg spells
// an initialism in capitals or names the API otherwise.
var apiKafkaNames = map[int16]string{
	4:  "LeaderAndIsr",
	17: "SaslHandshake",
	22: "InitProducerId",
	29: "DescribeAcls",
	30: "CreateAcls",
	31: "DeleteAcls",
	36: "SaslAuthenticate",
	45: "AlterPartitionReassignments",
	50: "DescribeUserScramCredentials",
	51: "AlterUserScramCredentials",
	67: "AllocateProducerIds",
}

// apiControllerOnly are the APIs Kafka 4 serves on controller listeners
// only (or not at all any more): a broker not listing them is normal, so
// they are not reported UNSUPPORTED (Kafka's ApiKeys.clientApis leaves
// them out).
var apiControllerOnly = map[int16]bool{
	4: true, 5: true, 6: true, 7: true, // ZooKeeper-era, removed in Kafka 4
	52: true, 53: true, 54: true, 56: true, 58: true, 59: true, 62: true, 63: true,
	67: true, 70: true, 73: true, 82: true, 94: true,
}

// apiName is Kafka's name for an API key; ok is false for a key this tool
// does not know.
func apiName(key int16) (name string, ok bool) {
	if kmsg.RequestForKey(key) == nil {
		return "", false
	}
	if n, fixed := apiKafkaNames[key]; fixed {
		return n, true
	}
	return kmsg.NameForKey(key), true
}

// apiVersionsText is Kafka's NodeApiVersions.toString(true): one line per
// API the broker lists, in key order, with the newest version both this
// tool (franz-go's kmsg, whose oldest version of every API is 0) and the
// broker speak; then an UNSUPPORTED line for each client API the broker
// does not list.
func apiVersionsText(keys []kmsg.ApiVersionsResponseApiKey) string {
	lines := map[int16]string{}
	for _, k := range keys {
		name, known := apiName(k.ApiKey)
		var b strings.Builder
		if known {
			fmt.Fprintf(&b, "%s(%d): ", name, k.ApiKey)
		} else {
			fmt.Fprintf(&b, "UNKNOWN(%d): ", k.ApiKey)
		}
		if k.MinVersion == k.MaxVersion {
			fmt.Fprintf(&b, "%d", k.MinVersion)
		} else {
			fmt.Fprintf(&b, "%d to %d", k.MinVersion, k.MaxVersion)
		}
		if known {
			latest := kmsg.RequestForKey(k.ApiKey).MaxVersion()
			switch {
			case latest < k.MinVersion:
				b.WriteString(" [unusable: node too new]")
			case k.MaxVersion < 0:
				b.WriteString(" [unusable: node too old]")
			default:
				fmt.Fprintf(&b, " [usable: %d]", min(latest, k.MaxVersion))
			}
		}
		lines[k.ApiKey] = b.String()
	}
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		name, known := apiName(key)
		if !known || apiControllerOnly[key] {
			continue
		}
		if _, listed := lines[key]; !listed {
			lines[key] = fmt.Sprintf("%s(%d): UNSUPPORTED", name, key)
		}
	}
	order := make([]int16, 0, len(lines))
	for k := range lines {
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	texts := make([]string, len(order))
	for i, k := range order {
		texts[i] = lines[k]
	}
	return "(\n\t" + strings.Join(texts, ",\n\t") + "\n)"
}

// brokerNodeText is Kafka 4's Node.toString; Metadata does not say whether
// a broker is fenced, so, as in Kafka's tool, isFenced is false.
func brokerNodeText(host string, port, id int32, rack *string) string {
	r := "null"
	if rack != nil {
		r = *rack
	}
	return fmt.Sprintf("%s:%d (id: %d rack: %s isFenced: false)", host, port, id, r)
}

func runBrokerAPIVersions(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var conn Conn
	fs := NewFlagSet("broker-api-versions", stderr)
	conn.Register(fs)
	if _, err := Parse(fs, args); err != nil {
		return err
	}
	if conn.Bootstrap == "" {
		return errors.New("missing required argument --bootstrap-server")
	}
	cl, adm, err := conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("Metadata: %w", err)
	}
	brokers := meta.Brokers
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].NodeID < brokers[j].NodeID })
	for _, b := range brokers {
		node := brokerNodeText(b.Host, b.Port, b.NodeID, b.Rack)
		keys, err := brokerAPIVersions(ctx, cl, b.NodeID)
		if err != nil {
			fmt.Fprintf(stdout, "%s -> ERROR: %v\n", node, err)
			continue
		}
		fmt.Fprintf(stdout, "%s -> %s\n", node, apiVersionsText(keys))
	}
	return nil
}

// brokerAPIVersions asks one broker for its ApiVersions.
func brokerAPIVersions(ctx context.Context, cl *kgo.Client, id int32) ([]kmsg.ApiVersionsResponseApiKey, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "kaas-broker-api-versions"
	req.ClientSoftwareVersion = "1"
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	return resp.ApiKeys, nil
}
