package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kaas-project/kaas/actors/cluster"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/claim"
	"github.com/kaas-project/kaas/storage/disklog"
	"github.com/kaas-project/kaas/storage/groupstore"
	"github.com/kaas-project/kaas/storage/sharestate"
	"github.com/kaas-project/kaas/storage/txnlog"
)

const restoreUsage = `usage:
  kaas restore --data-dir DIR [--namespace NS] [--lease-name NAME] [--dry-run]
      make a namespace serve a shared volume restored from a backup, before
      its brokers start: every topic of DIR/__cluster/assignment.json gets a
      KafkaTopic with the topic id its data was written under (spec.topicID),
      and the controller Lease's leaseTransitions is raised to the highest
      controller epoch on the volume. Refused while a controller holds the
      Lease; changes nothing when a KafkaTopic names a topic with another id.
      Needs KUBECONFIG, or the in-cluster config in a pod.
`

// runRestore implements "kaas restore".
func runRestore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kaas restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, restoreUsage)
		fs.PrintDefaults()
	}
	dataDir := fs.String("data-dir", "", "the restored shared volume's data directory (as the brokers' --data-dir)")
	ns := fs.String("namespace", os.Getenv("MY_POD_NAMESPACE"), "namespace the brokers run in (default $MY_POD_NAMESPACE)")
	leaseName := fs.String("lease-name", "kaas-controller", "name of the controller Lease (as the brokers' --lease-name)")
	dryRun := fs.Bool("dry-run", false, "print what would be done, change nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("restore: unexpected argument %q", fs.Arg(0))
	case *dataDir == "":
		return errors.New("restore: --data-dir is required")
	case *ns == "":
		return errors.New("restore: --namespace is required (or MY_POD_NAMESPACE)")
	}
	vol, err := readVolume(*dataDir)
	if err != nil {
		return err
	}
	rc, err := kubeConfig()
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("restore: kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("restore: dynamic client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return restore(ctx, restoreTarget{kube: kube, dyn: dyn, ns: *ns, lease: *leaseName}, vol, *dryRun, time.Now(), stdout)
}

// volume is what a restore reads of the shared volume.
type volume struct {
	file *assignment.Assignment
	// dirs are the partition directories (disklog.ParseDirName).
	dirs []storage.PartitionID
	// epoch is the highest controller epoch recorded: the file's, or a
	// coordinator claim's.
	epoch int64
	// unreadable lists claims that could not be read.
	unreadable []string
}

// readVolume reads the assignment file, the partition directories and
// every coordinator claim (groups, transactional ids, share-partitions).
func readVolume(dataDir string) (*volume, error) {
	file, err := assignment.ReadFile(assignment.Path(dataDir))
	if err != nil {
		return nil, fmt.Errorf("restore: %w (the assignment file names each topic's id: without it nothing says which directories are whose)", err)
	}
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	v := &volume{file: file, epoch: file.ControllerEpoch}
	for _, e := range ents {
		if id, ok := disklog.ParseDirName(e.Name()); ok && e.IsDir() {
			v.dirs = append(v.dirs, id)
		}
	}
	for _, sub := range []string{groupstore.Dir, txnlog.Dir, sharestate.Dir} {
		root := filepath.Join(dataDir, sub)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && path == root {
				return fs.SkipAll
			}
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() || (name != "claim" && !strings.HasSuffix(name, ".claim")) {
				return nil
			}
			p, ok, err := claim.File{Dir: filepath.Dir(path), Name: name}.Read()
			if err != nil {
				v.unreadable = append(v.unreadable, path)
				return nil
			}
			if ok {
				v.epoch = max(v.epoch, p.Epoch)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("restore: read claims under %s: %w", root, err)
		}
	}
	return v, nil
}

// restorePlan is what a restore does with the KafkaTopics it finds.
type restorePlan struct {
	// create are the file's topics no KafkaTopic names: created with the
	// file's id, partitions, config and pins.
	create []string
	// kept are the file's topics whose KafkaTopic already has the file's id.
	kept []string
	// conflicts say why a topic cannot be given its id; any makes the
	// restore change nothing.
	conflicts []string
	// strays are directories of no topic of the file: the controller
	// removes them after --stray-grace.
	strays []storage.PartitionID
}

