package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Config is the tracing configuration the OTEL_* environment variables
// select (FromEnv).
type Config struct {
	// Exporter is "otlp" or "none" (off).
	Exporter string
	// Protocol is the OTLP protocol: "grpc" or "http/protobuf".
	Protocol string
}

// FromEnv reads the exporter choice: tracing is on when
// OTEL_TRACES_EXPORTER is "otlp", or when it is unset and an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set; OTEL_TRACES_EXPORTER=none turns it off whatever else is set. The
// endpoint, headers, timeouts, sampler (OTEL_TRACES_SAMPLER,
// OTEL_TRACES_SAMPLER_ARG), batching (OTEL_BSP_*) and resource
// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) are read by the
// OpenTelemetry SDK itself.
func FromEnv(getenv func(string) string) (Config, error) {
	exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	switch exp {
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return Config{Exporter: "none"}, nil
		}
		exp = "otlp"
	case "none":
		return Config{Exporter: "none"}, nil
	case "otlp":
	default:
		return Config{}, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: kaas exports traces with otlp or none", exp)
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "":
		proto = "http/protobuf" // the OTLP specification's default
	case "grpc", "http/protobuf":
	default:
		return Config{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: kaas exports with grpc or http/protobuf", proto)
	}
	return Config{Exporter: exp, Protocol: proto}, nil
}

// Setup turns tracing on as the environment says (FromEnv) and returns the
// function that flushes and stops the exporter at shutdown. With tracing
// off it changes nothing and returns a no-op shutdown.
func Setup(ctx context.Context) (shutdown func(context.Context) error, cfg Config, err error) {
	noop := func(context.Context) error { return nil }
	cfg, err = FromEnv(os.Getenv)
	if err != nil || cfg.Exporter == "none" {
		return noop, cfg, err
	}
	var exp sdktrace.SpanExporter
	if cfg.Protocol == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return noop, cfg, fmt.Errorf("otlp trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("kaas")),
		resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithFromEnv(), // OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME override the default name
	)
	if err != nil {
		return noop, cfg, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	Enable(tp)
	return func(ctx context.Context) error {
		Disable()
		return tp.Shutdown(ctx)
	}, cfg, nil
}
