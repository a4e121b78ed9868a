package quota

import (
	"slices"
	"sort"
	"testing"
)

func sortEntities(es []Entity) []Entity {
	out := slices.Clone(es)
	sort.Slice(out, func(i, j int) bool { return out[i].less(out[j]) })
	return out
}

// TestKafkaOrder: client-quota answers in Kafka's order. Each expectation
// is what testdata/KafkaOrder.java, building the maps as Kafka 4 does,
// prints (on JDK 17 and 25 alike); the platformatic-shaped ones are also
// what @platformatic/kafka's admin tests expect from Kafka.
func TestKafkaOrder(t *testing.T) {
	const (
		p = ProducerByteRate
		c = ConsumerByteRate
		r = RequestPercentage
		m = ControllerMutationRate
		n = ConnectionCreationRate
	)
	for _, tc := range []struct {
		keys []string
		want []string
	}{
		{[]string{p, c, r}, []string{c, r, p}},
		{[]string{c, m, p, r}, []string{p, c, m, r}},
		{[]string{p, r}, []string{r, p}},
		{[]string{c, p}, []string{c, p}},
		{[]string{m, r}, []string{m, r}},
		{[]string{c, m, r}, []string{c, m, r}},
		{[]string{n}, []string{n}},
	} {
		v := Values{}
		for _, k := range tc.keys {
			v[k] = 1
		}
		if got := v.SortedKeys(); !slices.Equal(got, tc.want) {
			t.Errorf("values %v: %v, want %v", tc.keys, got, tc.want)
		}
	}

	types := func(cs []Component) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Type)
		}
		return out
	}
	for _, e := range []Entity{{User: Named("User1"), ClientID: Named("Client1")}, {User: Default(), ClientID: Default()}} {
		if got := types(e.Components()); !slices.Equal(got, []string{TypeClientID, TypeUser}) {
			t.Errorf("%v components: %v, want client-id, user", e, got)
		}
	}

	user1, user1c := Entity{User: Named("User1")}, Entity{User: Named("User1"), ClientID: Named("Client1")}
	alice, aliceC := Entity{User: Named("alice")}, Entity{User: Named("alice"), ClientID: Named("c1")}
	defUser, defBoth, c1 := Entity{User: Default()}, Entity{User: Default(), ClientID: Default()}, Entity{ClientID: Named("c1")}
	ip1, ip6, ipDef := Entity{IP: Named("10.0.0.1")}, Entity{IP: Named("::1")}, Entity{IP: Default()}
	users := func(names ...string) []Entity {
		var out []Entity
		for _, n := range names {
			if n == "" {
				out = append(out, defUser)
			} else {
				out = append(out, Entity{User: Named(n)})
			}
		}
		return out
	}
	for _, want := range [][]Entity{
		{user1, user1c},
		{c1, alice, ip6, ipDef, defUser, aliceC, ip1, defBoth},
		// 14 entities: the tables grow past 16 buckets.
		users("erin", "grace", "heidi", "bob", "niaj", "mallory", "judy", "carol", "olivia", "alice", "ivan", "frank", "", "dave"),
	} {
		cfg := Config{}
		for _, e := range want {
			cfg[e] = Values{p: 1}
		}
		cfg[Entity{User: Named("no values")}] = Values{}
		if got := cfg.Describe(Filter{}); !slices.Equal(got, want) {
			t.Errorf("Describe: %v, want %v", got, want)
		}
	}
	// A filter keeps the order of the entities it selects.
	cfg := Config{user1: {p: 1}, user1c: {p: 1}, c1: {p: 1}}
	if got := cfg.Describe(Filter{Components: []FilterComponent{{Type: TypeUser, Name: "User1"}}}); !slices.Equal(got, []Entity{user1, user1c}) {
		t.Errorf("Describe user User1: %v", got)
	}

	// AlterClientQuotas: the entries in the request's order, as put into
	// the controller's results map.
	alter := func(es ...Entity) []Entity {
		out := slices.Clone(es)
		InKafkaOrder(out, func(e Entity) int32 { return EntityHash(e.Components()) }, 16)
		return out
	}
	c1u1 := Entity{User: Named("User1"), ClientID: Named("Client1")}
	if got, want := alter(user1, c1u1, c1, defUser, ip1), []Entity{c1, user1, defUser, c1u1, ip1}; !slices.Equal(got, want) {
		t.Errorf("alter results: %v, want %v", got, want)
	}
	if got, want := alter(ip1, defUser, c1, c1u1, user1), []Entity{c1, user1, defUser, ip1, c1u1}; !slices.Equal(got, want) {
		t.Errorf("alter results, the request reversed: %v, want %v", got, want)
	}
}

func TestJavaHash(t *testing.T) {
	// Values of Java's "...".hashCode().
	for s, want := range map[string]int32{"": 0, "user": 3599307, "client-id": -1904137635, "producer_byte_rate": -832502454, "é😀": 233*31*31 + 55357*31 + 56832} {
		if got := JavaHash(s); got != want {
			t.Errorf("JavaHash(%q) = %d, want %d", s, got, want)
		}
	}
}
