package main

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestTraceLeadershipMove runs two broker processes that export spans over
// OTLP/HTTP (configured by the OTEL_* environment only) to a receiver in
// the test, moves partitions from kaas-0 to kaas-1 by starting kaas-1, and
// checks the traces of the move: the controller's recompute, its
// assignment file write and heartbeat push; each broker's apply of the
// file with the Relinquish (and the log close) of the partitions kaas-0
// gave away and the Take (and the log open) of those kaas-1 got; and that
// every apply is in the controller's trace, as the push's child or linked
// from the push (when the file watch saw the file before the push came).
func TestTraceLeadershipMove(t *testing.T) {
	recv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_SERVICE_NAME", "kaas-test")
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	c.start("kaas-0")
	waitUntil(t, 30*time.Second, "kaas-0 elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl == "kaas-0"
	})
	adm := kadm.NewClient(c.client())
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 4, 1, nil, "moving"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitUntil(t, 30*time.Second, "kaas-0 leads the 4 partitions", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == 4
	})
	c.start("kaas-1")
	waitUntil(t, 60*time.Second, "kaas-1 leads partitions", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-1"] > 0 && led["kaas-0"]+led["kaas-1"] == 4
	})

	const (
		push    = "controller assignment write > controller Written > controller heartbeat push"
		release = "supervisor apply > partition RelinquishLeadership > partition close"
		take    = "supervisor apply > partition TakeLeadership > partition open"
	)
	var spans map[string]otlpSpan
	inControllerTrace := func(s otlpSpan) bool {
		// The apply at the root of s's chain: the push's child, or linked
		// from a "supervisor push received" span under a push.
		root := s
		for p, ok := spans[root.Parent]; ok; p, ok = spans[root.Parent] {
			root = p
		}
		if root.Name == "controller recompute" {
			return true
		}
		for _, r := range spans {
			if r.Name == "supervisor push received" && strings.HasPrefix(otlpPath(spans, r), "controller recompute > ") && strings.Contains(otlpPath(spans, r), push) {
				if applySpan := applyOf(spans, s); applySpan != nil && r.Attrs["kaas.assignment.version"] == applySpan.Attrs["kaas.assignment.version"] {
					return true
				}
			}
		}
		return false
	}
	var found map[string]bool
	check := func() bool {
		spans = recv.snapshot()
		found = map[string]bool{}
		for _, s := range spans {
			p := otlpPath(spans, s)
			if strings.HasPrefix(p, "controller recompute > ") && strings.Contains(p, push) {
				found["push"] = true
			}
			if s.Service != "kaas-test" {
				continue
			}
			if strings.HasSuffix(p, release) && s.Attrs["messaging.destination.name"] == "moving" && inControllerTrace(s) {
				found["release"] = true
			}
			if strings.HasSuffix(p, take) && s.Attrs["messaging.destination.name"] == "moving" && inControllerTrace(s) {
				found["take"] = true
			}
		}
		return found["push"] && found["release"] && found["take"]
	}
	for deadline := time.Now().Add(20 * time.Second); !check() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if !check() {
		t.Errorf("traces of the move: found %v of push, release and take; span paths:\n%s", found, otlpPaths(spans))
	}
}

// applyOf is the "supervisor apply" span above s (nil when none is).
func applyOf(spans map[string]otlpSpan, s otlpSpan) *otlpSpan {
	for cur, ok := s, true; ok; cur, ok = spans[cur.Parent] {
		if cur.Name == "supervisor apply" {
			return &cur
		}
	}
	return nil
}
