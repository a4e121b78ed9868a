package streams

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ready is whether the topology is configured: from the configuration
// when one was made, else from the validated epoch a saved group carries.
func (g *Group) ready() bool {
	if g.conf != nil {
		return g.conf.ready()
	}
	return g.topo != nil && g.validated >= 0 && g.validated == g.topo.Epoch
}

func (g *Group) state() State {
	switch {
	case len(g.members) == 0:
		return Empty
	case !g.ready():
		return NotReady
	case g.epoch > g.assignmentEpoch:
		return Assigning
	}
	for _, m := range g.members {
		if m.epoch != g.assignmentEpoch || m.state != stateStable {
			return Reconciling
		}
	}
	return Stable
}

// describeTopics lists internal topics sorted by name, with their
// configs sorted by key; decided fills the partition counts the topology
// left to the coordinator.
func describeTopics(ts []topicInfo, decided map[string]int32) []kmsg.TopicInfo {
	out := []kmsg.TopicInfo{}
	for _, t := range ts {
		ti := kmsg.TopicInfo{Topic: t.Name, NumPartitions: t.Partitions, ReplicationFactor: t.Replication}
		if ti.NumPartitions == 0 && decided != nil {
			ti.NumPartitions = decided[t.Name]
		}
		for _, c := range t.Configs {
			ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: c.Key, Value: c.Value})
		}
		slices.SortFunc(ti.Configs, func(a, b kmsg.TopicInfoConfig) int { return strings.Compare(a.Key, b.Key) })
		out = append(out, ti)
	}
	slices.SortFunc(out, func(a, b kmsg.TopicInfo) int { return strings.Compare(a.Topic, b.Topic) })
	return out
}

func sortedCopy(ss []string) []string {
	c := append([]string{}, ss...)
	slices.Sort(c)
	return c
}

// describeTopology is the topology as Kafka describes it: configured
// (internal topics with their decided partition counts) when it is
// ready, else as the members sent it.
func (g *Group) describeTopology(topics Topics) *kmsg.StreamsGroupDescribeResponseGroupTopology {
	if g.topo == nil {
		return nil
	}
	conf := g.conf
	if conf == nil && topics != nil {
		conf = g.topo.configure(topics)
	}
	var decided map[string]int32
	if conf.ready() {
		decided = conf.partitions
	}
	t := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: g.topo.Epoch}
	t.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
	for _, s := range g.topo.Subs {
		t.Subtopologies = append(t.Subtopologies, kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
			SubtopologyID:           s.ID,
			SourceTopics:            sortedCopy(s.Sources),
			RepartitionSinkTopics:   sortedCopy(s.RepartitionSinks),
			StateChangelogTopics:    describeTopics(s.Changelogs, decided),
			RepartitionSourceTopics: describeTopics(s.RepartitionSources, decided),
		})
	}
	return t
}

func (g *Group) describe(topics Topics) kmsg.StreamsGroupDescribeResponseGroup {
	d := kmsg.NewStreamsGroupDescribeResponseGroup()
	d.State = string(g.state())
	d.Epoch = g.epoch
	d.AssignmentEpoch = g.assignmentEpoch
	d.Topology = g.describeTopology(topics)
	d.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.MemberEpoch = m.epoch
		dm.RackID = cloneStr(m.rackID)
		dm.ClientID = m.clientID
		dm.ClientHost = m.host
		dm.TopologyEpoch = m.topologyEpoch
		dm.ProcessID = m.process
		if m.endpoint != nil {
			dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.endpoint.Host, Port: m.endpoint.Port}
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, k := range sortedKeys(m.tags) {
			dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: k, Value: m.tags[k]})
		}
		// Kafka 4.2 refuses task offsets in heartbeats.
		dm.TaskOffsets, dm.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
		dm.Assignment = m.assigned.assignment()
		target := g.target[id]
		if target.Active == nil {
			target = newTasks()
		}
		dm.TargetAssignment = target.assignment()
		d.Members = append(d.Members, dm)
	}
	return d
}

// endpointPartitions is the interactive-queries map: for every member
// with an endpoint, the partitions of its subtopologies' input topics its
// active and standby tasks hold. The asking member comes last, as in
// Kafka.
func (g *Group) endpointPartitions(self *member, topics Topics) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	ids := sortedKeys(g.members)
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == self.id })
	ids = append(ids, self.id)
	for _, id := range ids {
		m := g.members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{
			UserEndpoint: kmsg.Endpoint{Host: m.endpoint.Host, Port: m.endpoint.Port},
		}
		active, standby := g.inputPartitions(m.assigned.Active, topics), g.inputPartitions(m.assigned.Standby, topics)
		e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		for _, tp := range active {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: tp.topic, Partitions: tp.parts})
		}
		e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		for _, tp := range standby {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: tp.topic, Partitions: tp.parts})
		}
		out = append(out, e)
	}
	return out
}

type topicParts struct {
	topic string
	parts []int32
}

// inputPartitions lists, for each subtopology the tasks belong to and
// each of its source and repartition source topics, the tasks'
// partitions; a topic with fewer partitions than there are tasks lists
// that many of the lowest, as Kafka's EndpointToPartitionsManager does.
func (g *Group) inputPartitions(s taskSet, topics Topics) []topicParts {
	if g.topo == nil || len(s) == 0 {
		return nil
	}
	bySub := map[string][]int32{}
	for _, t := range s.sorted() {
		bySub[t.Sub] = append(bySub[t.Sub], t.Part)
	}
	var out []topicParts
	for _, sub := range g.topo.Subs {
		parts, ok := bySub[sub.ID]
		if !ok {
			continue
		}
		inputs := append([]string{}, sub.Sources...)
		for _, r := range sub.RepartitionSources {
			inputs = append(inputs, r.Name)
		}
		slices.Sort(inputs)
		for _, topic := range slices.Compact(inputs) {
			ps := slices.Clone(parts)
			if tp, ok := topics.ByName(topic); ok && int(tp.Partitions) < len(ps) {
				ps = ps[:max(tp.Partitions, 0)]
			}
			out = append(out, topicParts{topic, ps})
		}
	}
	return out
}
