package assignment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Decode parses data strictly (no unknown fields, no missing required field,
// no duplicate field or topic, nothing after the document) and validates the
// result. Errors wrap ErrInvalid for semantic problems and
// io.ErrUnexpectedEOF for a truncated document.
//
// It is a single pass over the bytes with one parser per schema object, no
// reflection: a follower decodes the whole file on every change, and at 100k
// partitions that is several megabytes. Field names match exactly (as Encode
// writes them); null stands for an absent optional field.
func Decode(data []byte) (*Assignment, error) {
	d := decoder{b: data, intern: make(map[string]string, 64)}
	a, err := d.document()
	if err != nil {
		if d.i >= len(d.b) && !errors.Is(err, ErrInvalid) {
			return nil, fmt.Errorf("decode assignment: truncated document (%d bytes): %w", len(data), io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("decode assignment: %w", err)
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("decode assignment: %w", err)
	}
	return a, nil
}

// decoder is a cursor over one document. intern shares the strings that
// repeat across the document (broker names and states, config keys and
// values) so that each is allocated once.
type decoder struct {
	b      []byte
	i      int
	intern map[string]string
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\n', '\t', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// syntax reports what was expected at the cursor.
func (d *decoder) syntax(want string) error {
	if d.i >= len(d.b) {
		return fmt.Errorf("offset %d: want %s, got end of input", d.i, want)
	}
	return fmt.Errorf("offset %d: want %s, got %q", d.i, want, d.b[d.i])
}

// null consumes a null literal if one is at the cursor.
func (d *decoder) null() bool {
	if bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.i += 4
		return true
	}
	return false
}

// object parses {"key": value, ...}, calling field with the cursor on each
// value. Keys must be distinct.
func (d *decoder) object(what string, field func(key []byte) error) error {
	d.ws()
	if !d.eat('{') {
		return fmt.Errorf("%s%w", prefix(what), d.syntax("an object"))
	}
	d.ws()
	if d.eat('}') {
		return nil
	}
	// More slots than any schema object has fields (the document has 8), so
	// a repeated field is always caught; topics and config keys, unbounded,
	// are checked against their maps.
	var seen [9][]byte
	n := 0
	for {
		key, err := d.rawString()
		if err != nil {
			return fmt.Errorf("%sfield name: %w", prefix(what), err)
		}
		if n < len(seen) {
			for _, k := range seen[:n] {
				if bytes.Equal(k, key) {
					return fmt.Errorf("%sduplicate field %q", prefix(what), key)
				}
			}
			seen[n] = key
			n++
		}
		d.ws()
		if !d.eat(':') {
			return fmt.Errorf("%s%w", prefix(what), d.syntax(":"))
		}
		d.ws()
		if err := field(key); err != nil {
			return err
		}
		d.ws()
		if d.eat('}') {
			return nil
		}
		if !d.eat(',') {
			return fmt.Errorf("%s%w", prefix(what), d.syntax(", or }"))
		}
		d.ws()
	}
}

// array parses [value, ...], calling elem with the cursor on each value.
func (d *decoder) array(what string, elem func(i int) error) error {
	if !d.eat('[') {
		return fmt.Errorf("%s%w", prefix(what), d.syntax("an array"))
	}
	d.ws()
	if d.eat(']') {
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		d.ws()
		if d.eat(']') {
			return nil
		}
		if !d.eat(',') {
			return fmt.Errorf("%s%w", prefix(what), d.syntax(", or ]"))
		}
		d.ws()
	}
}

// prefix renders what as the start of an error message ("" for none).
func prefix(what string) string {
	if what == "" {
		return ""
	}
	return what + ": "
}

// rawString parses a string literal and returns its contents: a slice of the
// input when it holds no escape and only ASCII, a decoded copy otherwise
// (encoding/json decodes escapes and replaces invalid UTF-8).
func (d *decoder) rawString() ([]byte, error) {
	if !d.eat('"') {
		return nil, d.syntax("a string")
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], nil
		case c < 0x20:
			return nil, fmt.Errorf("offset %d: control character in string", d.i)
		case c == '\\' || c >= 0x80:
			return d.slowString(start - 1)
		}
		d.i++
	}
	return nil, d.syntax("a closing quote")
}

func (d *decoder) slowString(open int) ([]byte, error) {
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			d.i++
			var s string
			if err := json.Unmarshal(d.b[open:d.i], &s); err != nil {
				return nil, fmt.Errorf("offset %d: %w", open, err)
			}
			return []byte(s), nil
		case c == '\\':
			d.i += 2
		case c < 0x20:
			return nil, fmt.Errorf("offset %d: control character in string", d.i)
		default:
			d.i++
		}
	}
	d.i = len(d.b)
	return nil, d.syntax("a closing quote")
}

