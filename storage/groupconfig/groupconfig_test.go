package groupconfig

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kaas-project/kaas/storage/atomicfile/atomicfiletest"
	"github.com/kaas-project/kaas/storage/groupstore"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want string // "" valid, else a fragment of the error
	}{
		{"none", nil, ""},
		{"share settings", map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}, ""},
		{"consumer settings", map[string]string{"consumer.session.timeout.ms": "60000", "consumer.heartbeat.interval.ms": "15000"}, ""},
		{"unknown name", map[string]string{"share.bogus": "1"}, "unknown group config share.bogus"},
		{"topic config", map[string]string{"retention.ms": "1"}, "unknown group config"},
		{"not an int", map[string]string{"share.delivery.count.limit": "five"}, "is not an int"},
		{"below min", map[string]string{"share.record.lock.duration.ms": "1000"}, "outside [15000, 60000]"},
		{"above max", map[string]string{"share.session.timeout.ms": "60001"}, "outside [45000, 60000]"},
		{"overflow", map[string]string{"share.partition.max.record.locks": "99999999999"}, "is not an int"},
		{"bad reset", map[string]string{"share.auto.offset.reset": "by_duration:PT1H"}, "not one of [latest earliest]"},
		{"read committed", map[string]string{"share.isolation.level": "read_committed"}, ""},
		{"dead-letter queue", map[string]string{"errors.deadletterqueue.topic.name": "dlq.orders", "errors.deadletterqueue.copy.record.enable": "True"}, ""},
		{"bad copy flag", map[string]string{"errors.deadletterqueue.copy.record.enable": "yes"}, `"yes" is not a boolean`},
		{"bad isolation", map[string]string{"share.isolation.level": "committed"}, "not one of [read_uncommitted read_committed]"},
		{"names the bounds", map[string]string{"share.record.lock.duration.ms": "3000"},
			"(group.share.min.record.lock.duration.ms, group.share.max.record.lock.duration.ms)"},
		{"renew off", map[string]string{"share.renew.acknowledge.enable": "false"}, ""},
		{"renew not a boolean", map[string]string{"share.renew.acknowledge.enable": "no"}, `"no" is not a boolean`},
		{"record locks over Kafka's default maximum", map[string]string{"share.partition.max.record.locks": "5000"},
			"outside [100, 4000] (group.share.min.partition.max.record.locks, group.share.max.partition.max.record.locks)"},
		{"names the upper bound", map[string]string{"streams.num.standby.replicas": "3"}, "outside [0, 2] (group.streams.max.standby.replicas)"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkValidate(t, NewMemory(nil), tc.cfg, tc.want) })
	}
}

// checkValidate checks s.Validate(cfg): valid when want is "", else an
// error containing want.
func checkValidate(t *testing.T, s *Store, cfg map[string]string, want string) {
	t.Helper()
	err := s.Validate(cfg)
	if want == "" {
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Validate: %v, want an error with %q", err, want)
	}
}

// A broker's bounds replace Kafka's default ones: what they let through is
// valid, and a heartbeat interval they allow at or above the session
// timeout (set, or the default) is refused.
func TestValidateWithBrokerBounds(t *testing.T) {
	s := NewMemory(map[string]string{"consumer.session.timeout.ms": "10000"})
	s.Bounds = map[string]Bound{
		"share.record.lock.duration.ms":  {1000, 60000},
		"consumer.session.timeout.ms":    {2000, 60000},
		"consumer.heartbeat.interval.ms": {500, 30000},
	}
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want string
	}{
		{"lowered minimum", map[string]string{"share.record.lock.duration.ms": "1000"}, ""},
		{"below the lowered minimum", map[string]string{"share.record.lock.duration.ms": "999"}, "outside [1000, 60000]"},
		{"other configs keep Kafka's", map[string]string{"share.session.timeout.ms": "2000"}, "outside [45000, 60000]"},
		{"short session", map[string]string{"consumer.session.timeout.ms": "2000", "consumer.heartbeat.interval.ms": "500"}, ""},
		{"heartbeat at the session", map[string]string{"consumer.session.timeout.ms": "2000", "consumer.heartbeat.interval.ms": "2000"},
			"consumer.heartbeat.interval.ms 2000 must be less than consumer.session.timeout.ms 2000"},
		{"heartbeat past the default session", map[string]string{"consumer.heartbeat.interval.ms": "20000"},
			"consumer.heartbeat.interval.ms 20000 must be less than consumer.session.timeout.ms 10000"},
		{"session under the default heartbeat", map[string]string{"consumer.session.timeout.ms": "4000"},
			"consumer.heartbeat.interval.ms 5000 must be less than consumer.session.timeout.ms 4000"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkValidate(t, s, tc.cfg, tc.want) })
	}
}

