package brokerconfig

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kaas-project/kaas/storage/atomicfile/atomicfiletest"
)

func TestValidate(t *testing.T) {
	static := func(n string) bool { return n == "num.partitions" || n == "log.cleaner.backoff.ms" }
	for _, tc := range []struct {
		name      string
		cfg       map[string]string
		perBroker bool
		want      string // "" accepted, else a substring of the refusal
	}{
		{"dynamic topic default", map[string]string{"log.retention.ms": "60000", "message.max.bytes": "2000000"}, false, ""},
		{"cleaner, static flag that Kafka changes at runtime", map[string]string{"log.cleaner.backoff.ms": "16000"}, true, ""},
		{"custom config, as Kafka stores it", map[string]string{"my.custom": "x"}, false, ""},
		{"static flag not dynamic", map[string]string{"num.partitions": "3"}, true, "Cannot update these configs dynamically: Set(num.partitions)"},
		{"Kafka read-only configs, sorted", map[string]string{"log.dirs": "/x", "broker.id": "3", "log.retention.ms": "1"}, true,
			"Cannot update these configs dynamically: Set(broker.id, log.dirs)"},
		{"ssl without listener prefix", map[string]string{"ssl.keystore.location": "/k"}, true, "only per-listener using the listener prefix: Set(ssl.keystore.location)"},
		{"listener-prefixed ssl per broker", map[string]string{"listener.name.external.ssl.keystore.location": "/k"}, true, ""},
		{"listener-prefixed ssl as the default", map[string]string{"listener.name.external.ssl.keystore.location": "/k"}, false,
			"Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.external.ssl.keystore.location)"},
		{"not a long", map[string]string{"log.retention.ms": "soon"}, false, "Invalid value soon for configuration log.retention.ms"},
		{"below the range", map[string]string{"log.segment.bytes": "3"}, false, "log.segment.bytes"},
		{"not a boolean", map[string]string{"unclean.leader.election.enable": "yes"}, false, "true or false"},
		{"not a policy", map[string]string{"log.cleanup.policy": "keep"}, false, "log.cleanup.policy"},
		{"negative cleaner rate", map[string]string{"log.cleaner.io.max.bytes.per.second": "-1"}, false, "at least 0"},
		{"threads", map[string]string{"num.io.threads": "0"}, false, "at least 1"},
		{"connection limits", map[string]string{"max.connections": "100", "max.connections.per.ip": "10",
			"max.connections.per.ip.overrides": "10.0.0.1:20,client.example:5"}, false, ""},
		{"a listener's connection limit, per broker", map[string]string{"listener.name.external.max.connections": "5"}, true, ""},
		{"a listener's connection limit, 0", map[string]string{"listener.name.external.max.connections": "0"}, true, "at least 1"},
		{"a listener's connection creation rate", map[string]string{"listener.name.external.max.connection.creation.rate": "50"}, true, ""},
		{"a listener's connection creation rate, 0", map[string]string{"listener.name.external.max.connection.creation.rate": "0"}, true, "at least 1"},
		{"the broker's connection creation rate", map[string]string{"max.connection.creation.rate": "100"}, false, ""},
		{"a listener's connection limit as the default", map[string]string{"listener.name.external.max.connections": "5"}, false,
			"broker id must be specified: Set(listener.name.external.max.connections)"},
		{"overrides not host:count", map[string]string{"max.connections.per.ip.overrides": "10.0.0.1"}, false,
			"Invalid value 10.0.0.1 for configuration max.connections.per.ip.overrides"},
		{"per ip 0 with overrides", map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "10.0.0.1:2"}, false, ""},
		{"per ip 0 without overrides", map[string]string{"max.connections.per.ip": "0"}, false,
			"max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.cfg, tc.perBroker, static)
			var inv *InvalidError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a refusal with %q", err, tc.want)
			}
		})
	}
}

