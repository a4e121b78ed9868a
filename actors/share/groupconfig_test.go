package share

import (
	"testing"
	"time"
)

func TestWithGroupConfigs(t *testing.T) {
	base := Config{LockDuration: 30 * time.Second, DeliveryLimit: 5, ResetLatest: true, MaxInFlight: 2000}
	for _, tc := range []struct {
		name string
		set  map[string]string
		want Config
	}{
		{"none", nil, base},
		{"lock", map[string]string{"share.record.lock.duration.ms": "15000"}, Config{LockDuration: 15 * time.Second, DeliveryLimit: 5, ResetLatest: true, MaxInFlight: 2000}},
		{"earliest", map[string]string{"share.auto.offset.reset": "earliest"}, Config{LockDuration: 30 * time.Second, DeliveryLimit: 5, MaxInFlight: 2000}},
		{"latest", map[string]string{"share.auto.offset.reset": "latest"}, base},
		{"limits", map[string]string{"share.delivery.count.limit": "3", "share.partition.max.record.locks": "100"}, Config{LockDuration: 30 * time.Second, DeliveryLimit: 3, ResetLatest: true, MaxInFlight: 100}},
		{"dead-letter topic", map[string]string{"errors.deadletterqueue.topic.name": "dlq.t", "errors.deadletterqueue.copy.record.enable": "TRUE"},
			Config{LockDuration: 30 * time.Second, DeliveryLimit: 5, ResetLatest: true, MaxInFlight: 2000, DeadLetterTopic: "dlq.t", CopyRecord: true}},
		{"renew off", map[string]string{"share.renew.acknowledge.enable": "false"},
			Config{LockDuration: 30 * time.Second, DeliveryLimit: 5, ResetLatest: true, MaxInFlight: 2000, RenewDisabled: true}},
		{"renew on", map[string]string{"share.renew.acknowledge.enable": "true"}, base},
		{"coordinator's only", map[string]string{"share.session.timeout.ms": "50000"}, base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WithGroupConfigs(base, tc.set); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A share-partition whose group sets earliest starts at the log start
// although the broker's setting is latest.
func TestPartitionGroupConfigEarliest(t *testing.T) {
	p := NewPartition(Config{ResetLatest: true})
	p.SetConfig(WithGroupConfigs(Config{ResetLatest: true}, map[string]string{"share.auto.offset.reset": "earliest"}))
	p.Initialize(3, 10)
	if p.Start() != 3 {
		t.Fatalf("start %d, want the log start 3", p.Start())
	}
}