func (d *decoder) string() (string, error) {
	b, err := d.rawString()
	return string(b), err
}

// internedString returns a string shared with every equal string decoded
// through it.
func (d *decoder) internedString() (string, error) {
	b, err := d.rawString()
	if err != nil {
		return "", err
	}
	return d.internString(b), nil
}

// int parses a JSON integer (no fraction, no exponent) within [lo, hi].
func (d *decoder) int(lo, hi int64) (int64, bool) {
	neg := d.eat('-')
	start := d.i
	var v uint64
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(d.b[d.i]-'0')
		d.i++
	}
	digits := d.i - start
	if digits == 0 || digits > 1 && d.b[start] == '0' {
		return 0, false
	}
	if c := d.peek(); c == '.' || c == 'e' || c == 'E' {
		return 0, false
	}
	var n int64
	switch {
	case !neg && v <= math.MaxInt64:
		n = int64(v)
	case neg && v <= 1<<63:
		n = int64(-v) // -(1<<63) wraps to itself, MinInt64
	default:
		return 0, false
	}
	if n < lo || n > hi {
		return 0, false
	}
	return n, true
}

func (d *decoder) int64Field(what string) (int64, error) {
	v, ok := d.int(math.MinInt64, math.MaxInt64)
	if !ok {
		return 0, fmt.Errorf("%s: want an integer", what)
	}
	return v, nil
}

func (d *decoder) int32Field(what string) (int32, error) {
	v, ok := d.int(math.MinInt32, math.MaxInt32)
	if !ok {
		return 0, fmt.Errorf("%s: want a 32-bit integer", what)
	}
	return int32(v), nil
}

// The fields of each schema object. A field may be null (absent) only if
// it is one of these.
var (
	documentFields       = []string{"format", "controller_epoch", "assignment_version", "controller", "controller_heartbeat", "brokers", "topics", "consumer_groups"}
	brokerFields         = []string{"id", "name", "host", "port", "rack", "listeners", "state"}
	topicFields          = []string{"id", "config", "pins"} // and "partitions", never null
	pinFields            = []string{"partition", "broker"}
	consumerGroupsFields = []string{"slots", "held", "epochs"}
)

