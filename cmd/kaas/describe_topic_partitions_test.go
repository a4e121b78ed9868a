package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
)

// DescribeTopicPartitions pages through every partition of every topic
// (internal ones included) with its cursor, each exactly once, in order.
func TestDescribeTopicPartitionsPaging(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	cl := newClient(t, addr)
	ctx := ctxT(t, 20*time.Second)
	createTopic(t, addr, "dtp-a", 5, nil)
	createTopic(t, addr, "dtp-b", 3, nil)

	var seen []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	pages := 0
	for {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit, req.Cursor = 7, cursor
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		n := 0
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("topic %v: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
			if rt.IsInternal != (*rt.Topic == "__consumer_offsets") {
				t.Fatalf("topic %s IsInternal=%v", *rt.Topic, rt.IsInternal)
			}
			for _, p := range rt.Partitions {
				seen = append(seen, fmt.Sprintf("%s-%d", *rt.Topic, p.Partition))
				n++
			}
		}
		if n > 7 {
			t.Fatalf("page of %d partitions, limit 7", n)
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	var want []string
	for p := 0; p < 50; p++ {
		want = append(want, fmt.Sprintf("__consumer_offsets-%d", p))
	}
	for p := 0; p < 5; p++ {
		want = append(want, fmt.Sprintf("dtp-a-%d", p))
	}
	for p := 0; p < 3; p++ {
		want = append(want, fmt.Sprintf("dtp-b-%d", p))
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) || pages != (len(want)+6)/7 {
		t.Fatalf("%d pages described %v\nwant %v", pages, seen, want)
	}

	// Named topics: unknown ones answered as such; a cursor outside them is refused.
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, n := range []string{"dtp-b", "missing"} {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 3 || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("named topics: %+v", resp.Topics)
	}
	// Without an authorizer every topic operation is authorized (KIP-430).
	if all := acl.OperationsBitField(acl.TopicOperations); resp.Topics[0].AuthorizedOperations != all {
		t.Fatalf("authorized operations %b, want %b", resp.Topics[0].AuthorizedOperations, all)
	}
	req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-a"}
	if resp, err = req.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("cursor outside the named topics: %v %+v", err, resp.Topics)
	}
}
