package clientmetrics

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage/atomicfile/atomicfiletest"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		cfg  map[string]string
		want string // the error's text, "" for none
	}{
		{map[string]string{}, ""},
		{map[string]string{Metrics: "org.apache.kafka.producer., org.apache.kafka.consumer.fetch", IntervalMs: "1000",
			Match: "client_id=app-.*,client_software_name=apache-kafka-java"}, ""},
		{map[string]string{IntervalMs: "99"}, "Value must be between 100 and 3600000"},
		{map[string]string{IntervalMs: "3600001"}, "Value must be between 100 and 3600000"},
		{map[string]string{IntervalMs: "soon"}, "Not a number"},
		{map[string]string{Match: "client_colour=blue"}, "Invalid client matching key: client_colour"},
		{map[string]string{Match: "client_id"}, "Illegal client matching pattern"},
		{map[string]string{Match: "client_id=a,client_id=b"}, "Duplicate client matching key: client_id"},
		{map[string]string{Match: "client_id=(unclosed"}, "Illegal regex pattern for client_id"},
		{map[string]string{"metric": "x"}, "Unknown client metrics configuration: metric"},
	} {
		_, err := Parse("sub", c.cfg)
		var invalid *InvalidError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.cfg, err)
		case c.want != "" && (!errors.As(err, &invalid) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: %v, want an InvalidError with %q", c.cfg, err, c.want)
		}
	}
	if _, err := Parse("", nil); err == nil {
		t.Fatal("a subscription without a name")
	}
}

// TestSelect: a client's plan is the union of the subscriptions matching
// it (every selector, anchored) at the shortest interval; "*" asks for
// every metric; the id changes with the plan and the instance.
func TestSelect(t *testing.T) {
	sub := func(name string, cfg map[string]string) Subscription {
		s, err := Parse(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	subs := []Subscription{
		sub("producers", map[string]string{Metrics: "org.apache.kafka.producer.", IntervalMs: "60000", Match: "client_id=app-.*"}),
		sub("java", map[string]string{Metrics: "org.apache.kafka.consumer.", IntervalMs: "30000", Match: "client_software_name=apache-kafka-java,client_source_port=5.*"}),
		sub("all-of-one", map[string]string{Metrics: "*", Match: "client_instance_id=" + UUIDString([16]byte{1})}),
	}
	app := Client{InstanceID: [16]byte{9}, ClientID: "app-1", SoftwareName: "apache-kafka-java", SourcePort: "5123"}
	for _, c := range []struct {
		name     string
		c        Client
		metrics  string
		interval time.Duration
	}{
		{"two subscriptions", app, "[org.apache.kafka.consumer. org.apache.kafka.producer.]", 30 * time.Second},
		{"the port does not match", Client{InstanceID: app.InstanceID, ClientID: "app-1", SoftwareName: "apache-kafka-java", SourcePort: "6000"},
			"[org.apache.kafka.producer.]", time.Minute},
		{"anchored: not app-", Client{ClientID: "my-app-1"}, "[]", DefaultInterval},
		{"every metric", Client{InstanceID: [16]byte{1}, ClientID: "app-2"}, "[]", time.Minute},
	} {
		p := Select(subs, c.c)
		got := fmt.Sprint(p.Metrics)
		if c.name == "every metric" {
			if len(p.Metrics) != 1 || p.Metrics[0] != "" {
				t.Errorf("%s: %q, want [\"\"] (every metric)", c.name, p.Metrics)
			}
		} else if got != c.metrics {
			t.Errorf("%s: metrics %s, want %s", c.name, got, c.metrics)
		}
		if p.Interval != c.interval {
			t.Errorf("%s: interval %v, want %v", c.name, p.Interval, c.interval)
		}
	}
	other := app
	other.InstanceID = [16]byte{10}
	if Select(subs, app).SubscriptionID == Select(subs, other).SubscriptionID {
		t.Error("two instances share a subscription id")
	}
	if Select(subs, app).SubscriptionID == Select(subs[:1], app).SubscriptionID {
		t.Error("a changed plan kept its subscription id")
	}
	one := Client{InstanceID: [16]byte{1}} // subs[2] asks it for every metric at the default interval
	if Select(nil, one).SubscriptionID == Select(subs[2:], one).SubscriptionID {
		t.Error("every metric and no metric share a subscription id")
	}
	if Select(subs, app).SubscriptionID != Select(subs, app).SubscriptionID {
		t.Error("the same plan changed its id")
	}
}

// TestStores: both stores keep what Update stores, refuse what does not
// parse (storing nothing), and remove a subscription left without configs.
func TestStores(t *testing.T) {
	for name, s := range map[string]*Store{"memory": NewMemory(), "file": NewFile(t.TempDir())} {
		t.Run(name, func(t *testing.T) {
			set := func(k, v string) func(map[string]string) (map[string]string, error) {
				return func(cur map[string]string) (map[string]string, error) {
					if v == "" {
						delete(cur, k)
					} else {
						cur[k] = v
					}
					return cur, nil
				}
			}
			if err := s.Update("s", false, set(Metrics, "a.")); err != nil {
				t.Fatal(err)
			}
			if err := s.Update("s", false, set(IntervalMs, "5")); err == nil {
				t.Fatal("an interval under the bound was stored")
			}
			if err := s.Update("s", true, set(IntervalMs, "500")); err != nil {
				t.Fatal(err)
			}
			all, err := s.Load()
			if err != nil || fmt.Sprint(all) != "map[s:map[metrics:a.]]" {
				t.Fatalf("stored %v (%v)", all, err)
			}
			if subs, _ := s.Subscriptions(); len(subs) != 1 || subs[0].Interval != DefaultInterval {
				t.Fatalf("subscriptions %+v", subs)
			}
			if err := s.Update("s", false, set(Metrics, "")); err != nil {
				t.Fatal(err)
			}
			if all, _ := s.Load(); len(all) != 0 {
				t.Fatalf("a subscription without configs is kept: %v", all)
			}
		})
	}
}

// TestFileStoresSerializeUpdates: brokers (one store each, on one cluster
// directory) change subscriptions at the same time, each its own; every
// subscription is stored with its broker's last change.
func TestFileStoresSerializeUpdates(t *testing.T) {
	dir := t.TempDir()
	const brokers, rounds = 4, 25
	stores := make([]*Store, brokers)
	for b := range stores {
		stores[b] = NewFile(dir)
	}
	atomicfiletest.Brokers(t, brokers, rounds, func(b, r int) error {
		return stores[b].Update("sub-"+strconv.Itoa(b), false, func(cur map[string]string) (map[string]string, error) {
			cur[IntervalMs] = strconv.Itoa(1000 + r)
			return cur, nil
		})
	})
	all, err := NewFile(dir).Load()
	if err != nil {
		t.Fatal(err)
	}
	for b := range brokers {
		if got := all["sub-"+strconv.Itoa(b)][IntervalMs]; got != strconv.Itoa(1000+rounds-1) {
			t.Errorf("broker %d's subscription: interval %q, want its last change %d", b, got, 1000+rounds-1)
		}
	}
}
