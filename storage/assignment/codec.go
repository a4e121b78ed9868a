package assignment

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// Encode validates a and renders it as the indented, deterministic JSON the
// controller writes: topics and config keys sorted, one broker and one
// partition per line, a trailing newline. Equal documents encode to equal
// bytes.
func Encode(a *Assignment) ([]byte, error) {
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("encode assignment: %w", err)
	}
	parts := 0
	for _, t := range a.Topics {
		parts += len(t.Partitions)
	}
	b := make([]byte, 0, 512+96*len(a.Brokers)+128*len(a.Topics)+48*parts)

	b = append(b, "{\n  \"format\": "...)
	b = strconv.AppendInt(b, int64(a.Format), 10)
	b = append(b, ",\n  \"controller_epoch\": "...)
	b = strconv.AppendInt(b, a.ControllerEpoch, 10)
	b = append(b, ",\n  \"assignment_version\": "...)
	b = strconv.AppendInt(b, a.AssignmentVersion, 10)
	b = append(b, ",\n  \"controller\": "...)
	b = appendString(b, a.Controller)
	b = append(b, ",\n  \"controller_heartbeat\": "...)
	b = appendString(b, a.ControllerHeartbeat)

	b = append(b, ",\n  \"brokers\": ["...)
	for i, br := range a.Brokers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\"id\": "...)
		b = strconv.AppendInt(b, int64(br.ID), 10)
		b = append(b, ", \"name\": "...)
		b = appendString(b, br.Name)
		b = append(b, ", \"host\": "...)
		b = appendString(b, br.Host)
		b = append(b, ", \"port\": "...)
		b = strconv.AppendInt(b, int64(br.Port), 10)
		if br.Rack != "" {
			b = append(b, ", \"rack\": "...)
			b = appendString(b, br.Rack)
		}
		if br.Listeners != "" {
			b = append(b, ", \"listeners\": "...)
			b = appendString(b, br.Listeners)
		}
		b = append(b, ", \"state\": "...)
		b = appendString(b, string(br.State))
		b = append(b, '}')
	}
	if len(a.Brokers) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, ']')

	b = append(b, ",\n  \"topics\": {"...)
	for i, name := range a.TopicNames() {
		t := a.Topics[name]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = appendString(b, name)
		b = append(b, ": {\n      \"id\": "...)
		b = appendString(b, t.ID)
		b = append(b, ",\n      \"config\": {"...)
		keys := make([]string, 0, len(t.Config))
		for k := range t.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for j, k := range keys {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = appendString(b, k)
			b = append(b, ": "...)
			b = appendString(b, t.Config[k])
		}
		b = append(b, "},\n      \"partitions\": ["...)
		for j, p := range t.Partitions {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n        {\"leader\": "...)
			b = strconv.AppendInt(b, int64(p.Leader), 10)
			b = append(b, ", \"leader_epoch\": "...)
			b = strconv.AppendInt(b, int64(p.LeaderEpoch), 10)
			b = append(b, '}')
		}
		b = append(b, "\n      ]"...)
		if len(t.Pins) > 0 {
			b = append(b, ",\n      \"pins\": ["...)
			for j, pin := range t.Pins {
				if j > 0 {
					b = append(b, ", "...)
				}
				b = append(b, "{\"partition\": "...)
				b = strconv.AppendInt(b, int64(pin.Partition), 10)
				b = append(b, ", \"broker\": "...)
				b = strconv.AppendInt(b, int64(pin.Broker), 10)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, "\n    }"...)
	}
	if len(a.Topics) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, '}')

	b = append(b, ",\n  \"consumer_groups\": {\"slots\": ["...)
	for i, s := range a.ConsumerGroups.Slots {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendString(b, s)
	}
	b = append(b, ']')
	b = appendInts(b, "epochs", a.ConsumerGroups.Epochs)
	b = appendInts(b, "held", a.ConsumerGroups.Held)
	b = append(b, "}\n}\n"...)
	return b, nil
}

// appendInts appends `, "name": [x, ...]`, or nothing when xs is empty.
func appendInts[T int | int32](b []byte, name string, xs []T) []byte {
	if len(xs) == 0 {
		return b
	}
	b = append(b, ", \""...)
	b = append(b, name...)
	b = append(b, "\": ["...)
	for i, x := range xs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string literal.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
