package actorsys

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kaas-project/kaas/actors/metrics"
)

// blockingActor holds its Receive on release for every string message.
type blockingActor struct{ release chan struct{} }

func (b *blockingActor) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(string); ok {
		<-b.release
	}
}

// The mailbox gauge of an actor's kind counts the user messages posted to it
// and not yet handled, and comes back down once they are.
func TestMailboxGaugeCountsQueuedMessages(t *testing.T) {
	sys := NewSystem()
	defer sys.Shutdown()
	gauge := metrics.MailboxMessages("connection")
	base := testutil.ToFloat64(gauge)
	release := make(chan struct{})
	ref, err := sys.Spawn("conn/mailbox-test", func() actor.Actor { return &blockingActor{release: release} })
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		ref.Send("m")
	}
	// The first message is being handled (blocked); four wait behind it.
	waitGauge(t, gauge, base+4)
	close(release)
	waitGauge(t, gauge, base)
}

func waitGauge(t *testing.T, g prometheus.Collector, want float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := testutil.ToFloat64(g)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailbox gauge = %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
