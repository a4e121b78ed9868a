package kafkacli

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestStreamsInternalTopicOf(t *testing.T) {
	for _, c := range []struct {
		topic, group string
		want         bool
	}{
		{"app-counts-changelog", "app", true},
		{"app-KSTREAM-AGGREGATE-0000000003-repartition", "app", true},
		{"app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic", "app", true},
		{"app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000011-topic", "app", true},
		{"app-x-subscription-response-topic", "app", true},
		{"app-counts-changelog", "ap", false}, // another application's
		{"application-counts-changelog", "app", false},
		{"app-words", "app", false},              // not an internal name
		{"app-counts-changelog-2", "app", false}, // suffix not at the end
		{"app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-x-topic", "app", false},
	} {
		if got := streamsInternalTopicOf(c.topic, c.group); got != c.want {
			t.Errorf("streamsInternalTopicOf(%q, %q) = %v, want %v", c.topic, c.group, got, c.want)
		}
	}
}

func TestGroupsParseStates(t *testing.T) {
	got, err := groupsParseStates("stable, NOTREADY,empty", streamsStates)
	if err != nil || !reflect.DeepEqual(got, []string{"Stable", "NotReady", "Empty"}) {
		t.Errorf("streams states: %q %v", got, err)
	}
	if _, err := groupsParseStates("Stable,Assigning", shareStates); err == nil || err.Error() != "--state: invalid state list 'Stable,Assigning'. Valid states are: Empty, Stable, Dead" {
		t.Errorf("a state share groups do not have: %v", err)
	}
	if got, err := groupsParseStates("", shareStates); err != nil || got != nil {
		t.Errorf("no filter: %q %v", got, err)
	}
}

func TestStreamsTasks(t *testing.T) {
	a := kmsg.StreamsAssignment{
		ActiveTasks:  []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{2, 0}}, {SubtopologyID: "1", Partitions: []int32{1}}},
		StandbyTasks: []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1}}},
	}
	if got, want := streamsTasks(a, ""), "ACTIVE: 0:[0,2]; 1:[1]; STANDBY: 0:[1]; "; got != want {
		t.Errorf("streamsTasks = %q, want %q", got, want)
	}
	if got := streamsTasks(kmsg.StreamsAssignment{}, "TARGET-"); got != "" {
		t.Errorf("no tasks: %q", got)
	}
	if got, want := streamsTasks(kmsg.StreamsAssignment{WarmupTasks: a.StandbyTasks}, "TARGET-"), "TARGET-WARMUP: 0:[1]; "; got != want {
		t.Errorf("target warmup: %q, want %q", got, want)
	}
}