func (d *decoder) document() (*Assignment, error) {
	a := &Assignment{}
	var haveFormat, haveEpoch, haveVersion, haveController bool
	var err error
	err = d.object("document", func(key []byte) error {
		if !slices.Contains(documentFields, string(key)) {
			return fmt.Errorf("document: unknown field %q", key)
		}
		if d.null() {
			return nil
		}
		switch string(key) {
		case "format":
			var v int64
			v, err = d.int64Field("format")
			a.Format, haveFormat = int(v), true
		case "controller_epoch":
			a.ControllerEpoch, err = d.int64Field("controller_epoch")
			haveEpoch = true
		case "assignment_version":
			a.AssignmentVersion, err = d.int64Field("assignment_version")
			haveVersion = true
		case "controller":
			a.Controller, err = d.internedString()
			haveController = true
		case "controller_heartbeat":
			a.ControllerHeartbeat, err = d.string()
		case "brokers":
			err = d.array("brokers", func(i int) error {
				b, err := d.broker(i)
				a.Brokers = append(a.Brokers, b)
				return err
			})
		case "topics":
			a.Topics = make(map[string]Topic)
			err = d.object("topics", func(name []byte) error {
				if _, dup := a.Topics[string(name)]; dup {
					return fmt.Errorf("duplicate topic %q", name)
				}
				t, err := d.topic(string(name))
				a.Topics[string(name)] = t
				return err
			})
		case "consumer_groups":
			err = d.consumerGroups(&a.ConsumerGroups)
		default:
			return fmt.Errorf("document: unknown field %q", key)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	d.ws()
	if d.i != len(d.b) {
		return nil, errors.New("trailing data after the document")
	}
	switch {
	case !haveFormat:
		return nil, invalid("missing format")
	case !haveEpoch:
		return nil, invalid("missing controller_epoch")
	case !haveVersion:
		return nil, invalid("missing assignment_version")
	case !haveController:
		return nil, invalid("missing controller")
	}
	if a.Brokers == nil {
		a.Brokers = []Broker{}
	}
	if a.Topics == nil {
		a.Topics = map[string]Topic{}
	}
	return a, nil
}

func (d *decoder) broker(i int) (Broker, error) {
	var b Broker
	var haveID, haveName, haveState bool
	what := fmt.Sprintf("broker %d", i)
	err := d.object(what, func(key []byte) error {
		if !slices.Contains(brokerFields, string(key)) {
			return fmt.Errorf("%s: unknown field %q", what, key)
		}
		if d.null() {
			return nil
		}
		var err error
		switch string(key) {
		case "id":
			b.ID, err = d.int32Field(what + ": id")
			haveID = true
		case "name":
			b.Name, err = d.internedString()
			haveName = true
		case "host":
			b.Host, err = d.string()
		case "port":
			b.Port, err = d.int32Field(what + ": port")
		case "rack":
			b.Rack, err = d.internedString()
		case "listeners":
			b.Listeners, err = d.string()
		case "state":
			var s string
			s, err = d.internedString()
			b.State, haveState = BrokerState(s), true
		default:
			return fmt.Errorf("%s: unknown field %q", what, key)
		}
		return err
	})
	switch {
	case err != nil:
		return b, err
	case !haveID:
		return b, invalid("broker %d: missing id", i)
	case !haveName:
		return b, invalid("broker %d: missing name", i)
	case !haveState:
		return b, invalid("broker %d: missing state", i)
	}
	return b, nil
}

func (d *decoder) topic(name string) (Topic, error) {
	var t Topic
	var haveID bool
	const what = "" // the error is wrapped with the topic's name below
	err := d.object(what, func(key []byte) error {
		if string(key) == "partitions" {
			return d.partitions(&t.Partitions)
		}
		if !slices.Contains(topicFields, string(key)) {
			return fmt.Errorf("unknown field %q", key)
		}
		if d.null() {
			return nil
		}
		var err error
		switch string(key) {
		case "id":
			t.ID, err = d.string()
			haveID = true
		case "config":
			t.Config = make(map[string]string, 1)
			err = d.object("config", func(k []byte) error {
				if _, dup := t.Config[string(k)]; dup {
					return fmt.Errorf("duplicate config %q", k)
				}
				var err error
				t.Config[d.internString(k)], err = d.internedString()
				return err
			})
		case "pins":
			t.Pins = []Pin{}
			err = d.array("pins", func(i int) error {
				p, err := d.pin()
				t.Pins = append(t.Pins, p)
				if err != nil {
					return fmt.Errorf("pin %d: %w", i, err)
				}
				return nil
			})
		default:
			return fmt.Errorf("unknown field %q", key)
		}
		return err
	})
	switch {
	case err != nil:
		return t, fmt.Errorf("topic %q: %w", name, err)
	case !haveID:
		return t, invalid("topic %q: missing id", name)
	}
	if t.Partitions == nil {
		t.Partitions = []Partition{}
	}
	if t.Config == nil {
		t.Config = map[string]string{}
	}
	return t, nil
}

func (d *decoder) internString(b []byte) string {
	if s, ok := d.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	d.intern[s] = s
	return s
}

func (d *decoder) pin() (Pin, error) {
	var p Pin
	const what = "pin"
	err := d.object(what, func(key []byte) error {
		if !slices.Contains(pinFields, string(key)) {
			return fmt.Errorf("unknown field %q", key)
		}
		if d.null() {
			return nil
		}
		var err error
		switch string(key) {
		case "partition":
			p.Partition, err = d.int32Field("partition")
		case "broker":
			p.Broker, err = d.int32Field("broker")
		default:
			return fmt.Errorf("unknown field %q", key)
		}
		return err
	})
	return p, err
}

func (d *decoder) consumerGroups(cg *ConsumerGroups) error {
	return d.object("consumer_groups", func(key []byte) error {
		if !slices.Contains(consumerGroupsFields, string(key)) {
			return fmt.Errorf("consumer_groups: unknown field %q", key)
		}
		if d.null() {
			return nil
		}
		switch string(key) {
		case "slots":
			cg.Slots = []string{}
			return d.array("consumer_groups: slots", func(int) error {
				s, err := d.internedString()
				cg.Slots = append(cg.Slots, s)
				return err
			})
		case "epochs":
			cg.Epochs = []int32{}
			return d.array("consumer_groups: epochs", func(i int) error {
				v, ok := d.int(math.MinInt32, math.MaxInt32)
				if !ok {
					return fmt.Errorf("consumer_groups: epochs %d: want a 32-bit integer", i)
				}
				cg.Epochs = append(cg.Epochs, int32(v))
				return nil
			})
		case "held":
			cg.Held = []int{}
			return d.array("consumer_groups: held", func(i int) error {
				v, ok := d.int(math.MinInt, math.MaxInt)
				if !ok {
					return fmt.Errorf("consumer_groups: held %d: want an integer", i)
				}
				cg.Held = append(cg.Held, int(v))
				return nil
			})
		default:
			return fmt.Errorf("consumer_groups: unknown field %q", key)
		}
	})
}

// partitions parses the partition list, the bulk of a large document: an
// array of objects with exactly the integer fields "leader" and
// "leader_epoch", in any order.
func (d *decoder) partitions(out *[]Partition) error {
	if d.null() {
		return errors.New("partitions: want an array, got null")
	}
	if d.peek() != '[' {
		return errors.New("partitions: want an array")
	}
	// Every partition object holds one '{' and no ']', so counting up to the
	// first ']' sizes the slice exactly for a well-formed list.
	n := 0
	if end := bytes.IndexByte(d.b[d.i:], ']'); end > 0 {
		n = bytes.Count(d.b[d.i:d.i+end], []byte{'{'})
	}
	parts := make([]Partition, 0, n)
	err := d.array("partitions", func(i int) error {
		p, err := d.partition(i)
		parts = append(parts, p)
		return err
	})
	*out = parts
	return err
}

var (
	encodedLeader = []byte(`{"leader": `)
	encodedEpoch  = []byte(`, "leader_epoch": `)
)

// partition parses one partition object, first as exactly the text Encode
// writes and, if that does not match, with the general object parser.
func (d *decoder) partition(n int) (Partition, error) {
	start := d.i
	if bytes.HasPrefix(d.b[d.i:], encodedLeader) {
		d.i += len(encodedLeader)
		leader, ok := d.int(math.MinInt32, math.MaxInt32)
		if ok && bytes.HasPrefix(d.b[d.i:], encodedEpoch) {
			d.i += len(encodedEpoch)
			epoch, ok := d.int(math.MinInt32, math.MaxInt32)
			if ok && d.eat('}') {
				return Partition{Leader: int32(leader), LeaderEpoch: int32(epoch)}, nil
			}
		}
		d.i = start
	}
	return d.partitionObject(n)
}

func (d *decoder) partitionObject(n int) (Partition, error) {
	var part Partition
	var haveLeader, haveEpoch bool
	if !d.eat('{') {
		return part, fmt.Errorf("partition %d: want an object", n)
	}
	d.ws()
	if !d.eat('}') {
		for {
			key, err := d.rawString()
			if err != nil {
				return part, fmt.Errorf("partition %d: field name: %w", n, err)
			}
			d.ws()
			if !d.eat(':') {
				return part, fmt.Errorf("partition %d: want :", n)
			}
			d.ws()
			v, ok := d.int(math.MinInt32, math.MaxInt32)
			switch {
			case string(key) == "leader" && !haveLeader:
				part.Leader, haveLeader = int32(v), true
			case string(key) == "leader_epoch" && !haveEpoch:
				part.LeaderEpoch, haveEpoch = int32(v), true
			case string(key) == "leader" || string(key) == "leader_epoch":
				return part, fmt.Errorf("partition %d: duplicate field %q", n, key)
			default:
				return part, fmt.Errorf("partition %d: unknown field %q", n, key)
			}
			if !ok {
				return part, fmt.Errorf("partition %d: %s: want a 32-bit integer", n, key)
			}
			d.ws()
			if d.eat('}') {
				break
			}
			if !d.eat(',') {
				return part, fmt.Errorf("partition %d: want , or }", n)
			}
			d.ws()
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
