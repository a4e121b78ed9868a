package streams

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicInfo is an internal topic as the topology declares it.
type topicInfo struct {
	Name        string
	Partitions  int32         `json:",omitempty"` // 0: decided by the coordinator
	Replication int16         `json:",omitempty"`
	Configs     []topicConfig `json:",omitempty"`
}

type topicConfig struct{ Key, Value string }

// copartitionGroup holds indexes into its subtopology's topic lists.
type copartitionGroup struct {
	Sources      []int16 `json:",omitempty"`
	Regexes      []int16 `json:",omitempty"`
	Repartitions []int16 `json:",omitempty"`
}

type subtopology struct {
	ID                 string
	Sources            []string           `json:",omitempty"`
	SourceRegexes      []string           `json:",omitempty"`
	Changelogs         []topicInfo        `json:",omitempty"`
	RepartitionSinks   []string           `json:",omitempty"`
	RepartitionSources []topicInfo        `json:",omitempty"`
	Copartitions       []copartitionGroup `json:",omitempty"`
}

// topology is the group's topology, set by its first member.
type topology struct {
	Epoch int32
	Subs  []subtopology // sorted by ID
}

func topicInfos(ts []kmsg.TopicInfo) []topicInfo {
	var out []topicInfo
	for _, t := range ts {
		ti := topicInfo{Name: t.Topic, Partitions: t.NumPartitions, Replication: t.ReplicationFactor}
		for _, c := range t.Configs {
			ti.Configs = append(ti.Configs, topicConfig{c.Key, c.Value})
		}
		out = append(out, ti)
	}
	return out
}

func fromRequest(rt *kmsg.StreamsGroupHeartbeatRequestTopology) *topology {
	t := &topology{Epoch: rt.Epoch}
	for _, s := range rt.Subtopologies {
		st := subtopology{
			ID:                 s.SubtopologyID,
			Sources:            slices.Clone(s.SourceTopics),
			SourceRegexes:      slices.Clone(s.SourceTopicRegex),
			Changelogs:         topicInfos(s.StateChangelogTopics),
			RepartitionSinks:   slices.Clone(s.RepartitionSinkTopics),
			RepartitionSources: topicInfos(s.RepartitionSourceTopics),
		}
		for _, g := range s.CopartitionGroups {
			st.Copartitions = append(st.Copartitions, copartitionGroup{slices.Clone(g.SourceTopics), slices.Clone(g.SourceTopicRegex), slices.Clone(g.RepartitionSourceTopics)})
		}
		t.Subs = append(t.Subs, st)
	}
	sort.Slice(t.Subs, func(i, j int) bool { return t.Subs[i].ID < t.Subs[j].ID })
	return t
}

// checkTopology guards what the configuration relies on: a non-empty
// message is STREAMS_INVALID_TOPOLOGY's.
func checkTopology(t *topology) string {
	internal := map[string]bool{}
	for i, s := range t.Subs {
		if i > 0 && t.Subs[i-1].ID == s.ID {
			return fmt.Sprintf("Subtopology %s is defined more than once.", s.ID)
		}
		for _, r := range s.RepartitionSources {
			if r.Partitions < 0 {
				return fmt.Sprintf("Repartition topic %s has a negative partition count %d.", r.Name, r.Partitions)
			}
			internal[r.Name] = true
		}
		for _, g := range s.Copartitions {
			for _, i := range g.Sources {
				if int(i) < 0 || int(i) >= len(s.Sources) {
					return fmt.Sprintf("Copartition group of subtopology %s refers to source topic index %d, which does not exist.", s.ID, i)
				}
			}
			for _, i := range g.Repartitions {
				if int(i) < 0 || int(i) >= len(s.RepartitionSources) {
					return fmt.Sprintf("Copartition group of subtopology %s refers to repartition source topic index %d, which does not exist.", s.ID, i)
				}
			}
		}
	}
	return ""
}

// equal compares two topologies as Kafka's StreamsTopology.equals does.
func (t *topology) equal(o *topology) bool {
	a, _ := json.Marshal(t)
	b, _ := json.Marshal(o)
	return bytes.Equal(a, b)
}

// configured is the topology configured against the cluster's topics.
type configured struct {
	// tasks is each subtopology's number of tasks; nil when the topology
	// cannot be configured (source topics missing, partitions mismatched).
	tasks map[string]int32
	// partitions is every internal topic's decided partition count.
	partitions map[string]int32
	// status and detail say why the topology is not ready; ready when
	// status < 0.
	status int8
	detail string
	// invalid is a STREAMS_INVALID_TOPOLOGY message (the partition counts
	// of repartition topics cannot be decided).
	invalid string
	create  []InternalTopic
	hash    uint64
}