func TestPrecedence(t *testing.T) {
	set := Set{Default: map[string]string{"log.retention.ms": "1000", "message.max.bytes": "2000"},
		Brokers: map[string]map[string]string{"1": {"log.retention.ms": "500"}}}
	static := func(n string) (string, bool) {
		if n == "log.cleaner.backoff.ms" || n == "log.retention.ms" {
			return "15000", true
		}
		return "", false
	}
	for _, tc := range []struct {
		id      int32
		name    string
		sources []Source
		value   string
	}{
		{1, "log.retention.ms", []Source{SourceDynamicBroker, SourceDynamicDefaultBroker, SourceStaticBroker, SourceDefault}, "500"},
		{2, "log.retention.ms", []Source{SourceDynamicDefaultBroker, SourceStaticBroker, SourceDefault}, "1000"},
		{1, "message.max.bytes", []Source{SourceDynamicDefaultBroker, SourceDefault}, "2000"},
		{1, "log.cleaner.backoff.ms", []Source{SourceStaticBroker, SourceDefault}, "15000"},
		{1, "num.io.threads", []Source{SourceDefault}, "8"},
	} {
		got := Resolve(set, tc.id, tc.name, static)
		var srcs []Source
		for _, l := range got {
			srcs = append(srcs, l.Source)
		}
		if len(got) == 0 || got[0].Value != tc.value || !equal(srcs, tc.sources) {
			t.Errorf("broker %d %s: %+v, want %s from %v", tc.id, tc.name, got, tc.value, tc.sources)
		}
	}
	if got := set.For(1); got["log.retention.ms"] != "500" || got["message.max.bytes"] != "2000" {
		t.Errorf("For(1) = %v", got)
	}
	if got := set.For(2); got["log.retention.ms"] != "1000" {
		t.Errorf("For(2) = %v", got)
	}
}

func equal(a, b []Source) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTopicDefaults(t *testing.T) {
	for _, tc := range []struct {
		dyn, want map[string]string
	}{
		{map[string]string{"log.retention.ms": "60000", "message.max.bytes": "2000000", "num.io.threads": "4"},
			map[string]string{"retention.ms": "60000", "max.message.bytes": "2000000"}},
		{map[string]string{"log.retention.hours": "2"}, map[string]string{"retention.ms": "7200000"}},
		{map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3"}, map[string]string{"retention.ms": "180000"}},
		{map[string]string{"log.retention.hours": "2", "log.retention.ms": "5"}, map[string]string{"retention.ms": "5"}},
		{map[string]string{"log.retention.hours": "-1"}, map[string]string{"retention.ms": "-1"}},
		{map[string]string{"log.roll.hours": "1", "log.segment.bytes": "1048576", "log.cleanup.policy": "compact"},
			map[string]string{"segment.ms": "3600000", "segment.bytes": "1048576", "cleanup.policy": "compact"}},
		{map[string]string{"compression.type": "zstd", "log.message.timestamp.type": "LogAppendTime"},
			map[string]string{"compression.type": "zstd", "message.timestamp.type": "LogAppendTime"}},
		{nil, map[string]string{}},
	} {
		if got := TopicDefaults(tc.dyn); !maps.Equal(got, tc.want) {
			t.Errorf("TopicDefaults(%v) = %v, want %v", tc.dyn, got, tc.want)
		}
	}
	// the topic's own config wins over the broker default
	got := WithDefaults(map[string]string{"retention.ms": "1"}, map[string]string{"retention.ms": "2", "segment.ms": "3"})
	if !maps.Equal(got, map[string]string{"retention.ms": "1", "segment.ms": "3"}) {
		t.Errorf("WithDefaults = %v", got)
	}
}

func TestCleanerIORate(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "1.5e6": 1500000, "0": 0} {
		if got, ok := CleanerIORate(map[string]string{"log.cleaner.io.max.bytes.per.second": in}); !ok || got != want {
			t.Errorf("CleanerIORate(%s) = %d %v, want %d", in, got, ok, want)
		}
	}
	if _, ok := CleanerIORate(nil); ok {
		t.Error("CleanerIORate of nothing set is set")
	}
}

