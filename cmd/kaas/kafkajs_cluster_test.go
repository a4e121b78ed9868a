package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestKafkajsCreateTopicsBurstOnKubernetes: a burst of CreateTopics, as
// kafkajs's own suite or a provisioning tool sends (120 concurrent calls of
// one topic each), creates every topic in cluster mode. Each topic is a
// KafkaTopic create and one status write on the apiserver, all through the
// broker's client-side rate limit: a status written once per re-list rather
// than once per object version, or client-go's default rate (5 a second),
// would queue the creations past the admin timeout.
func TestKafkajsCreateTopicsBurstOnKubernetes(t *testing.T) {
	dir := kafkajsDir(t)
	api := startAPIServer(t)
	c := newKaasCluster(t, api, slices.Clone(clusterFlags)...)
	c.start("kaas-0")
	waitUntil(t, 30*time.Second, "a controller elected and the broker alive", func() bool {
		led, ctrl, _ := c.ledBy()
		return ctrl != "" && len(led) == 1
	})
	const n = 120
	res := runNode(t, dir, 270*time.Second, "create-topics-burst.js", c.brokers["kaas-0"].kafka, "burst", strconv.Itoa(n))
	var out struct {
		Created int      `json:"created"`
		Errors  []string `json:"errors"`
		Listed  int      `json:"listed"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("create-topics-burst.js output: %v\n%s", err, res.Stdout)
	}
	if out.Created != n || len(out.Errors) != 0 {
		t.Errorf("%d of %d createTopics calls created their topic; errors: %v", out.Created, n, out.Errors)
	}
	if out.Listed != n {
		t.Errorf("listTopics lists %d of the %d topics", out.Listed, n)
	}
}