func (c *configured) ready() bool { return c != nil && c.status < 0 && c.invalid == "" }

// summarize names up to three topics as Kafka's messages do.
func summarize(topics []string) string {
	if len(topics) == 0 {
		return "<none>"
	}
	s := strings.Join(topics[:min(3, len(topics))], ", ")
	if len(topics) > 3 {
		s += fmt.Sprintf(" and %d additional topics", len(topics)-3)
	}
	return s
}

// configure decides the internal topics' partition counts and the tasks,
// as Kafka's InternalTopicManager does.
func (t *topology) configure(topics Topics) *configured {
	c := &configured{status: -1, hash: t.hash(topics)}
	count := func(name string) (int32, bool) {
		if tp, ok := topics.ByName(name); ok {
			return tp.Partitions, true
		}
		n, ok := c.partitions[name]
		return n, ok
	}
	var missing []string
	for _, s := range t.Subs {
		for _, src := range s.Sources {
			if _, ok := topics.ByName(src); !ok && !slices.Contains(missing, src) {
				missing = append(missing, src)
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		c.status, c.detail = StatusMissingSourceTopics, "Source topics "+summarize(missing)+" are missing."
		return c
	}
	c.partitions = map[string]int32{}
	if msg := t.repartitionCounts(c.partitions, count); msg != "" {
		c.invalid = msg
		return c
	}
	if msg, code := t.copartition(c.partitions, count); msg != "" {
		if code < 0 {
			c.invalid = msg
		} else {
			c.status, c.detail = code, msg
		}
		return c
	}
	// A subtopology has as many tasks as its most partitioned input, and
	// its changelogs as many partitions.
	c.tasks = map[string]int32{}
	for _, s := range t.Subs {
		if len(s.Sources)+len(s.RepartitionSources) == 0 {
			c.invalid = "No source topics found for subtopology " + s.ID
			c.tasks = nil
			return c
		}
		var n int32
		for _, src := range s.Sources {
			p, _ := count(src)
			n = max(n, p)
		}
		for _, r := range s.RepartitionSources {
			p, _ := count(r.Name)
			n = max(n, p)
		}
		c.tasks[s.ID] = n
		for _, cl := range s.Changelogs {
			c.partitions[cl.Name] = n
		}
	}
	// The internal topics to create, or those existing with another count.
	want := map[string]InternalTopic{}
	for _, s := range t.Subs {
		for _, group := range [][]topicInfo{s.RepartitionSources, s.Changelogs} {
			for _, ti := range group {
				n := ti.Partitions
				if n == 0 {
					n = c.partitions[ti.Name]
				}
				it := InternalTopic{Name: ti.Name, Partitions: n, ReplicationFactor: ti.Replication, Configs: map[string]string{}}
				if it.ReplicationFactor == 0 {
					it.ReplicationFactor = -1
				}
				for _, kv := range ti.Configs {
					it.Configs[kv.Key] = kv.Value
				}
				want[ti.Name] = it
			}
		}
	}
	for _, name := range sortedKeys(want) {
		it := want[name]
		if tp, ok := topics.ByName(name); ok {
			if tp.Partitions != it.Partitions {
				c.status = StatusIncorrectlyPartitionedTopics
				c.detail = fmt.Sprintf("Existing topic %s has different number of partitions: expected %d, found %d", name, it.Partitions, tp.Partitions)
				c.tasks, c.create = nil, nil
				return c
			}
			continue
		}
		c.create = append(c.create, it)
	}
	if len(c.create) > 0 {
		names := make([]string, len(c.create))
		for i, it := range c.create {
			names[i] = it.Name
		}
		c.status, c.detail = StatusMissingInternalTopics, "Internal topics are missing: "+summarize(names)
	}
	return c
}

// repartitionCounts decides the partition count of every repartition
// topic without a fixed count: the most partitions among the inputs of the
// subtopologies writing to it.
func (t *topology) repartitionCounts(out map[string]int32, count func(string) (int32, bool)) string {
	for _, s := range t.Subs {
		for _, r := range s.RepartitionSources {
			if r.Partitions != 0 {
				out[r.Name] = r.Partitions
			}
		}
	}
	for {
		needed, progress := false, false
		for _, s := range t.Subs {
			for _, sink := range s.RepartitionSinks {
				if _, ok := out[sink]; ok {
					continue
				}
				var n int32
				for _, r := range s.RepartitionSources {
					n = max(n, out[r.Name])
				}
				for _, src := range s.Sources {
					if p, ok := count(src); ok {
						n = max(n, p)
					}
				}
				if n == 0 {
					needed = true
					continue
				}
				out[sink] = n
				progress = true
			}
		}
		if !needed {
			break
		}
		if !progress {
			return "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."
		}
	}
	for _, s := range t.Subs {
		for _, r := range s.RepartitionSources {
			if _, ok := out[r.Name]; !ok {
				return "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic."
			}
		}
	}
	return ""
}

// copartition makes every copartition group's topics agree: external
// topics must already, flexible repartition topics take their count.
// code is the status, or -1 for an invalid topology.
func (t *topology) copartition(out map[string]int32, count func(string) (int32, bool)) (string, int8) {
	fixed, flexible := map[string]bool{}, map[string]bool{}
	for _, s := range t.Subs {
		for _, r := range s.RepartitionSources {
			if r.Partitions != 0 {
				fixed[r.Name] = true
			} else {
				flexible[r.Name] = true
			}
		}
	}
	for _, s := range t.Subs {
		for _, g := range s.Copartitions {
			var names []string
			for _, i := range g.Sources {
				names = append(names, s.Sources[i])
			}
			for _, i := range g.Repartitions {
				names = append(names, s.RepartitionSources[i].Name)
			}
			if len(names) == 0 {
				continue
			}
			slices.Sort(names)
			names = slices.Compact(names)
			repart, external := map[string]int32{}, map[string]int32{}
			for _, n := range names {
				p, _ := count(n)
				if fixed[n] || flexible[n] {
					repart[n] = p
				} else {
					external[n] = p
				}
			}
			var use int32
			switch {
			case len(external) == 0 && len(fixed) > 0:
				// Kafka compares the topology's fixed repartition topics.
				first := int32(-1)
				for _, n := range sortedKeys(fixed) {
					p, _ := count(n)
					if first < 0 {
						first = p
					} else if p != first {
						return "Following topics do not have the same number of partitions: [" + mapString(repart) + "]", StatusIncorrectlyPartitionedTopics
					}
				}
				use = first
			case len(external) == 0:
				for _, p := range repart {
					use = max(use, p)
				}
				if use == 0 {
					return fmt.Sprintf("All topics in the copartition group had undefined partition number: %v", sortedKeys(repart)), -1
				}
			default:
				use = -1
				for _, n := range sortedKeys(external) {
					if use < 0 {
						use = external[n]
					} else if external[n] != use {
						return "Following topics do not have the same number of partitions: [" + mapString(external) + "]", StatusIncorrectlyPartitionedTopics
					}
				}
			}
			for _, n := range sortedKeys(repart) {
				if fixed[n] && repart[n] != use {
					return fmt.Sprintf("Number of partitions [%d] of repartition topic [%s] doesn't match number of partitions [%d] of the source topic.", repart[n], n, use), StatusIncorrectlyPartitionedTopics
				}
				out[n] = use
			}
		}
	}
	return "", 0
}

// mapString prints a map as Java prints a TreeMap's contents.
func mapString(m map[string]int32) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// topicNames is every topic the topology reads or writes: source topics
// and internal topics, sorted.
func (t *topology) topicNames() []string {
	set := map[string]bool{}
	for _, s := range t.Subs {
		for _, n := range s.Sources {
			set[n] = true
		}
		for _, ti := range s.RepartitionSources {
			set[ti.Name] = true
		}
		for _, ti := range s.Changelogs {
			set[ti.Name] = true
		}
		for _, n := range s.RepartitionSinks {
			set[n] = true
		}
	}
	return sortedKeys(set)
}

// hash digests the metadata of the topology's topics: a change (a topic
// created, deleted, given partitions) bumps the group epoch.
func (t *topology) hash(topics Topics) uint64 {
	h := fnv.New64a()
	for _, n := range t.topicNames() {
		h.Write([]byte(n))
		if tp, ok := topics.ByName(n); ok {
			h.Write(tp.ID[:])
			fmt.Fprintf(h, "/%d", tp.Partitions)
		}
		h.Write([]byte{0})
	}
	return h.Sum64()
}