// planRestore compares the file's topics with the KafkaTopics listed.
func planRestore(file *assignment.Assignment, objs []*unstructured.Unstructured, dirs []storage.PartitionID) restorePlan {
	set := cluster.ResolveTopics(objs)
	live, refused := set.Topics, set.Refused
	byObject := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		byObject[u.GetName()] = u
	}
	idOwner := map[string]string{}
	for name, spec := range live {
		idOwner[spec.ID] = name
	}
	var p restorePlan
	for _, name := range slices.Sorted(maps.Keys(file.Topics)) {
		id := file.Topics[name].ID
		spec, ok := live[name]
		obj := cluster.ObjectName(name)
		switch {
		case ok && spec.ID == id:
			p.kept = append(p.kept, name)
		case ok:
			p.conflicts = append(p.conflicts, fmt.Sprintf("topic %s: a KafkaTopic names it with id %s, its data has id %s (delete that KafkaTopic while the brokers are down)", name, spec.ID, id))
		case idOwner[id] != "":
			p.conflicts = append(p.conflicts, fmt.Sprintf("topic %s: its id %s is topic %s's", name, id, idOwner[id]))
		case byObject[obj] != nil:
			why := "it names another topic"
			if r, ok := refused[obj]; ok {
				why = r.Error()
			}
			p.conflicts = append(p.conflicts, fmt.Sprintf("topic %s: the KafkaTopic %s is in the way: %s", name, obj, why))
		default:
			p.create = append(p.create, name)
		}
	}
	// By topic id: a directory holds the first characters of a long name.
	ids := map[string]bool{}
	for _, t := range file.Topics {
		ids[t.ID] = true
	}
	for _, d := range dirs {
		if !ids[d.TopicID] && !routing.IsInternal(d.Topic) {
			p.strays = append(p.strays, d)
		}
	}
	return p
}

// restoreTarget is the namespace a restore makes serve the volume.
type restoreTarget struct {
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	ns    string
	lease string
}

func restore(ctx context.Context, tgt restoreTarget, vol *volume, dryRun bool, now time.Time, out io.Writer) error {
	// A running controller would keep writing at its epoch, and its
	// brokers would take the restored directories for strays.
	if err := cluster.LeaseFree(ctx, tgt.kube, tgt.ns, tgt.lease, now); err != nil {
		if errors.Is(err, cluster.ErrLeaseHeld) {
			return fmt.Errorf("restore: %w: stop the brokers first (scale the StatefulSet to 0)", err)
		}
		return fmt.Errorf("restore: %w", err)
	}
	list, err := tgt.dyn.Resource(cluster.KafkaTopicGVR).Namespace(tgt.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("restore: list KafkaTopics: %w", err)
	}
	objs := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	plan := planRestore(vol.file, objs, vol.dirs)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tTOPIC ID\tPARTITIONS\tKAFKATOPIC")
	for _, name := range plan.kept {
		t := vol.file.Topics[name]
		fmt.Fprintf(w, "%s\t%s\t%d\tkept\n", name, t.ID, len(t.Partitions))
	}
	for _, name := range plan.create {
		t := vol.file.Topics[name]
		what := "created"
		if dryRun {
			what = "to create"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", name, t.ID, len(t.Partitions), what)
	}
	_ = w.Flush()
	for _, d := range plan.strays {
		fmt.Fprintf(out, "not restored: %s-%d-%s belongs to no topic of the assignment file (the controller removes it after --stray-grace)\n", d.Topic, d.Partition, d.TopicID)
	}
	for _, path := range vol.unreadable {
		fmt.Fprintf(out, "warning: claim %s is unreadable; its epoch is not counted\n", path)
	}
	if len(plan.conflicts) > 0 {
		return fmt.Errorf("restore: nothing changed:\n  %s", strings.Join(plan.conflicts, "\n  "))
	}
	if dryRun {
		fmt.Fprintf(out, "lease %s/%s: leaseTransitions to be at least %d\n", tgt.ns, tgt.lease, vol.epoch)
		return nil
	}
	topics := &cluster.Topics{Dyn: tgt.dyn, Namespace: tgt.ns}
	for _, name := range plan.create {
		t := vol.file.Topics[name]
		pins := map[int32]int32{}
		for _, pin := range t.Pins {
			pins[pin.Partition] = pin.Broker
		}
		got, err := topics.CreateWithID(ctx, name, t.ID, int32(len(t.Partitions)), t.Config, pins)
		if err != nil {
			return fmt.Errorf("restore: %w (run it again: the topics created so far are kept)", err)
		}
		if got != t.ID {
			// An older KafkaTopic CRD prunes spec.topicID: the object would
			// be a new incarnation, and the restored data its strays.
			if err := topics.Delete(ctx, name); err != nil {
				return fmt.Errorf("restore: KafkaTopic %s was created without its topic id, and could not be deleted: %w", name, err)
			}
			return fmt.Errorf("restore: KafkaTopic %s was created without spec.topicID (id %s, not %s): the KafkaTopic CRD in the cluster predates the field; apply deploy/base/crd-kafkatopics.yaml and run kaas restore again", name, got, t.ID)
		}
	}
	before, raised, err := cluster.RaiseLeaseEpoch(ctx, tgt.kube, tgt.ns, tgt.lease, vol.epoch, now)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	switch {
	case raised && before == 0:
		fmt.Fprintf(out, "lease %s/%s: leaseTransitions set to %d, the volume's epoch (the next controller's is above it)\n", tgt.ns, tgt.lease, vol.epoch)
	case raised:
		fmt.Fprintf(out, "lease %s/%s: leaseTransitions %d -> %d, the volume's epoch (the next controller's is above it)\n", tgt.ns, tgt.lease, before, vol.epoch)
	default:
		fmt.Fprintf(out, "lease %s/%s: leaseTransitions %d is not below the volume's epoch %d\n", tgt.ns, tgt.lease, before, vol.epoch)
	}
	return nil
}
