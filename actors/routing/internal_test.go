package routing

import "testing"

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
