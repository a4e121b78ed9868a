package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/topicconfig"
	"github.com/kaas-project/kaas/storage/topicname"
)

// KafkaTopicGVR is the KafkaTopic custom resource.
var KafkaTopicGVR = schema.GroupVersionResource{Group: "kaas.dev", Version: "v1alpha1", Resource: "kafkatopics"}

// ErrTopicExists is returned by CreateTopic when the object exists.
var ErrTopicExists = errors.New("topic already exists")

// ErrTopicNotFound is returned when no KafkaTopic names the topic.
var ErrTopicNotFound = errors.New("topic not found")

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// ObjectName maps a Kafka topic name to a KafkaTopic object name. Kafka
// allows upper case and '_', Kubernetes does not: such names are lowered,
// '_' becomes '-', and a hash suffix keeps them unique; spec.topicName then
// carries the real name.
func ObjectName(topic string) string {
	if dns1123.MatchString(topic) && len(topic) <= 253 {
		return topic
	}
	s := strings.Trim(strings.NewReplacer("_", "-").Replace(strings.ToLower(topic)), "-.")
	if len(s) > 200 {
		s = s[:200]
	}
	sum := sha256.Sum256([]byte(topic))
	if s == "" {
		return "t-" + hex.EncodeToString(sum[:6])
	}
	return s + "-" + hex.EncodeToString(sum[:6])
}

// TopicFromObject reads a KafkaTopic into the balancer's TopicSpec. It
// returns the Kafka topic name, or an error for an invalid object.
func TopicFromObject(u *unstructured.Unstructured) (string, balancer.TopicSpec, error) {
	name, _, _ := unstructured.NestedString(u.Object, "spec", "topicName")
	if name == "" {
		name = u.GetName()
	}
	if err := topicname.Validate(name); err != nil {
		return name, balancer.TopicSpec{}, err
	}
	parts, found, err := unstructured.NestedInt64(u.Object, "spec", "partitions")
	if err != nil || !found || parts < 1 {
		return name, balancer.TopicSpec{}, fmt.Errorf("KafkaTopic %s: spec.partitions must be a positive integer", u.GetName())
	}
	cfg, _, err := unstructured.NestedStringMap(u.Object, "spec", "config")
	if err != nil {
		return name, balancer.TopicSpec{}, fmt.Errorf("KafkaTopic %s: spec.config: %w", u.GetName(), err)
	}
	if err := topicconfig.Validate(cfg); err != nil {
		return name, balancer.TopicSpec{}, fmt.Errorf("KafkaTopic %s: %w", u.GetName(), err)
	}
	if cfg == nil {
		cfg = map[string]string{}
	}
	pins, err := pinsFromObject(u)
	if err != nil {
		return name, balancer.TopicSpec{}, fmt.Errorf("KafkaTopic %s: %w", u.GetName(), err)
	}
	id, err := TopicIDOf(u)
	if err != nil {
		return name, balancer.TopicSpec{}, fmt.Errorf("KafkaTopic %s: %w", u.GetName(), err)
	}
	return name, balancer.TopicSpec{ID: id, Partitions: int(parts), Config: cfg, Pins: pins}, nil
}

// TopicIDOf returns a KafkaTopic's topic id: spec.topicID when set (a
// topic restored from a backup keeps the id its data, offsets and share
// state were written under), else the object's uid.
func TopicIDOf(u *unstructured.Unstructured) (string, error) {
	id, found, err := unstructured.NestedString(u.Object, "spec", "topicID")
	if err != nil {
		return "", fmt.Errorf("spec.topicID: %w", err)
	}
	if !found {
		return string(u.GetUID()), nil
	}
	if err := ValidTopicID(id); err != nil {
		return "", fmt.Errorf("spec.topicID: %w", err)
	}
	return id, nil
}