// TestFileStore: updates validate, validate_only writes nothing, a refused
// change loses nothing, and a second store on the same directory (another
// broker, a restart) reads what the first wrote.
func TestFileStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "__cluster")
	changes := 0
	a := NewFile(dir)
	a.OnChange = func() { changes++ }
	set := func(s *Store, res, k, v string, validateOnly bool) error {
		return s.Update(res, validateOnly, func(cur map[string]string) (map[string]string, error) {
			cur[k] = v
			return cur, nil
		})
	}
	if err := set(a, "", "log.retention.ms", "60000", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); !os.IsNotExist(err) || changes != 0 {
		t.Fatalf("validate_only wrote: %v, %d changes", err, changes)
	}
	if err := set(a, "", "log.retention.ms", "60000", false); err != nil {
		t.Fatal(err)
	}
	if err := set(a, "1", "message.max.bytes", "2000000", false); err != nil {
		t.Fatal(err)
	}
	if err := set(a, "1", "log.dirs", "/x", false); err == nil {
		t.Fatal("a read-only config was stored")
	}
	b := NewFile(dir)
	got, err := b.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.Default["log.retention.ms"] != "60000" || got.Brokers["1"]["message.max.bytes"] != "2000000" || len(got.Brokers["1"]) != 1 || changes != 2 {
		t.Fatalf("loaded %+v after %d changes", got, changes)
	}
	if err := b.Update("1", false, func(map[string]string) (map[string]string, error) { return map[string]string{}, nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Load(); got.Brokers != nil {
		t.Fatalf("broker 1 emptied, still stored: %+v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Load(); err == nil {
		t.Fatal("a corrupt file loaded")
	}
	if err := set(a, "", "log.retention.ms", "1", false); err == nil {
		t.Fatal("an update over a corrupt file replaced it")
	}
}

// TestMemoryStoreOnChangeLoads: OnChange runs once the change is stored
// and may read the store (the broker's follower does).
func TestMemoryStoreOnChangeLoads(t *testing.T) {
	s := NewMemory()
	var seen Set
	s.OnChange = func() {
		var err error
		if seen, err = s.Load(); err != nil {
			t.Error(err)
		}
	}
	if err := s.Update("0", false, func(cur map[string]string) (map[string]string, error) {
		cur["num.io.threads"] = "4"
		return cur, nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen.Brokers["0"]["num.io.threads"] != "4" {
		t.Fatalf("OnChange saw %+v", seen)
	}
}

// TestCordonedLogDirs: cordoned.log.dirs names the broker's log dir or "*";
// any other dir, or an empty entry, is refused; Cordoned reads it from the
// configs in force (the broker's own over the cluster default).
func TestCordonedLogDirs(t *testing.T) {
	s := NewMemory()
	s.LogDir = "/data"
	set := func(res, v string) error {
		return s.Update(res, false, func(cur map[string]string) (map[string]string, error) {
			cur[CordonedLogDirs] = v
			if v == "" {
				delete(cur, CordonedLogDirs)
			}
			return cur, nil
		})
	}
	for _, v := range []string{"/other", "/data,/other", "/data,,*", "/data,"} {
		var invalid *InvalidError
		if err := set("1", v); !errors.As(err, &invalid) {
			t.Errorf("cordoned.log.dirs=%q: got %v, want an InvalidError", v, err)
		}
	}
	for _, c := range []struct {
		def, broker string
		want        bool
	}{
		{"", "", false},
		{"", "/data", true},
		{"", " * ", true},
		{"*", "", true},
		{"/data", "", true},
	} {
		if err := set("", c.def); err != nil {
			t.Fatal(err)
		}
		if err := set("1", c.broker); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Load()
		if Cordoned(got.For(1), "/data") != c.want {
			t.Errorf("default %q, broker 1 %q: cordoned %v, want %v", c.def, c.broker, !c.want, c.want)
		}
		if c.broker == "" && c.def == "" && Cordoned(got.For(2), "/data") {
			t.Error("broker 2 cordoned with nothing set")
		}
	}
}

// TestResolveTopic: a topic config's broker default is listed as Kafka
// lists its synonyms (level by level, milliseconds before minutes before
// hours), and the default in force takes the milliseconds config over its
// twins at whatever level, converted to milliseconds.
func TestResolveTopic(t *testing.T) {
	static := func(v map[string]string) func(string) (string, bool) {
		return func(n string) (string, bool) { x, ok := v[n]; return x, ok }
	}
	for _, tc := range []struct {
		name   string
		set    Set
		static map[string]string
		levels string // name:source:value, ...
		value  string
		source Source
		ok     bool
	}{
		{"nothing set", Set{}, nil, "", "", 0, false},
		{"static hours", Set{}, map[string]string{"log.retention.hours": "2"},
			"log.retention.hours:4:2", "7200000", SourceStaticBroker, true},
		{"dynamic hours over static hours", Set{Default: map[string]string{"log.retention.hours": "3"}}, map[string]string{"log.retention.hours": "2"},
			"log.retention.hours:3:3,log.retention.hours:4:2", "10800000", SourceDynamicDefaultBroker, true},
		{"static milliseconds over dynamic hours", Set{Brokers: map[string]map[string]string{"0": {"log.retention.hours": "3"}}}, map[string]string{"log.retention.ms": "1000"},
			"log.retention.hours:2:3,log.retention.ms:4:1000", "1000", SourceStaticBroker, true},
		{"milliseconds before minutes in a level", Set{Default: map[string]string{"log.retention.minutes": "5", "log.retention.ms": "60000"}}, nil,
			"log.retention.ms:3:60000,log.retention.minutes:3:5", "60000", SourceDynamicDefaultBroker, true},
		{"minutes alone", Set{Default: map[string]string{"log.retention.minutes": "5"}}, nil,
			"log.retention.minutes:3:5", "300000", SourceDynamicDefaultBroker, true},
	} {
		levels, value, source, ok := ResolveTopic(tc.set, 0, "retention.ms", static(tc.static))
		var got []string
		for _, l := range levels {
			got = append(got, fmt.Sprintf("%s:%d:%s", l.Name, l.Source, l.Value))
		}
		if strings.Join(got, ",") != tc.levels || value != tc.value || source != tc.source || ok != tc.ok {
			t.Errorf("%s: %v %q %d %v, want %s %q %d %v", tc.name, got, value, source, ok, tc.levels, tc.value, tc.source, tc.ok)
		}
	}
	if got := TopicSynonyms("retention.ms"); !slices.Equal(got, []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}) {
		t.Errorf("TopicSynonyms(retention.ms) = %v", got)
	}
}

// TestFileStoresSerializeUpdates: brokers sharing the volume (a store each
// on one directory) that change their own configs at the same instant all
// find their change stored: the lock file serializes read and write.
func TestFileStoresSerializeUpdates(t *testing.T) {
	dir := t.TempDir()
	const brokers, rounds = 4, 25
	stores := make([]*Store, brokers) // one per broker, as each broker opens its own
	for b := range stores {
		stores[b] = NewFile(dir)
	}
	atomicfiletest.Brokers(t, brokers, rounds, func(b, r int) error {
		return stores[b].Update(strconv.Itoa(b), false, func(cur map[string]string) (map[string]string, error) {
			cur["message.max.bytes"] = strconv.Itoa(1000 + r)
			cur["log.retention.ms"] = strconv.Itoa(60000 + r)
			return cur, nil
		})
	})
	set, err := NewFile(dir).Load()
	if err != nil {
		t.Fatal(err)
	}
	for b := range brokers {
		got := set.Brokers[strconv.Itoa(b)]
		if got["message.max.bytes"] != strconv.Itoa(1000+rounds-1) || got["log.retention.ms"] != strconv.Itoa(60000+rounds-1) {
			t.Errorf("broker %d: %v, want its last change (round %d)", b, got, rounds-1)
		}
	}
}
