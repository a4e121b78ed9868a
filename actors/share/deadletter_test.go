package share

import (
	"errors"
	"testing"

	"github.com/kaas-project/kaas/actors/routing"
)

// TestCheckTopic: Kafka's checks of a group's dead-letter topic, in its
// order and with its messages.
func TestCheckTopic(t *testing.T) {
	v := &routing.View{Topics: map[string]*routing.Topic{
		"dlq.on":     {Name: "dlq.on", Config: map[string]string{topicEnable: "true"}},
		"dlq.off":    {Name: "dlq.off"},
		"other.on":   {Name: "other.on", Config: map[string]string{topicEnable: "TRUE"}},
		"__internal": {Name: "__internal", Config: map[string]string{topicEnable: "true"}},
	}}
	def := DeadLetterSettings{TopicPrefix: "dlq."}
	cases := []struct {
		topic  string
		s      DeadLetterSettings
		exists bool
		err    string
	}{
		{"dlq.on", def, true, ""},
		{"", def, false, "Configured DLQ topic name in share group: g is empty."},
		{"__internal", DeadLetterSettings{}, false, "Configured DLQ topic name in share group: g cannot start with __, topic: __internal."},
		{"dlq.off", def, true, "DLQ is not enabled on configured DLQ topic for share group: g, topic: dlq.off"},
		{"other.on", def, true, "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: g, topic: other.on, prefix: dlq."},
		{"other.on", DeadLetterSettings{}, true, ""},
		{"dlq.missing", def, false, "DLQ topic does not exist and auto create is disabled on cluster for share group: g, topic: dlq.missing."},
		{"dlq.missing", DeadLetterSettings{TopicPrefix: "dlq.", AutoCreate: true}, false, ""},
		{"other.missing", DeadLetterSettings{TopicPrefix: "dlq.", AutoCreate: true}, false, "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: g, topic: other.missing, prefix: dlq."},
	}
	for _, c := range cases {
		exists, err := checkTopic(v, "g", c.topic, c.s)
		var ce *ConfigError
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q %+v: %v", c.topic, c.s, err)
		case c.err != "" && (!errors.As(err, &ce) || ce.Msg != c.err):
			t.Errorf("%q %+v: error %v, want %q", c.topic, c.s, err, c.err)
		case c.err == "" && exists != c.exists:
			t.Errorf("%q %+v: exists %v, want %v", c.topic, c.s, exists, c.exists)
		}
	}
}