// ValidTopicID checks that id is a topic id as kaas writes them (the
// partition directories are named with it): a UUID in lower-case
// canonical text form, not the zero UUID, which Kafka reserves for "no
// id".
func ValidTopicID(id string) error {
	if len(id) != 36 {
		return fmt.Errorf("%q is not a UUID (36 characters, lower case)", id)
	}
	zero := true
	for i := range len(id) {
		c := id[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return fmt.Errorf("%q is not a UUID (36 characters, lower case)", id)
			}
		case '0' <= c && c <= '9' || 'a' <= c && c <= 'f':
			zero = zero && c == '0'
		default:
			return fmt.Errorf("%q is not a UUID (36 characters, lower case)", id)
		}
	}
	if zero {
		return errors.New("the zero UUID is not a topic id")
	}
	return nil
}

// pinsFromObject reads spec.pins ([{partition, broker}]), sorted by
// partition. Pins of partitions the topic does not have yet are kept (the
// balancer applies them once it grows).
func pinsFromObject(u *unstructured.Unstructured) ([]assignment.Pin, error) {
	raw, found, err := unstructured.NestedSlice(u.Object, "spec", "pins")
	if err != nil {
		return nil, fmt.Errorf("spec.pins: %w", err)
	}
	if !found {
		return nil, nil
	}
	seen := map[int64]bool{}
	var out []assignment.Pin
	for i, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.pins[%d] is not an object", i)
		}
		p, okP, _ := unstructured.NestedInt64(m, "partition")
		b, okB, _ := unstructured.NestedInt64(m, "broker")
		switch {
		case !okP || !okB:
			return nil, fmt.Errorf("spec.pins[%d] needs integer partition and broker", i)
		case p < 0 || p >= balancer.MaxPartitionsPerTopic || b < 0 || b > math.MaxInt32:
			return nil, fmt.Errorf("spec.pins[%d]: partition %d, broker %d out of range", i, p, b)
		case seen[p]:
			return nil, fmt.Errorf("spec.pins pins partition %d twice", p)
		}
		seen[p] = true
		out = append(out, assignment.Pin{Partition: int32(p), Broker: int32(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out, nil
}

// pinsObject renders pins (partition -> broker) as spec.pins.
func pinsObject(pins map[int32]int32) []any {
	parts := make([]int32, 0, len(pins))
	for p := range pins {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		out = append(out, map[string]any{"partition": int64(p), "broker": int64(pins[p])})
	}
	return out
}

// WatchTopics runs an informer on KafkaTopic objects in ns and reports the
// full valid topic set after every change (invalid objects are logged and
// left out). It returns when ctx ends.
func WatchTopics(ctx context.Context, dyn dynamic.Interface, ns string, report func(map[string]balancer.TopicSpec), log zerolog.Logger) {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 30*time.Second, ns, nil)
	inf := factory.ForResource(KafkaTopicGVR).Informer()
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: poke, UpdateFunc: func(_, n any) { poke(n) }, DeleteFunc: poke})
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	poke(nil)
	bad := map[string]string{}
	status := newStatusWrites(ctx, dyn, log)
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case f := <-status.failed:
			status.forget(f)
			continue
		}
		var objs []*unstructured.Unstructured
		seen := map[string]bool{}
		for _, obj := range inf.GetStore().List() {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				objs = append(objs, u)
				seen[u.GetName()] = true
			}
		}
		set := ResolveTopics(objs)
		byName := make(map[string]*unstructured.Unstructured, len(objs))
		for _, u := range objs {
			byName[u.GetName()] = u
			if r, ok := set.Refused[u.GetName()]; ok && bad[u.GetName()] != r.Error() {
				log.Error().Err(r).Str("kafkatopic", u.GetName()).Msg("KafkaTopic ignored")
				bad[u.GetName()] = r.Error()
				status.write(u, false, r.Reason, r.Error())
			}
		}
		for name, obj := range set.Objects {
			delete(bad, obj)
			if u := byName[obj]; statusStale(u, set.Topics[name]) {
				status.write(u, true, "Accepted", fmt.Sprintf("topic %s is in the controller's assignment", name))
			}
		}
		for n := range bad {
			if !seen[n] {
				delete(bad, n)
			}
		}
		status.keepOnly(seen)
		report(set.Topics)
	}
}

