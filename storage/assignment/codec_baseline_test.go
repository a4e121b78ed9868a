package assignment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// The wire types mirror the public ones with the required fields made
// detectable, so that a missing "leader" is an error instead of broker 0.
type wireAssignment struct {
	Format              *int                 `json:"format"`
	ControllerEpoch     *int64               `json:"controller_epoch"`
	AssignmentVersion   *int64               `json:"assignment_version"`
	Controller          *string              `json:"controller"`
	ControllerHeartbeat string               `json:"controller_heartbeat"`
	Brokers             []wireBroker         `json:"brokers"`
	Topics              map[string]wireTopic `json:"topics"`
	ConsumerGroups      ConsumerGroups       `json:"consumer_groups"`
}

type wireBroker struct {
	ID   *int32  `json:"id"`
	Name *string `json:"name"`
	Host string  `json:"host"`
	Port int32   `json:"port"`
	Rack string  `json:"rack"`
	// Listeners: the broker's listeners besides the primary one.
	Listeners string       `json:"listeners"`
	State     *BrokerState `json:"state"`
}

type wireTopic struct {
	ID         *string           `json:"id"`
	Config     map[string]string `json:"config"`
	Partitions wirePartitions    `json:"partitions"`
	Pins       []Pin             `json:"pins"`
}

// wirePartitions decodes the partition list, the bulk of a large document,
// with a small strict parser: encoding/json has already checked that the
// value is well-formed JSON; this accepts only an array of objects with
// exactly the integer fields "leader" and "leader_epoch", in any order.
type wirePartitions []Partition

func (ps *wirePartitions) UnmarshalJSON(b []byte) error {
	p := partParser{b: b}
	if p.skip(); p.peek() == 'n' {
		return errors.New("partitions: want an array, got null")
	}
	if !p.eat('[') {
		return errors.New("partitions: want an array")
	}
	out := make([]Partition, 0, bytes.Count(b, []byte{'{'}))
	if p.skip(); p.eat(']') {
		*ps = out
		return nil
	}
	for {
		part, err := p.object(len(out))
		if err != nil {
			return err
		}
		out = append(out, part)
		if p.skip(); p.eat(']') {
			*ps = out
			return nil
		}
		if !p.eat(',') {
			return fmt.Errorf("partition %d: want , or ]", len(out)-1)
		}
		p.skip()
	}
}

type partParser struct {
	b []byte
	i int
}

func (p *partParser) skip() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\n' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *partParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *partParser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *partParser) object(n int) (Partition, error) {
	var part Partition
	var haveLeader, haveEpoch bool
	if !p.eat('{') {
		return part, fmt.Errorf("partition %d: want an object", n)
	}
	p.skip()
	if !p.eat('}') {
		for {
			if !p.eat('"') {
				return part, fmt.Errorf("partition %d: want a field name", n)
			}
			start := p.i
			for p.i < len(p.b) && p.b[p.i] != '"' && p.b[p.i] != '\\' {
				p.i++
			}
			key := p.b[start:p.i]
			if !p.eat('"') {
				return part, fmt.Errorf("partition %d: unknown field", n)
			}
			p.skip()
			if !p.eat(':') {
				return part, fmt.Errorf("partition %d: want :", n)
			}
			p.skip()
			v, ok := p.int32()
			switch {
			case string(key) == "leader" && !haveLeader:
				part.Leader, haveLeader = v, true
			case string(key) == "leader_epoch" && !haveEpoch:
				part.LeaderEpoch, haveEpoch = v, true
			case string(key) == "leader" || string(key) == "leader_epoch":
				return part, fmt.Errorf("partition %d: duplicate field %q", n, key)
			default:
				return part, fmt.Errorf("partition %d: unknown field %q", n, key)
			}
			if !ok {
				return part, fmt.Errorf("partition %d: %s: want a 32-bit integer", n, key)
			}
			p.skip()
			if p.eat('}') {
				break
			}
			if !p.eat(',') {
				return part, fmt.Errorf("partition %d: want , or }", n)
			}
			p.skip()
		}
	}
	if !haveLeader {
		return part, invalid("partition %d: missing leader", n)
	}
	if !haveEpoch {
		return part, invalid("partition %d: missing leader_epoch", n)
	}
	return part, nil
}

// int32 parses a JSON integer that fits in 32 bits.
func (p *partParser) int32() (int32, bool) {
	neg := p.eat('-')
	start := p.i
	var v int64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		v = v*10 + int64(p.b[p.i]-'0')
		p.i++
		if v > 1<<31 {
			return 0, false
		}
	}
	if p.i == start || p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	if neg {
		v = -v
	}
	if v > math.MaxInt32 || v < math.MinInt32 {
		return 0, false
	}
	return int32(v), true
}

// decodeWithEncodingJSON is the encoding/json decoder of the same format:
// the baseline BenchmarkCodec compares Decode against, and the reference
// the compatibility tests check Decode's results with.
func decodeWithEncodingJSON(data []byte) (*Assignment, error) {
	var w wireAssignment
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("decode assignment: truncated document (%d bytes): %w", len(data), io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("decode assignment: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("decode assignment: trailing data after the document")
	}
	a, err := w.convert()
	if err != nil {
		return nil, fmt.Errorf("decode assignment: %w", err)
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("decode assignment: %w", err)
	}
	return a, nil
}

func (w *wireAssignment) convert() (*Assignment, error) {
	switch {
	case w.Format == nil:
		return nil, invalid("missing format")
	case w.ControllerEpoch == nil:
		return nil, invalid("missing controller_epoch")
	case w.AssignmentVersion == nil:
		return nil, invalid("missing assignment_version")
	case w.Controller == nil:
		return nil, invalid("missing controller")
	}
	a := &Assignment{
		Format:              *w.Format,
		ControllerEpoch:     *w.ControllerEpoch,
		AssignmentVersion:   *w.AssignmentVersion,
		Controller:          *w.Controller,
		ControllerHeartbeat: w.ControllerHeartbeat,
		Brokers:             make([]Broker, len(w.Brokers)),
		Topics:              make(map[string]Topic, len(w.Topics)),
		ConsumerGroups:      w.ConsumerGroups,
	}
	for i, b := range w.Brokers {
		switch {
		case b.ID == nil:
			return nil, invalid("broker %d: missing id", i)
		case b.Name == nil:
			return nil, invalid("broker %d: missing name", i)
		case b.State == nil:
			return nil, invalid("broker %d: missing state", i)
		}
		a.Brokers[i] = Broker{ID: *b.ID, Name: *b.Name, Host: b.Host, Port: b.Port, Rack: b.Rack, Listeners: b.Listeners, State: *b.State}
	}
	for name, t := range w.Topics {
		if t.ID == nil {
			return nil, invalid("topic %q: missing id", name)
		}
		parts := []Partition(t.Partitions)
		if parts == nil {
			parts = []Partition{}
		}
		cfg := t.Config
		if cfg == nil {
			cfg = map[string]string{}
		}
		a.Topics[name] = Topic{ID: *t.ID, Config: cfg, Partitions: parts, Pins: t.Pins}
	}
	return a, nil
}
