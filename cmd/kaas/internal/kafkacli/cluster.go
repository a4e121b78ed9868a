package kafkacli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka-cluster.sh: the cluster's id, unregistering a dead broker and
// listing the brokers' endpoints, with Kafka 4's ClusterTool subcommands,
// flags and output.
var _ = register(Tool{Name: "cluster", Kafka: "kafka-cluster.sh", Run: runCluster})

// errNoControllers refuses --bootstrap-controller in every tool of this
// file's family: a kaas controller is one of the brokers (whoever holds the
// Lease) and serves no endpoint of its own.
var errNoControllers = errors.New("--bootstrap-controller is not supported: kaas has no separate controllers (the controller is one of the brokers); use --bootstrap-server")

// clusterErrorMessage is a broker's refusal as a Kafka exception's message
// reads: the broker's message, else the error's description.
func clusterErrorMessage(code int16, msg *string) string {
	if msg != nil && *msg != "" {
		return *msg
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Description
	}
	return kerr.ErrorForCode(code).Error()
}

// clusterBrokerError is a refusal as an error: the error's name and the
// broker's message.
func clusterBrokerError(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if e, ok := err.(*kerr.Error); ok && msg != nil && *msg != "" {
		return fmt.Errorf("%s: %s", e.Message, *msg)
	}
	return err
}

type clusterOpts struct {
	conn                 Conn
	controller           string
	id                   int
	includeFencedBrokers bool
}

func runCluster(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o := &clusterOpts{}
	tool := subcommandTool{
		name:     "cluster",
		commands: []string{"cluster-id", "unregister", "list-endpoints"},
		global: func(fs *flag.FlagSet) {
			// kafka-cluster.sh names its properties file --config (-c),
			// where the other tools say --command-config.
			for _, n := range []string{"bootstrap-server", "b"} {
				fs.StringVar(&o.conn.Bootstrap, n, "", "REQUIRED: the broker(s) to connect to, comma-separated host:port")
			}
			for _, n := range []string{"config", "c"} {
				fs.StringVar(&o.conn.CommandConfig, n, "", "a client properties file (security.protocol, sasl.mechanism, sasl.jaas.config, ...)")
			}
			for _, n := range []string{"bootstrap-controller", "C"} {
				fs.StringVar(&o.controller, n, "", "not supported: kaas has no separate controllers; use --bootstrap-server")
			}
		},
		command: func(cmd string, fs *flag.FlagSet) {
			switch cmd {
			case "unregister":
				for _, n := range []string{"id", "i"} {
					fs.IntVar(&o.id, n, 0, "REQUIRED: the id of the broker to unregister")
				}
			case "list-endpoints":
				fs.BoolVar(&o.includeFencedBrokers, "include-fenced-brokers", false, "also list fenced (draining or dead) brokers")
			}
		},
	}
	cmd, given, err := tool.parse(args, stderr)
	if err != nil {
		return err
	}
	if given["bootstrap-controller"] || given["C"] {
		return errNoControllers
	}
	if o.conn.Bootstrap == "" {
		return errors.New("missing required argument --bootstrap-server")
	}
	if cmd == "unregister" && !given["id"] && !given["i"] {
		return errors.New("missing required argument --id")
	}
	cl, adm, err := o.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	switch cmd {
	case "cluster-id":
		return clusterID(ctx, cl, stdout)
	case "unregister":
		return clusterUnregister(ctx, cl, int32(o.id), stdout)
	default:
		return clusterListEndpoints(ctx, cl, o.includeFencedBrokers, stdout)
	}
}

// clusterDescribe asks any broker for DescribeCluster's broker endpoints.
func clusterDescribe(ctx context.Context, cl *kgo.Client, includeFenced bool) (*kmsg.DescribeClusterResponse, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 1 // brokers
	req.IncludeFencedBrokers = includeFenced
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := clusterBrokerError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, fmt.Errorf("DescribeCluster: %w", err)
	}
	return resp, nil
}

func clusterID(ctx context.Context, cl *kgo.Client, out io.Writer) error {
	resp, err := clusterDescribe(ctx, cl, false)
	if err != nil {
		return err
	}
	if resp.ClusterID == "" {
		fmt.Fprintln(out, "No cluster ID found. The Kafka version is probably too old.")
		return nil
	}
	fmt.Fprintf(out, "Cluster ID: %s\n", resp.ClusterID)
	return nil
}

func clusterUnregister(ctx context.Context, cl *kgo.Client, id int32, out io.Writer) error {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := clusterBrokerError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return fmt.Errorf("unregister broker %d: %w", id, err)
	}
	fmt.Fprintf(out, "Broker %d is no longer registered.\n", id)
	return nil
}

// clusterListEndpoints prints Kafka 4's table: the host column as wide as
// the longest host, the rack column as the longest rack (10 when no broker
// has one), a missing rack as null.
func clusterListEndpoints(ctx context.Context, cl *kgo.Client, includeFenced bool, out io.Writer) error {
	resp, err := clusterDescribe(ctx, cl, includeFenced)
	if err != nil {
		return err
	}
	hostWidth, rackWidth := 0, 0
	for _, b := range resp.Brokers {
		hostWidth = max(hostWidth, len(b.Host))
		if b.Rack != nil {
			rackWidth = max(rackWidth, len(*b.Rack))
		}
	}
	if len(resp.Brokers) == 0 {
		hostWidth = 100
	}
	if rackWidth == 0 {
		rackWidth = 10
	}
	format := fmt.Sprintf("%%-10s %%-%ds %%-10s %%-%ds %%-10s %%-15s\n", hostWidth, rackWidth)
	fmt.Fprintf(out, format, "ID", "HOST", "PORT", "RACK", "STATE", "ENDPOINT_TYPE")
	for _, b := range resp.Brokers {
		rack, state := "null", "unfenced"
		if b.Rack != nil {
			rack = *b.Rack
		}
		if b.IsFenced {
			state = "fenced"
		}
		fmt.Fprintf(out, format, fmt.Sprint(b.NodeID), b.Host, fmt.Sprint(b.Port), rack, state, "broker")
	}
	return nil
}