// Refusal is why a KafkaTopic is left out of the topic set: Reason is its
// status condition's reason (Invalid, DuplicateTopicName,
// DuplicateTopicID).
type Refusal struct {
	Reason string
	Err    error
}

func (r Refusal) Error() string { return r.Err.Error() }

// TopicSet is the topics the listed KafkaTopics define.
type TopicSet struct {
	// Topics are the accepted topics by name.
	Topics map[string]balancer.TopicSpec
	// Objects name each accepted topic's KafkaTopic.
	Objects map[string]string
	// Refused maps the names of the objects left out to why.
	Refused map[string]Refusal
}

// ResolveTopics turns the listed KafkaTopics into the topic set, by topic
// name. An invalid object is refused. So is a second object for a topic
// name or a topic id already taken: the oldest object keeps it (creation
// time, then object name), whatever order the list comes in, so the set
// does not flip between two incarnations of a topic and the controller
// never takes one's directories for strays of the other.
func ResolveTopics(objs []*unstructured.Unstructured) TopicSet {
	objs = slices.Clone(objs)
	slices.SortFunc(objs, func(a, b *unstructured.Unstructured) int {
		if c := a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	set := TopicSet{Topics: map[string]balancer.TopicSpec{}, Objects: map[string]string{}, Refused: map[string]Refusal{}}
	idOwner := map[string]string{}
	for _, u := range objs {
		name, spec, err := TopicFromObject(u)
		switch {
		case err != nil:
			set.Refused[u.GetName()] = Refusal{"Invalid", err}
		case set.Objects[name] != "":
			set.Refused[u.GetName()] = Refusal{"DuplicateTopicName", fmt.Errorf("KafkaTopic %s: topic %s is already the KafkaTopic %s's", u.GetName(), name, set.Objects[name])}
		case spec.ID != "" && idOwner[spec.ID] != "":
			set.Refused[u.GetName()] = Refusal{"DuplicateTopicID", fmt.Errorf("KafkaTopic %s: topic id %s is already the KafkaTopic %s's", u.GetName(), spec.ID, idOwner[spec.ID])}
		default:
			set.Objects[name], set.Topics[name] = u.GetName(), spec
			if spec.ID != "" {
				idOwner[spec.ID] = u.GetName()
			}
		}
	}
	return set
}

// statusWrites issues KafkaTopic status writes at most once per object
// version. Every informer event re-lists all KafkaTopics, and an object
// whose write is still queued (client-go's rate limiter) or not yet seen
// back still looks stale: without this a burst of n creations writes
// O(n²) statuses, and the topic creations queue behind them.
type statusWrites struct {
	ctx    context.Context
	dyn    dynamic.Interface
	log    zerolog.Logger
	issued map[string]string // object name -> resourceVersion written from
	failed chan statusFailure
}

// statusFailure names a write that failed for a reason other than a
// conflict (a newer version is on its way then): its version may be
// written again at the next event or the informer's resync.
type statusFailure struct{ name, version string }

func newStatusWrites(ctx context.Context, dyn dynamic.Interface, log zerolog.Logger) *statusWrites {
	return &statusWrites{ctx: ctx, dyn: dyn, log: log, issued: map[string]string{}, failed: make(chan statusFailure, 64)}
}

// write writes u's status in the background unless a write from u's
// version was already issued.
func (w *statusWrites) write(u *unstructured.Unstructured, ready bool, reason, msg string) {
	name, version := u.GetName(), u.GetResourceVersion()
	if v, ok := w.issued[name]; ok && v == version {
		return
	}
	w.issued[name] = version
	go func() {
		err := setStatus(w.ctx, w.dyn, u, ready, reason, msg)
		switch {
		case err == nil, apierrors.IsConflict(err), apierrors.IsNotFound(err), w.ctx.Err() != nil:
		default:
			w.log.Warn().Err(err).Str("kafkatopic", name).Msg("update KafkaTopic status")
			select {
			case w.failed <- statusFailure{name, version}:
			case <-w.ctx.Done():
			}
		}
	}()
}

// forget lets a failed write's version be written again.
func (w *statusWrites) forget(f statusFailure) {
	if v, ok := w.issued[f.name]; ok && v == f.version {
		delete(w.issued, f.name)
	}
}

// keepOnly drops what it knows of objects no longer listed.
func (w *statusWrites) keepOnly(names map[string]bool) {
	for n := range w.issued {
		if !names[n] {
			delete(w.issued, n)
		}
	}
}

// Topics creates, grows, reconfigures and deletes KafkaTopic objects: what
// CreateTopics, CreatePartitions, AlterConfigs and DeleteTopics do in
// cluster mode (so kafka-topics.sh and GitOps agree).
type Topics struct {
	Dyn       dynamic.Interface
	Namespace string
}

func (t *Topics) res() dynamic.ResourceInterface {
	return t.Dyn.Resource(KafkaTopicGVR).Namespace(t.Namespace)
}

// Create creates a KafkaTopic and returns its uid (the topic id). pins
// (partition -> broker, may be nil) become spec.pins.
func (t *Topics) Create(ctx context.Context, name string, partitions int32, cfg map[string]string, pins map[int32]int32) (string, error) {
	return t.CreateWithID(ctx, name, "", partitions, cfg, pins)
}

// CreateWithID is Create with spec.topicID set to id (none when empty):
// how a restore gives a topic back the id its data was written under. It
// returns the topic id.
func (t *Topics) CreateWithID(ctx context.Context, name, id string, partitions int32, cfg map[string]string, pins map[int32]int32) (string, error) {
	cfgObj := map[string]any{}
	for k, v := range cfg {
		cfgObj[k] = v
	}
	spec := map[string]any{"topicName": name, "partitions": int64(partitions), "config": cfgObj}
	if len(pins) > 0 {
		spec["pins"] = pinsObject(pins)
	}
	if id != "" {
		spec["topicID"] = id
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kaas.dev/v1alpha1",
		"kind":       "KafkaTopic",
		"metadata":   map[string]any{"name": ObjectName(name), "namespace": t.Namespace},
		"spec":       spec,
	}}
	created, err := t.res().Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	if err != nil {
		return "", fmt.Errorf("create KafkaTopic %s: %w", name, err)
	}
	return TopicIDOf(created)
}

// objectFor returns the KafkaTopic that holds topic name: the one the
// topic watch takes for it (ResolveTopics). Its object name is usually
// ObjectName(name), but a KafkaTopic written by hand may name the topic in
// spec.topicName under any object name, and the object called name may
// hold another topic.
func (t *Topics) objectFor(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	list, err := t.res().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list KafkaTopics: %w", err)
	}
	objs := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	set := ResolveTopics(objs)
	obj, ok := set.Objects[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	}
	for _, u := range objs {
		if u.GetName() == obj {
			return u, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrTopicNotFound, name)
}

// Delete deletes the KafkaTopic of a topic.
func (t *Topics) Delete(ctx context.Context, name string) error {
	u, err := t.objectFor(ctx, name)
	if err != nil {
		return err
	}
	uid := u.GetUID()
	err = t.res().Delete(ctx, u.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	}
	if err != nil {
		return fmt.Errorf("delete KafkaTopic %s: %w", name, err)
	}
	return nil
}

// SetPins changes a KafkaTopic's spec.pins: each entry of changes pins a
// partition to a broker, or drops its pin when the broker is -1. It reads,
// changes and updates the object, again on a write conflict.
func (t *Topics) SetPins(ctx context.Context, name string, changes map[int32]int32) error {
	for {
		cur, err := t.objectFor(ctx, name)
		if err != nil {
			return err
		}
		have, err := pinsFromObject(cur)
		if err != nil {
			return fmt.Errorf("KafkaTopic %s: %w", name, err)
		}
		pins := make(map[int32]int32, len(have)+len(changes))
		for _, p := range have {
			pins[p.Partition] = p.Broker
		}
		for p, b := range changes {
			if b < 0 {
				delete(pins, p)
			} else {
				pins[p] = b
			}
		}
		if len(pins) == 0 {
			unstructured.RemoveNestedField(cur.Object, "spec", "pins")
		} else if err := unstructured.SetNestedSlice(cur.Object, pinsObject(pins), "spec", "pins"); err != nil {
			return err
		}
		_, err = t.res().Update(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return fmt.Errorf("update KafkaTopic %s: %w", name, err)
		}
		return nil
	}
}

// Patch merges spec fields (partitions and/or config) into a KafkaTopic.
func (t *Topics) Patch(ctx context.Context, name string, partitions int32, cfg map[string]string, replaceConfig bool) error {
	if replaceConfig {
		// A JSON merge patch cannot drop keys it does not name: read, then replace.
		cur, err := t.objectFor(ctx, name)
		if err != nil {
			return err
		}
		obj := map[string]any{}
		for k, v := range cfg {
			obj[k] = v
		}
		if err := unstructured.SetNestedField(cur.Object, obj, "spec", "config"); err != nil {
			return err
		}
		if partitions > 0 {
			_ = unstructured.SetNestedField(cur.Object, int64(partitions), "spec", "partitions")
		}
		if _, err := t.res().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update KafkaTopic %s: %w", name, err)
		}
		return nil
	}
	cur, err := t.objectFor(ctx, name)
	if err != nil {
		return err
	}
	// The uid makes the patch fail rather than change an object made
	// again under that name since the list.
	body := fmt.Sprintf(`{"metadata":{"uid":%q},"spec":{"partitions":%d}}`, cur.GetUID(), partitions)
	if _, err := t.res().Patch(ctx, cur.GetName(), types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: %s", ErrTopicNotFound, name)
		}
		return fmt.Errorf("patch KafkaTopic %s: %w", name, err)
	}
	return nil
}

