package kafkacli

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseAddConfig(t *testing.T) {
	cases := []struct {
		in   string
		want []configKV
		err  string
	}{
		{"retention.ms=1000", []configKV{{"retention.ms", "1000"}}, ""},
		{"k1=v1, k2 = [a,b,c] ,k3=", []configKV{{"k1", "v1"}, {"k2", "a,b,c"}, {"k3", ""}}, ""},
		{"SCRAM-SHA-256=[iterations=8192,password=alice-secret]", []configKV{{"SCRAM-SHA-256", "iterations=8192,password=alice-secret"}}, ""},
		{"a=1,a=2", []configKV{{"a", "2"}}, ""},
		{"a", nil, `format "key=val"`},
		{"a=1=2", nil, `format "key=val"`},
		{"a=1,,b=2", nil, `format "key=val"`},
	}
	for _, c := range cases {
		got, err := parseAddConfig(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: got %v, %v; want an error naming %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// Quota values print as Java's Double.toString does.
func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 1024: "1024.0", 50.5: "50.5", 9999999: "9999999.0", 1e7: "1.0E7",
		20971520: "2.097152E7", 0.001: "0.001", 0.0005: "5.0E-4", 1.5e300: "1.5E300",
	} {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", f, got, want)
		}
	}
}

// Kafka pairs entity names with entity types in command-line order:
// --entity-name and --entity-default as given, then the shorthand flags.
func TestConfigsEntityOrder(t *testing.T) {
	cases := []struct {
		args         []string
		types, names []string
	}{
		{[]string{"--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-name", "app"}, []string{"users", "clients"}, []string{"", "app"}},
		{[]string{"--user", "alice", "--client", "app"}, []string{"clients", "users"}, []string{"app", "alice"}},
		{[]string{"--broker-defaults"}, []string{"brokers"}, []string{""}},
		{[]string{"--topic", "t"}, []string{"topics"}, []string{"t"}},
	}
	for _, c := range cases {
		o := newConfigsOptions(&strings.Builder{})
		if err := o.fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := o.entityTypes(); !reflect.DeepEqual(got, c.types) {
			t.Errorf("%v: types %q, want %q", c.args, got, c.types)
		}
		if got := o.entityNames(); !reflect.DeepEqual(got, c.names) {
			t.Errorf("%v: names %q, want %q", c.args, got, c.names)
		}
	}
}