// Bounded moves stored values into the broker's ranges and leaves the rest.
func TestBounded(t *testing.T) {
	s := NewMemory(nil)
	s.Bounds = map[string]Bound{"share.record.lock.duration.ms": {1000, 20000}}
	got := s.Bounded(map[string]string{
		"share.record.lock.duration.ms": "30000", // above this broker's maximum
		"consumer.session.timeout.ms":   "1000",  // below Kafka's default minimum
		"share.delivery.count.limit":    "4",
		"share.auto.offset.reset":       "earliest",
	})
	want := map[string]string{
		"share.record.lock.duration.ms": "20000",
		"consumer.session.timeout.ms":   "45000",
		"share.delivery.count.limit":    "4",
		"share.auto.offset.reset":       "earliest",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("Bounded: %v, want %v", got, want)
	}
}

func set(name, value string) func(map[string]string) (map[string]string, error) {
	return func(cur map[string]string) (map[string]string, error) {
		cur[name] = value
		return cur, nil
	}
}

// A store's overrides are read back by another store on the same data
// dir (another broker on the shared volume); refused and validate-only
// updates write nothing.
func TestFileStoreSharedAndDurable(t *testing.T) {
	dir := t.TempDir()
	a := NewFile(dir, nil)
	b := NewFile(dir, map[string]string{"share.auto.offset.reset": "earliest"})
	if err := a.Update("g1", false, set("share.record.lock.duration.ms", "20000")); err != nil {
		t.Fatal(err)
	}
	if err := a.Update("g1", false, set("share.auto.offset.reset", "earliest")); err != nil {
		t.Fatal(err)
	}
	var invalid *InvalidError
	if err := a.Update("g1", false, set("share.delivery.count.limit", "11")); !errors.As(err, &invalid) {
		t.Fatalf("out of range update: %v, want an InvalidError", err)
	}
	if err := a.Update("g1", true, set("share.delivery.count.limit", "7")); err != nil {
		t.Fatal(err)
	}
	got, err := b.Load("g1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"share.record.lock.duration.ms": "20000", "share.auto.offset.reset": "earliest"}
	if len(got) != len(want) || got["share.record.lock.duration.ms"] != "20000" || got["share.auto.offset.reset"] != "earliest" {
		t.Fatalf("other store read %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "__groups", groupstore.DirName("g1"), "configs.json")); err != nil {
		t.Fatalf("configs not next to the group's log: %v", err)
	}
	if got, _ := b.Load("g2"); len(got) != 0 {
		t.Fatalf("group without overrides read %v", got)
	}
	if d := b.Default("share.auto.offset.reset"); d != "earliest" {
		t.Fatalf("default from the broker's settings %q, want earliest", d)
	}
	if d := b.Default("share.delivery.count.limit"); d != "5" {
		t.Fatalf("Kafka's default %q, want 5", d)
	}
	// DELETE through change: the override goes.
	if err := b.Update("g1", false, func(cur map[string]string) (map[string]string, error) {
		delete(cur, "share.auto.offset.reset")
		return cur, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Load("g1"); len(got) != 1 {
		t.Fatalf("after delete read %v, want only the lock duration", got)
	}
}

func TestFileStoreCorruptIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := NewFile(dir, nil)
	gdir := filepath.Join(dir, "__groups", groupstore.DirName("g"))
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gdir, "configs.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("g"); err == nil {
		t.Fatal("corrupt configs read without an error")
	}
	if err := s.Update("g", false, set("share.auto.offset.reset", "earliest")); err == nil {
		t.Fatal("update over corrupt configs succeeded")
	}
}

func TestMemoryStore(t *testing.T) {
	s := NewMemory(nil)
	if err := s.Update("g", false, set("consumer.session.timeout.ms", "50000")); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Load("g")
	got["consumer.session.timeout.ms"] = "1" // a copy: the store is unchanged
	if again, _ := s.Load("g"); again["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("read %v", again)
	}
}

// TestGroupsListsOverriddenGroups: both stores list the groups with
// overrides, by id, including an id too long for a directory name and a
// bare overrides file; a group whose overrides were all deleted is not
// listed.
func TestGroupsListsOverriddenGroups(t *testing.T) {
	long := strings.Repeat("long-group-", 30)
	dir := t.TempDir()
	for name, s := range map[string]*Store{"memory": NewMemory(nil), "file": NewFile(dir, nil)} {
		t.Run(name, func(t *testing.T) {
			if got, err := s.Groups(); err != nil || len(got) != 0 {
				t.Fatalf("empty store lists %v (%v)", got, err)
			}
			for _, g := range []string{"b", long, "a", "gone"} {
				if err := s.Update(g, false, set("consumer.session.timeout.ms", "50000")); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Update("validated-only", true, set("consumer.session.timeout.ms", "50000")); err != nil {
				t.Fatal(err)
			}
			if err := s.Update("gone", false, func(map[string]string) (map[string]string, error) { return nil, nil }); err != nil {
				t.Fatal(err)
			}
			want := []string{"a", "b", long}
			if name == "file" {
				// A bare overrides file: its group is the directory's.
				gdir := filepath.Join(dir, "__groups", groupstore.DirName("bare"))
				if err := os.MkdirAll(gdir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(gdir, "configs.json"), []byte(`{"consumer.heartbeat.interval.ms":"6000"}`), 0o644); err != nil {
					t.Fatal(err)
				}
				if got, err := s.Load("bare"); err != nil || got["consumer.heartbeat.interval.ms"] != "6000" {
					t.Fatalf("bare file reads %v (%v)", got, err)
				}
				want = []string{"a", "b", "bare", long}
				if got, err := s.Load("gone"); err != nil || len(got) != 0 {
					t.Fatalf("emptied group reads %v (%v)", got, err)
				}
			}
			got, err := s.Groups()
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("Groups() = %q (%v), want %q", got, err, want)
			}
		})
	}
}

// Every listener hears a stored change, in the order added; a refused or
// validate-only update tells none.
func TestOnChangeTellsEveryListener(t *testing.T) {
	for _, s := range []*Store{NewMemory(nil), NewFile(t.TempDir(), nil)} {
		var heard []string
		s.OnChange(func(g string) { heard = append(heard, "coordinator:"+g) })
		s.OnChange(func(g string) { heard = append(heard, "keeper:"+g) })
		if err := s.Update("g1", true, set("share.delivery.count.limit", "3")); err != nil {
			t.Fatal(err)
		}
		if err := s.Update("g1", false, set("share.delivery.count.limit", "99")); err == nil {
			t.Fatal("out of range update stored")
		}
		if err := s.Update("g1", false, set("share.delivery.count.limit", "3")); err != nil {
			t.Fatal(err)
		}
		if want := []string{"coordinator:g1", "keeper:g1"}; !slices.Equal(heard, want) {
			t.Fatalf("heard %v, want %v", heard, want)
		}
	}
}

// TestFileStoresSerializeUpdates: brokers (one store each, on one data
// dir) change one group's configs at the same time, each its own config;
// every broker's last change is stored, none lost to another's write.
func TestFileStoresSerializeUpdates(t *testing.T) {
	dir := t.TempDir()
	const rounds = 25
	keys := []struct {
		name string
		base int
	}{{"share.heartbeat.interval.ms", 5000}, {"consumer.session.timeout.ms", 45000}, {"share.record.lock.duration.ms", 30000}, {"share.auto.offset.reset", -1}}
	stores := make([]*Store, len(keys)) // one per broker
	for b := range stores {
		stores[b] = NewFile(dir, nil)
	}
	atomicfiletest.Brokers(t, len(keys), rounds, func(b, r int) error {
		k, value := keys[b], strconv.Itoa(keys[b].base+r)
		if k.base < 0 {
			value = []string{"earliest", "latest"}[r%2]
		}
		return stores[b].Update("g", false, func(cur map[string]string) (map[string]string, error) {
			cur[k.name] = value
			return cur, nil
		})
	})
	got, err := NewFile(dir, nil).Load("g")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"share.heartbeat.interval.ms": "5024", "consumer.session.timeout.ms": "45024", "share.record.lock.duration.ms": "30024", "share.auto.offset.reset": "earliest"}
	if !maps.Equal(got, want) {
		t.Fatalf("stored %v, want every broker's last change %v", got, want)
	}
}

// TestRefusedUpdateLeavesNoFiles: a validate-only or refused change of a
// group without files creates no directory (nor lock file) for it.
func TestRefusedUpdateLeavesNoFiles(t *testing.T) {
	root := t.TempDir()
	s := NewFile(root, nil)
	set := func(v string) func(map[string]string) (map[string]string, error) {
		return func(cur map[string]string) (map[string]string, error) {
			cur["share.record.lock.duration.ms"] = v
			return cur, nil
		}
	}
	if err := s.Update("checked", true, set("20000")); err != nil {
		t.Fatal(err)
	}
	var invalid *InvalidError
	if err := s.Update("refused", false, set("1")); !errors.As(err, &invalid) {
		t.Fatalf("out-of-range value: %v, want an InvalidError", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, groupstore.Dir)); len(ents) != 0 {
		t.Fatalf("files left for groups never stored: %v", ents)
	}
	if err := s.Update("stored", false, set("20000")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load("stored"); err != nil || got["share.record.lock.duration.ms"] != "20000" {
		t.Fatalf("stored %v, %v", got, err)
	}
}