// statusStale reports whether a valid KafkaTopic's status does not yet say
// it was accepted with its current spec.
func statusStale(u *unstructured.Unstructured, spec balancer.TopicSpec) bool {
	id, _, _ := unstructured.NestedString(u.Object, "status", "topicID")
	parts, _, _ := unstructured.NestedInt64(u.Object, "status", "partitions")
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return id != spec.ID || parts != int64(spec.Partitions) || gen != u.GetGeneration()
}

// setStatus writes a KafkaTopic's status: topic id, partitions, observed
// generation and a Ready condition.
func setStatus(ctx context.Context, dyn dynamic.Interface, u *unstructured.Unstructured, ready bool, reason, msg string) error {
	u = u.DeepCopy()
	status := "False"
	if ready {
		status = "True"
	}
	parts, _, _ := unstructured.NestedInt64(u.Object, "spec", "partitions")
	st := map[string]any{
		"partitions":         parts,
		"observedGeneration": u.GetGeneration(),
		"conditions": []any{map[string]any{
			"type": "Ready", "status": status, "reason": reason, "message": msg,
			"observedGeneration": u.GetGeneration(),
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}},
	}
	if id, err := TopicIDOf(u); err == nil {
		st["topicID"] = id
	}
	if !ready {
		delete(st, "partitions")
	}
	u.Object["status"] = st
	_, err := dyn.Resource(KafkaTopicGVR).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update KafkaTopic %s status: %w", u.GetName(), err)
	}
	return nil
}
