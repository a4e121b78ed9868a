package kafkacli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kaas client-metrics is Kafka 4's kafka-client-metrics.sh
// (ClientMetricsCommand): list, describe, alter and delete the KIP-714
// client metrics subscriptions, the CLIENT_METRICS config resources.
var _ = register(Tool{Name: "client-metrics", Kafka: "kafka-client-metrics.sh", Run: runClientMetrics})

func runClientMetrics(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var (
		conn                                Conn
		alter, del, describe, list, genName bool
		name                                string
		interval                            int
		match, metrics                      Repeated
	)
	fs := NewFlagSet("client-metrics", stderr)
	conn.Register(fs)
	fs.BoolVar(&alter, "alter", false, "alter the configuration of the client metrics resource")
	fs.BoolVar(&del, "delete", false, "delete the configuration of the client metrics resource")
	fs.BoolVar(&describe, "describe", false, "list the configurations of the client metrics resource (all, without --name)")
	fs.BoolVar(&list, "list", false, "list the client metrics resources")
	fs.StringVar(&name, "name", "", "the name of the client metrics configuration resource")
	fs.BoolVar(&genName, "generate-name", false, "generate a random name (a Kafka Uuid) for --alter")
	fs.IntVar(&interval, "interval", 0, "the metrics push interval in milliseconds")
	fs.Var(&match, "match", "matching selectors k1=v1,k2=v2, of client_id, client_instance_id, client_software_name,\n"+
		"client_software_version, client_source_address, client_source_port; empty removes them")
	fs.Var(&metrics, "metrics", "telemetry metric name prefixes m1,m2 (* for all); empty removes them")
	if len(args) == 0 {
		fs.Usage()
		return errors.New("This tool helps to manipulate and describe client metrics configurations.")
	}
	set, err := Parse(fs, args)
	if err != nil {
		return err
	}
	action, err := OneAction(fs, "alter", "delete", "describe", "list")
	if err != nil {
		return errors.New("Command must include exactly one action: --alter, --delete, --describe or --list.")
	}
	if !set["bootstrap-server"] {
		return errors.New("--bootstrap-server must be specified.")
	}
	invalid := map[string][]string{
		"delete":   {"generate-name", "interval", "match", "metrics"},
		"describe": {"generate-name", "interval", "match", "metrics"},
		"list":     {"name", "generate-name", "interval", "match", "metrics"},
	}
	for _, f := range invalid[action] {
		if set[f] {
			return fmt.Errorf("Option \"[%s]\" can't be used with option \"[%s]\"", action, f)
		}
	}
	if action == "alter" && set["name"] == set["generate-name"] {
		return errors.New("One of --name or --generate-name must be specified with --alter.")
	}
	if action == "delete" && !set["name"] {
		return errors.New("A client metrics resource name must be specified with --delete.")
	}
	if set["name"] && name == "" {
		return errors.New("--name: the client metrics resource name is empty")
	}
	// An empty --match removes the selectors; anything else must be pairs.
	for _, m := range clientMetricsSplit(match) {
		if strings.Join(match, "") == "" {
			break
		}
		if k, _, ok := strings.Cut(m, "="); !ok || k == "" {
			return fmt.Errorf("--match %q: want selector=regex pairs, k1=v1,k2=v2", m)
		}
	}

	cl, adm, err := conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := clientMetricsRun(ctx, cl, adm, action, name, genName, set, interval, match, metrics, stdout); err != nil {
		return fmt.Errorf("Error while executing client metrics command : %w", err)
	}
	return nil
}

func clientMetricsRun(ctx context.Context, cl *kgo.Client, adm *kadm.Client, action, name string, genName bool,
	set map[string]bool, interval int, match, metrics Repeated, stdout io.Writer) error {
	switch action {
	case "alter":
		if genName {
			name = clientMetricsUUID()
		}
		var ops []kmsg.IncrementalAlterConfigsRequestResourceConfig
		add := func(key, value string) {
			op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			op.Name = key
			// Kafka's tool: an empty value deletes the config.
			if value == "" {
				op.Op = kmsg.IncrementalAlterConfigOpDelete
			} else {
				op.Op = kmsg.IncrementalAlterConfigOpSet
				op.Value = kmsg.StringPtr(value)
			}
			ops = append(ops, op)
		}
		if set["interval"] {
			add("interval.ms", fmt.Sprint(interval))
		}
		if set["metrics"] {
			add("metrics", strings.Join(clientMetricsSplit(metrics), ","))
		}
		if set["match"] {
			add("match", strings.Join(clientMetricsSplit(match), ","))
		}
		if err := clientMetricsAlter(ctx, cl, name, ops); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Altered client metrics config for %s.\n", name)
	case "delete":
		configs, err := clientMetricsConfigs(ctx, cl, name)
		if err != nil {
			return err
		}
		var ops []kmsg.IncrementalAlterConfigsRequestResourceConfig
		for _, c := range configs {
			op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			op.Name, op.Op = c.Name, kmsg.IncrementalAlterConfigOpDelete
			ops = append(ops, op)
		}
		if err := clientMetricsAlter(ctx, cl, name, ops); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Deleted client metrics config for %s.\n", name)
	case "describe":
		names := []string{name}
		if !set["name"] {
			var err error
			if names, err = clientMetricsNames(ctx, adm); err != nil {
				return err
			}
		}
		for _, n := range names {
			configs, err := clientMetricsConfigs(ctx, cl, n)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "Client metrics configs for %s are:\n", n)
			for _, c := range configs {
				v := "null" // Java prints a null value so
				if c.Value != nil {
					v = *c.Value
				}
				fmt.Fprintf(stdout, "  %s=%s\n", c.Name, v)
			}
		}
	case "list":
		names, err := clientMetricsNames(ctx, adm)
		if err != nil {
			return err
		}
		// Kafka prints the names joined by newlines with println: one empty
		// line when there are none.
		fmt.Fprintln(stdout, strings.Join(names, "\n"))
	}
	return nil
}

// clientMetricsSplit is a comma-separated flag's values, as jopt's
// withValuesSeparatedBy(','): each occurrence split at commas.
func clientMetricsSplit(r Repeated) []string {
	var out []string
	for _, v := range r {
		out = append(out, strings.Split(v, ",")...)
	}
	return out
}

// clientMetricsUUID is a random name as Kafka's Uuid.randomUuid().toString():
// 16 random bytes in unpadded URL-safe base64.
func clientMetricsUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func clientMetricsNames(ctx context.Context, adm *kadm.Client) ([]string, error) {
	listed, err := adm.ListConfigResources(ctx, kadm.ConfigResourceClientMetrics)
	if err != nil {
		return nil, err
	}
	if listed.Err != nil {
		return nil, listed.Err
	}
	return listed.Names(), nil
}

func clientMetricsConfigs(ctx context.Context, cl *kgo.Client, name string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("describe configs of %s: %d resources in the answer", name, len(resp.Resources))
	}
	res := resp.Resources[0]
	if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
		return nil, clientMetricsErr(err, res.ErrorMessage)
	}
	return res.Configs, nil
}

func clientMetricsAlter(ctx context.Context, cl *kgo.Client, name string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeClientMetrics, name, ops
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return clientMetricsErr(err, res.ErrorMessage)
		}
	}
	return nil
}

// clientMetricsErr is a Kafka error with the broker's message, which names
// the config at fault.
func clientMetricsErr(err error, msg *string) error {
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}
