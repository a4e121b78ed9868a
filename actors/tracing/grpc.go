package tracing

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
)

// GRPCServerOptions instrument the heartbeat server with otelgrpc while
// tracing is on (none while it is off): a span per heartbeat stream, with
// the broker's span as its parent.
func GRPCServerOptions() []grpc.ServerOption {
	if !On() {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(Provider()), otelgrpc.WithPropagators(propagator)))}
}

// GRPCDialOptions instrument the heartbeat client with otelgrpc while
// tracing is on (none while it is off).
func GRPCDialOptions() []grpc.DialOption {
	if !On() {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(Provider()), otelgrpc.WithPropagators(propagator)))}
}
