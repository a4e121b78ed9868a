package quota

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func str(s string) *string { return &s }

func TestEntityOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []Component
		want    Entity
		invalid bool
	}{
		{"user", []Component{{TypeUser, str("alice")}}, Entity{User: Named("alice")}, false},
		{"default client", []Component{{TypeClientID, nil}}, Entity{ClientID: Default()}, false},
		{"both", []Component{{TypeClientID, str("c")}, {TypeUser, nil}}, Entity{User: Default(), ClientID: Named("c")}, false},
		{"empty", nil, Entity{}, true},
		{"duplicate", []Component{{TypeUser, str("a")}, {TypeUser, str("b")}}, Entity{}, true},
		{"ip", []Component{{TypeIP, str("10.0.0.1")}}, Entity{IP: Named("10.0.0.1")}, false},
		{"ipv6 canonical", []Component{{TypeIP, str("0:0::01")}}, Entity{IP: Named("::1")}, false},
		{"default ip", []Component{{TypeIP, nil}}, Entity{IP: Default()}, false},
		{"ip with user", []Component{{TypeIP, str("10.0.0.1")}, {TypeUser, str("a")}}, Entity{}, true},
		{"ip with client", []Component{{TypeClientID, nil}, {TypeIP, nil}}, Entity{}, true},
		{"ip not an address", []Component{{TypeIP, str("broker-0.example")}}, Entity{}, true},
		{"unknown type", []Component{{"group", str("g")}}, Entity{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EntityOf(tc.in)
			if tc.invalid {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("EntityOf = %v, %v; want ErrInvalid", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("EntityOf = %v, %v; want %v", got, err, tc.want)
			}
			back, err := EntityOf(got.Components())
			if err != nil || back != got {
				t.Fatalf("Components round trip = %v, %v; want %v", back, err, got)
			}
		})
	}
}

func TestApply(t *testing.T) {
	cur := Values{ProducerByteRate: 1000, RequestPercentage: 50}
	for _, tc := range []struct {
		name    string
		ops     []Op
		want    Values
		invalid bool
	}{
		{"set", []Op{{Key: ConsumerByteRate, Value: 2000}}, Values{ProducerByteRate: 1000, RequestPercentage: 50, ConsumerByteRate: 2000}, false},
		{"replace and remove", []Op{{Key: ProducerByteRate, Value: 5}, {Key: RequestPercentage, Remove: true}}, Values{ProducerByteRate: 5}, false},
		{"remove absent", []Op{{Key: ConsumerByteRate, Remove: true}}, Values{ProducerByteRate: 1000, RequestPercentage: 50}, false},
		{"fractional percentage", []Op{{Key: RequestPercentage, Value: 12.5}}, Values{ProducerByteRate: 1000, RequestPercentage: 12.5}, false},
		{"fractional byte rate", []Op{{Key: ProducerByteRate, Value: 1.5}}, nil, true},
		{"zero", []Op{{Key: ConsumerByteRate, Value: 0}}, nil, true},
		{"negative", []Op{{Key: ConsumerByteRate, Value: -1}}, nil, true},
		{"ip key on a user", []Op{{Key: ConnectionCreationRate, Value: 10}}, nil, true},
		{"unknown key removed", []Op{{Key: "bogus", Remove: true}}, nil, true},
		{"duplicate key", []Op{{Key: ProducerByteRate, Value: 1}, {Key: ProducerByteRate, Remove: true}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Apply(Entity{User: Named("u")}, cur, tc.ops)
			if tc.invalid {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Apply = %v, %v; want ErrInvalid", got, err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("Apply = %v, %v; want %v", got, err, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("Apply = %v; want %v", got, tc.want)
				}
			}
			if cur[ProducerByteRate] != 1000 || len(cur) != 2 {
				t.Fatalf("Apply changed its input: %v", cur)
			}
		})
	}
}

