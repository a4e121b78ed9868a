package kafkacli

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestVerifiableDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 100: "100.0", 425.5: "425.5", 1.5e7: "1.5E7", math.NaN(): `"NaN"`, math.Inf(1): `"Infinity"`,
	} {
		got, err := json.Marshal(verifiableDouble(f))
		if err != nil || string(got) != want {
			t.Errorf("%v: %s %v, want %s", f, got, err, want)
		}
	}
}

func TestVerifiableJavaException(t *testing.T) {
	for err, want := range map[error]string{
		kerr.UnknownTopicOrPartition:                    "class org.apache.kafka.common.errors.UnknownTopicOrPartitionException",
		fmt.Errorf("x: %w", kerr.NotLeaderForPartition): "class org.apache.kafka.common.errors.NotLeaderOrFollowerException",
		kerr.TopicAuthorizationFailed:                   "class org.apache.kafka.common.errors.TopicAuthorizationException",
		kerr.InvalidTopicException:                      "class org.apache.kafka.common.errors.InvalidTopicException",
		kerr.MessageTooLarge:                            "class org.apache.kafka.common.errors.RecordTooLargeException",
		kgo.ErrRecordTimeout:                            "class org.apache.kafka.common.errors.TimeoutException",
	} {
		if got := verifiableJavaException(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}

func TestConsoleFormatDelivery(t *testing.T) {
	f, err := newConsoleFormatter(map[string]string{"print.delivery": "true", "print.offset": "true"})
	if err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Offset: 3, Value: []byte("v")}
	for delivery, want := range map[int32]string{2: "Offset:3\tDelivery:2\tv\n", -1: "Offset:3\tDelivery:NOT_PRESENT\tv\n"} {
		if got, _ := f.formatDelivery(nil, r, delivery); string(got) != want {
			t.Errorf("delivery %d: %q, want %q", delivery, got, want)
		}
	}
}
