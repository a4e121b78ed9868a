package routing

import (
	"slices"
	"testing"
)

func TestInternalTopicLeaders(t *testing.T) {
	cases := []struct {
		name  string
		view  View
		wantL []int32 // leaders of partitions 0..len-1
	}{
		{"local-dev: this broker leads all", View{Self: 7}, []int32{7, 7, 7}},
		{"no assignment yet: none", View{Self: 7, GroupSlots: []int32{}}, []int32{-1, -1}},
		{"slot p mod n", View{GroupSlots: []int32{0, 1, 2}}, []int32{0, 1, 2, 0, 1}},
		{"held slot: none", View{GroupSlots: []int32{0, -1}}, []int32{0, -1, 0, -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topic, ok := tc.view.Internal(ConsumerOffsetsTopic)
			if !ok || len(topic.Partitions) != 50 || topic.Name != ConsumerOffsetsTopic {
				t.Fatalf("Internal: %v %+v", ok, topic)
			}
			for p, want := range tc.wantL {
				if got := topic.Partitions[p].Leader; got != want {
					t.Fatalf("partition %d leader %d, want %d", p, got, want)
				}
			}
			byID, ok := tc.view.InternalByID(topic.ID)
			if !ok || byID.Name != ConsumerOffsetsTopic {
				t.Fatalf("InternalByID: %v %v", ok, byID)
			}
		})
	}
	if _, ok := (&View{}).Internal("orders"); ok || IsInternal("orders") || !IsInternal(ConsumerOffsetsTopic) {
		t.Fatal("a user topic is not internal")
	}
	if id := internalTopicID(ConsumerOffsetsTopic); id != internalTopicID(ConsumerOffsetsTopic) || id == ([16]byte{}) {
		t.Fatal("internal topic id is not stable")
	}
}

func TestAnyTopicIncludesInternal(t *testing.T) {
	orders := &Topic{Name: "orders", ID: [16]byte{1}, Partitions: make([]Partition, 3)}
	shadow := &Topic{Name: ConsumerOffsetsTopic, ID: [16]byte{2}, Partitions: make([]Partition, 1)}
	cases := []struct {
		name   string
		topics []*Topic
	}{
		{"user topics only", []*Topic{orders}},
		{"a user topic named like the internal one", []*Topic{orders, shadow}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := View{Self: 1, Topics: map[string]*Topic{}, TopicIDs: map[[16]byte]*Topic{}}
			for _, x := range tc.topics {
				v.Topics[x.Name], v.TopicIDs[x.ID] = x, x
			}
			if got, want := v.AllTopicNames(), []string{ConsumerOffsetsTopic, "orders"}; !slices.Equal(got, want) {
				t.Fatalf("AllTopicNames %v, want %v", got, want)
			}
			co, ok := v.AnyTopic(ConsumerOffsetsTopic)
			if !ok || len(co.Partitions) != 50 || co.ID != internalTopicID(ConsumerOffsetsTopic) {
				t.Fatalf("AnyTopic(%s): %v %+v", ConsumerOffsetsTopic, ok, co)
			}
			if byID, ok := v.AnyTopicByID(co.ID); !ok || byID.Name != ConsumerOffsetsTopic {
				t.Fatalf("AnyTopicByID(internal): %v %+v", ok, byID)
			}
			if _, ok := v.AnyTopicByID(shadow.ID); ok {
				t.Fatal("the hidden user topic is found by its id")
			}
			if o, ok := v.AnyTopic("orders"); !ok || o != orders {
				t.Fatalf("AnyTopic(orders): %v %+v", ok, o)
			}
			if o, ok := v.AnyTopicByID(orders.ID); !ok || o != orders {
				t.Fatalf("AnyTopicByID(orders): %v %+v", ok, o)
			}
			if _, ok := v.AnyTopic("missing"); ok {
				t.Fatal("a missing topic is found")
			}
		})
	}
}

func TestGroupSlotsServed(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    View
		want int
	}{
		{"local-dev mode: every slot", View{Self: 0}, 50},
		{"no assignment yet: none", View{Self: 7, GroupSlots: []int32{}}, 0},
		{"its own and fallen ones, not held ones", View{Self: 1, GroupSlots: []int32{0, 1, 1, -1, 2, 1}}, 3},
	} {
		if got := tc.v.GroupSlotsServed(); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