func TestApplyIP(t *testing.T) {
	ip := Entity{IP: Named("10.0.0.1")}
	for _, tc := range []struct {
		name string
		ops  []Op
		ok   bool
	}{
		{"connection rate", []Op{{Key: ConnectionCreationRate, Value: 10}}, true},
		{"removed", []Op{{Key: ConnectionCreationRate, Remove: true}}, true},
		{"fractional", []Op{{Key: ConnectionCreationRate, Value: 2.5}}, false},
		{"zero", []Op{{Key: ConnectionCreationRate, Value: 0}}, false},
		{"byte rate on an ip", []Op{{Key: ProducerByteRate, Value: 10}}, false},
		{"byte rate removed from an ip", []Op{{Key: ConsumerByteRate, Remove: true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Apply(ip, nil, tc.ops); (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("Apply = %v; want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestFilterIP(t *testing.T) {
	one, other, def := Entity{IP: Named("10.0.0.1")}, Entity{IP: Named("::1")}, Entity{IP: Default()}
	user := Entity{User: Named("alice")}
	cfg := Config{one: {ConnectionCreationRate: 1}, other: {ConnectionCreationRate: 2}, def: {ConnectionCreationRate: 3}, user: {ProducerByteRate: 4}}
	for _, tc := range []struct {
		name string
		f    Filter
		want []Entity
	}{
		{"everything", Filter{}, []Entity{user, one, other, def}},
		{"any ip", Filter{Components: []FilterComponent{{Type: TypeIP, Match: MatchAny}}}, []Entity{one, other, def}},
		{"default ip", Filter{Components: []FilterComponent{{Type: TypeIP, Match: MatchDefault}}}, []Entity{def}},
		{"exact ipv6, another spelling", Filter{Components: []FilterComponent{{Type: TypeIP, Name: "0::1"}}}, []Entity{other}},
		{"any user strict", Filter{Components: []FilterComponent{{Type: TypeUser, Match: MatchAny}}, Strict: true}, []Entity{user}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The set; its order is TestKafkaOrder's.
			if got := sortEntities(cfg.Describe(tc.f)); !slices.Equal(got, sortEntities(tc.want)) {
				t.Fatalf("Describe = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestRecordConnection: an address's own quota wins over the default ip
// quota; each address is metered on its own; a throttled connection is
// not counted, so the rate recovers while a client keeps retrying.
func TestRecordConnection(t *testing.T) {
	w := Window{Samples: 3, Size: time.Second}
	q := New(w)
	q.Set(Config{{IP: Named("10.0.0.1")}: {ConnectionCreationRate: 1}, {IP: Default()}: {ConnectionCreationRate: 2}})
	t0 := time.Unix(1000, 0)
	// 10.0.0.1 may open 1 a second measured over at least 2 s: 2 at once.
	for i, want := range []bool{false, false, true, true} {
		if d := q.RecordConnection("10.0.0.1", t0); (d > 0) != want || d > w.Size {
			t.Fatalf("10.0.0.1 connection %d: throttle %v, want throttled=%v (at most %v)", i, d, want, w.Size)
		}
	}
	// Another address falls under the default (2 a second: 4 at once),
	// metered apart from 10.0.0.1 and from a third address.
	for _, addr := range []string{"10.0.0.2", "10.0.0.3"} {
		for i := range 4 {
			if d := q.RecordConnection(addr, t0); d > 0 {
				t.Fatalf("%s connection %d throttled %v under the default quota", addr, i, d)
			}
		}
		if d := q.RecordConnection(addr, t0); d == 0 {
			t.Fatalf("%s: fifth connection at once not throttled", addr)
		}
	}
	// The throttled attempts were not counted: 2.5 s later 10.0.0.2's
	// four connections and one more are 2 a second, within the default;
	// counting its throttled fifth would make it 2.4.
	if d := q.RecordConnection("10.0.0.2", t0.Add(2500*time.Millisecond)); d > 0 {
		t.Fatalf("10.0.0.2 after 2.5 s: throttled %v; the throttled attempt was counted", d)
	}
	if d := New(w).RecordConnection("10.0.0.1", t0); d != 0 {
		t.Fatalf("no ip quota: throttle %v", d)
	}
}

func TestFilter(t *testing.T) {
	alice := Entity{User: Named("alice")}
	aliceC := Entity{User: Named("alice"), ClientID: Named("c1")}
	defUser := Entity{User: Default()}
	defBoth := Entity{User: Default(), ClientID: Default()}
	c1 := Entity{ClientID: Named("c1")}
	cfg := Config{alice: {ProducerByteRate: 1}, aliceC: {ProducerByteRate: 2}, defUser: {ProducerByteRate: 3},
		defBoth: {ProducerByteRate: 4}, c1: {ConsumerByteRate: 5}, {User: Named("gone")}: {}}
	for _, tc := range []struct {
		name string
		f    Filter
		want []Entity
	}{
		{"everything", Filter{}, []Entity{aliceC, alice, defBoth, defUser, c1}},
		{"strict nothing", Filter{Strict: true}, nil},
		{"user alice", Filter{Components: []FilterComponent{{Type: TypeUser, Name: "alice"}}}, []Entity{aliceC, alice}},
		{"user alice strict", Filter{Components: []FilterComponent{{Type: TypeUser, Name: "alice"}}, Strict: true}, []Entity{alice}},
		{"default user", Filter{Components: []FilterComponent{{Type: TypeUser, Match: MatchDefault}}}, []Entity{defBoth, defUser}},
		{"any user strict", Filter{Components: []FilterComponent{{Type: TypeUser, Match: MatchAny}}, Strict: true}, []Entity{alice, defUser}},
		{"any client", Filter{Components: []FilterComponent{{Type: TypeClientID, Match: MatchAny}}}, []Entity{aliceC, defBoth, c1}},
		{"user any and client c1", Filter{Components: []FilterComponent{{Type: TypeUser, Match: MatchAny}, {Type: TypeClientID, Name: "c1"}}}, []Entity{aliceC}},
		{"exact name absent", Filter{Components: []FilterComponent{{Type: TypeUser, Name: "bob"}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The set; its order is TestKafkaOrder's.
			if got := sortEntities(cfg.Describe(tc.f)); !slices.Equal(got, sortEntities(tc.want)) {
				t.Fatalf("Describe = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestFilterValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Filter
		ok   bool
	}{
		{"empty", Filter{}, true},
		{"user and client", Filter{Components: []FilterComponent{{Type: TypeUser}, {Type: TypeClientID, Match: MatchAny}}}, true},
		{"duplicate", Filter{Components: []FilterComponent{{Type: TypeUser}, {Type: TypeUser, Match: MatchAny}}}, false},
		{"ip", Filter{Components: []FilterComponent{{Type: TypeIP, Match: MatchAny}}}, true},
		{"unknown type", Filter{Components: []FilterComponent{{Type: "topic"}}}, false},
		{"unknown match", Filter{Components: []FilterComponent{{Type: TypeUser, Match: 7}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.f.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate = %v; want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestResolve follows the precedence of Kafka's documentation, most
// specific first, and names the meter after the connection's own user and
// client id where the quota is a default.
func TestResolve(t *testing.T) {
	all := Config{
		{User: Named("u"), ClientID: Named("c")}: {ProducerByteRate: 1},
		{User: Named("u"), ClientID: Default()}:  {ProducerByteRate: 2},
		{User: Named("u")}:                       {ProducerByteRate: 3},
		{User: Default(), ClientID: Named("c")}:  {ProducerByteRate: 4},
		{User: Default(), ClientID: Default()}:   {ProducerByteRate: 5},
		{User: Default()}:                        {ProducerByteRate: 6},
		{ClientID: Named("c")}:                   {ProducerByteRate: 7},
		{ClientID: Default()}:                    {ProducerByteRate: 8},
	}
	order := []Entity{
		{User: Named("u"), ClientID: Named("c")}, {User: Named("u"), ClientID: Default()}, {User: Named("u")},
		{User: Default(), ClientID: Named("c")}, {User: Default(), ClientID: Default()}, {User: Default()},
		{ClientID: Named("c")}, {ClientID: Default()},
	}
	meters := []Entity{
		{User: Named("u"), ClientID: Named("c")}, {User: Named("u"), ClientID: Named("c")}, {User: Named("u")},
		{User: Named("u"), ClientID: Named("c")}, {User: Named("u"), ClientID: Named("c")}, {User: Named("u")},
		{ClientID: Named("c")}, {ClientID: Named("c")},
	}
	cfg := Config{}
	for e, v := range all {
		cfg[e] = v
	}
	for i := range order {
		bound, m, ok := cfg.Resolve(ProducerByteRate, "u", "c")
		if !ok || bound != float64(i+1) || m != meters[i] {
			t.Fatalf("step %d: Resolve = %v, %v, %v; want %d, %v", i, bound, m, ok, i+1, meters[i])
		}
		if _, _, ok := cfg.Resolve(ConsumerByteRate, "u", "c"); ok {
			t.Fatalf("step %d: consumer_byte_rate resolved with none configured", i)
		}
		delete(cfg, order[i])
	}
	if _, _, ok := cfg.Resolve(ProducerByteRate, "u", "c"); ok {
		t.Fatal("Resolve found a quota in an empty config")
	}
}

func TestThrottle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		total   float64
		elapsed time.Duration
		bound   float64
		want    time.Duration
	}{
		{"under", 900, time.Second, 1000, 0},
		{"at", 1000, time.Second, 1000, 0},
		{"double", 2000, time.Second, 1000, time.Second},
		{"half over ten seconds", 15000, 10 * time.Second, 1000, 5 * time.Second},
		{"capped", 1e9, time.Second, 1000, 11 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Throttle(tc.total, tc.elapsed, tc.bound, 11*time.Second); got != tc.want {
				t.Fatalf("Throttle = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestQuotasRecord drives the meters with a virtual clock: a client at
// twice its quota is throttled by the time that brings its rate back to
// the quota, a client under it is not, and its samples age out.
func TestQuotasRecord(t *testing.T) {
	w := Window{Samples: 4, Size: 100 * time.Millisecond}
	q := New(w)
	q.Set(Config{{User: Default()}: {ProducerByteRate: 1000, ConsumerByteRate: 10}})
	t0 := time.Unix(1000, 0)
	// The first record reads over the minimum span of 3 windows (300ms):
	// 300 bytes is exactly the quota.
	if d := q.Record(Produce, "alice", "c", 300, t0); d != 0 {
		t.Fatalf("300 bytes in 300ms at 1000 B/s: throttle %v; want 0", d)
	}
	// 300 more: 600 bytes over 300ms is 2000 B/s, 300ms to wait.
	if d := q.Record(Produce, "alice", "c", 300, t0); d != 300*time.Millisecond {
		t.Fatalf("600 bytes in 300ms at 1000 B/s: throttle %v; want 300ms", d)
	}
	// Another user has a meter of its own (the default quota is per user).
	if d := q.Record(Produce, "bob", "c", 300, t0); d != 0 {
		t.Fatalf("bob: throttle %v; want 0", d)
	}
	// Fetch meters separately.
	if d := q.Record(Fetch, "alice", "c", 3, t0); d != 0 {
		t.Fatalf("fetch: throttle %v; want 0", d)
	}
	// Unrecording takes the bytes back.
	q.Unrecord(Produce, "alice", "c", 300, t0)
	if d := q.Record(Produce, "alice", "c", 0, t0); d != 0 {
		t.Fatalf("after unrecord: throttle %v; want 0", d)
	}
	// After the whole window (4 x 100ms) the samples have expired.
	later := t0.Add(400 * time.Millisecond)
	if d := q.Record(Produce, "alice", "c", 300, later); d != 0 {
		t.Fatalf("after the window: throttle %v; want 0", d)
	}
	// No quota for the key: nothing is metered.
	q.Set(Config{{ClientID: Named("other")}: {ProducerByteRate: 1}})
	if d := q.Record(Produce, "alice", "c", 1<<20, later); d != 0 {
		t.Fatalf("no applicable quota: throttle %v; want 0", d)
	}
	if d := q.Record(Produce, "alice", "other", 1<<20, later); d != time.Duration(w.Samples)*w.Size {
		t.Fatalf("far over quota: throttle %v; want the cap %v", d, time.Duration(w.Samples)*w.Size)
	}
}

// TestQuotasSustainedRate feeds a client that waits out every throttle:
// what it gets through over a long run stays within the quota plus the
// first window's allowance.
func TestQuotasSustainedRate(t *testing.T) {
	w := Window{Samples: 11, Size: 100 * time.Millisecond}
	q := New(w)
	const bound = 10000.0
	q.Set(Config{{ClientID: Named("p")}: {ProducerByteRate: bound}})
	now := time.Unix(0, 0)
	start := now
	sent := 0
	for now.Sub(start) < 20*time.Second {
		sent += 1000
		d := q.Record(Produce, "ANONYMOUS", "p", 1000, now)
		now = now.Add(d + time.Millisecond)
	}
	secs := now.Sub(start).Seconds()
	max := bound*(secs+float64(w.Samples)*w.Size.Seconds()) + 1000
	if float64(sent) > max || float64(sent) < bound*secs*0.9 {
		t.Fatalf("sent %d bytes in %.1fs at %v B/s; want between %.0f and %.0f", sent, secs, bound, bound*secs*0.9, max)
	}
}

func TestLocalStore(t *testing.T) {
	dir := t.TempDir()
	q := New(DefaultWindow)
	s, err := OpenLocal(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	alice := Entity{User: Named("alice")}
	def := Entity{ClientID: Default()}
	errs := s.Alter(context.Background(), []Change{
		{Entity: alice, Ops: []Op{{Key: ProducerByteRate, Value: 1024}}},
		{Entity: def, Ops: []Op{{Key: ConsumerByteRate, Value: 2048}, {Key: RequestPercentage, Value: 25}}},
		{Entity: alice, Ops: []Op{{Key: "bogus", Value: 1}}},
	})
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], ErrInvalid) {
		t.Fatalf("Alter errors = %v; want nil, nil, ErrInvalid", errs)
	}
	if got := q.Config()[def][RequestPercentage]; got != 25 {
		t.Fatalf("applied config: request_percentage %v; want 25", got)
	}
	// Reopened from the file: the same configuration.
	q2 := New(DefaultWindow)
	s2, err := OpenLocal(dir, q2)
	if err != nil {
		t.Fatal(err)
	}
	if c := q2.Config(); len(c) != 2 || c[alice][ProducerByteRate] != 1024 || c[def][ConsumerByteRate] != 2048 {
		t.Fatalf("reloaded config = %v", c)
	}
	// Removing every key removes the entity.
	if errs := s2.Alter(context.Background(), []Change{{Entity: alice, Ops: []Op{{Key: ProducerByteRate, Remove: true}}}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if _, ok := q2.Config()[alice]; ok {
		t.Fatal("entity without values still configured")
	}
	// A corrupt file is refused with its name.
	if err := os.WriteFile(filepath.Join(dir, LocalFileName), []byte(`[{"user":"x","quotas":{"producer_byte_rate":-1}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLocal(dir, New(DefaultWindow)); err == nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("OpenLocal of an invalid file = %v; want ErrInvalid", err)
	}
}
