package kafkacli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka-features.sh: describe the cluster's KIP-584 feature levels and ask
// for new ones, with Kafka 4's FeatureCommand subcommands, flags and output.
var _ = register(Tool{Name: "features", Kafka: "kafka-features.sh", Run: runFeatures})

const metadataVersionFeature = "metadata.version"

// metadataVersions are the metadata.version levels Kafka 4.2 knows, from
// its minimum (7, 3.3-IV3) to its latest production level (29, 4.2-IV1):
// metadataVersions[i] is level 7+i.
var metadataVersions = []string{
	"3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
	"3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0",
	"4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1", "4.2-IV0", "4.2-IV1",
}

const minMetadataLevel = 7

// metadataVersionName is a metadata.version level as Kafka names it; false
// for a level Kafka 4.2 does not know.
func metadataVersionName(level int16) (string, bool) {
	i := int(level) - minMetadataLevel
	if i < 0 || i >= len(metadataVersions) {
		return "", false
	}
	return metadataVersions[i], true
}

// parseMetadataVersion is Kafka's MetadataVersion.fromVersionString: a
// version as named ("4.0-IV3"), or a release ("4.0", "4.0.1"), which
// stands for that release's newest level.
func parseMetadataVersion(s string) (int16, bool) {
	if segs := strings.Split(s, "."); len(segs) > 2 {
		s = segs[0] + "." + segs[1]
	}
	level := int16(-1)
	for i, name := range metadataVersions {
		if name == s || strings.HasPrefix(name, s+"-") {
			level = int16(minMetadataLevel + i)
		}
	}
	return level, level >= 0
}

// featureLevelText is Kafka's levelToString: metadata.version levels by
// name, other features' levels as numbers.
func featureLevelText(feature string, level int16) string {
	if feature != metadataVersionFeature {
		return strconv.Itoa(int(level))
	}
	if name, ok := metadataVersionName(level); ok {
		return name
	}
	return fmt.Sprintf("UNKNOWN %d", level)
}

// releaseFeature is a feature of Kafka 4.2's production set and its
// levels above 0 (levels[l-1] for level l); level 0 depends on nothing.
type releaseFeature struct {
	name   string
	levels []featureLevel
}

// featureLevel is what Kafka 4.2's *Version enum says of one level: the
// metadata.version level from which it is the default, and the features it
// depends on (its dependencies()).
type featureLevel struct {
	defaultFrom int16
	requires    []featureUpdate
}

// releaseFeatures are Kafka 4.2's production features, in Kafka's order
// (its Feature enum), for --release-version, version-mapping and
// feature-dependencies.
var releaseFeatures = []releaseFeature{
	{"kraft.version", []featureLevel{{21, []featureUpdate{{metadataVersionFeature, 21}}}}},
	{"transaction.version", []featureLevel{{24, nil}, {24, nil}}},
	{"group.version", []featureLevel{{22, nil}}},
	{"eligible.leader.replicas.version", []featureLevel{{26, []featureUpdate{{metadataVersionFeature, 23}}}}},
	{"share.version", []featureLevel{{28, []featureUpdate{{metadataVersionFeature, 27}}}}},
	{"streams.version", []featureLevel{{29, nil}}},
}

// defaultLevel is the feature's level a cluster at metadata.version mv
// runs by default: the highest whose metadata.version has been reached.
func (f releaseFeature) defaultLevel(mv int16) int16 {
	var level int16
	for i, l := range f.levels {
		if mv >= l.defaultFrom {
			level = int16(i + 1)
		}
	}
	return level
}

// Kafka's FeatureUpdate.UpgradeType.
const (
	featureUpgrade         int8 = 1
	featureSafeDowngrade   int8 = 2
	featureUnsafeDowngrade int8 = 3
)

type featuresOpts struct {
	conn           Conn
	controller     string
	metadata       string
	releaseVersion string
	features       Repeated
	dryRun, unsafe bool
}

// featureUpdate is one feature=level asked for.
type featureUpdate struct {
	name  string
	level int16
}

func runFeatures(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o := &featuresOpts{}
	tool := subcommandTool{
		name:     "features",
		commands: []string{"describe", "upgrade", "downgrade", "disable", "version-mapping", "feature-dependencies"},
		global: func(fs *flag.FlagSet) {
			o.conn.Register(fs)
			fs.StringVar(&o.controller, "bootstrap-controller", "", "not supported: kaas has no separate controllers; use --bootstrap-server")
		},
		command: func(cmd string, fs *flag.FlagSet) {
			switch cmd {
			case "upgrade", "downgrade":
				fs.StringVar(&o.metadata, "metadata", "", "DEPRECATED: the metadata.version to "+cmd+" to, e.g. 4.2-IV1")
				fs.StringVar(&o.releaseVersion, "release-version", "", "the release version to "+cmd+" every feature to, e.g. 4.2-IV1 (see version-mapping)")
				fs.Var(&o.features, "feature", "a feature "+cmd+", feature=level (repeatable), e.g. metadata.version=29")
				fs.BoolVar(&o.dryRun, "dry-run", false, "validate the "+cmd+" without performing it")
				if cmd == "downgrade" {
					fs.BoolVar(&o.unsafe, "unsafe", false, "downgrade even if it may irreversibly destroy metadata")
				}
			case "disable":
				fs.Var(&o.features, "feature", "a feature to disable (repeatable)")
				fs.BoolVar(&o.unsafe, "unsafe", false, "disable even if it may irreversibly destroy metadata")
				fs.BoolVar(&o.dryRun, "dry-run", false, "validate the disable without performing it")
			case "feature-dependencies":
				fs.Var(&o.features, "feature", "a feature level to look up the dependencies of, feature=level (repeatable), e.g. metadata.version=29")
			case "version-mapping":
				fs.StringVar(&o.releaseVersion, "release-version", metadataVersions[len(metadataVersions)-1], "the release version whose feature levels to show")
			}
		},
	}
	cmd, given, err := tool.parse(args, stderr)
	if err != nil {
		return err
	}
	if given["bootstrap-controller"] {
		return errNoControllers
	}
	if o.conn.Bootstrap == "" {
		return errors.New("missing required argument --bootstrap-server")
	}
	switch cmd {
	case "version-mapping":
		return featuresVersionMapping(o.releaseVersion, stdout)
	case "feature-dependencies":
		return featuresDependencies(o.features, stdout)
	}
	var updates []featureUpdate
	if cmd != "describe" {
		if updates, err = featuresUpdates(cmd, o, stdout); err != nil {
			return err
		}
	}
	cl, adm, err := o.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	if cmd == "describe" {
		return featuresDescribe(ctx, cl, stdout)
	}
	upgradeType := featureUpgrade
	if cmd != "upgrade" {
		upgradeType = featureSafeDowngrade
		if o.unsafe {
			upgradeType = featureUnsafeDowngrade
		}
	}
	return featuresUpdate(ctx, cl, cmd, updates, upgradeType, o.dryRun, stdout)
}

// featuresUpdates checks an upgrade, downgrade or disable's flags as
// Kafka's FeatureCommand does and returns the updates it asks for.
func featuresUpdates(cmd string, o *featuresOpts, stdout io.Writer) ([]featureUpdate, error) {
	var updates []featureUpdate
	seen := map[string]bool{}
	add := func(name string, level int16) error {
		if seen[name] {
			return fmt.Errorf("--feature: feature %s was specified more than once", name)
		}
		seen[name] = true
		updates = append(updates, featureUpdate{name, level})
		return nil
	}
	if cmd == "disable" {
		for _, name := range o.features {
			if err := add(name, 0); err != nil {
				return nil, err
			}
		}
	} else if o.releaseVersion != "" {
		if o.metadata != "" || len(o.features) > 0 {
			return nil, errors.New("--release-version can not be specified with --metadata or --feature")
		}
		mv, ok := parseMetadataVersion(o.releaseVersion)
		if !ok {
			return nil, fmt.Errorf("--release-version: unknown metadata.version %s. Supported metadata.version are %s", o.releaseVersion, strings.Join(metadataVersions, ", "))
		}
		updates = append(updates, featureUpdate{metadataVersionFeature, mv})
		for _, f := range releaseFeatures {
			// As Kafka's tool: an upgrade does not ask for level 0.
			if level := f.defaultLevel(mv); cmd != "upgrade" || level > 0 {
				updates = append(updates, featureUpdate{f.name, level})
			}
		}
	} else {
		if o.metadata != "" {
			fmt.Fprintln(stdout, " `metadata` flag is deprecated and may be removed in a future release.")
			mv, ok := parseMetadataVersion(o.metadata)
			if !ok {
				return nil, fmt.Errorf("--metadata: unknown metadata.version %s. Supported metadata.version are %s", o.metadata, strings.Join(metadataVersions, ", "))
			}
			seen[metadataVersionFeature] = true
			updates = append(updates, featureUpdate{metadataVersionFeature, mv})
		}
		for _, fl := range o.features {
			name, level, err := parseFeatureLevel(fl)
			if err != nil {
				return nil, err
			}
			if err := add(name, level); err != nil {
				return nil, err
			}
		}
	}
	if len(updates) == 0 {
		return nil, fmt.Errorf("You must specify at least one feature to %s", cmd)
	}
	return updates, nil
}

// parseFeatureLevel reads --feature's feature=level.
func parseFeatureLevel(s string) (string, int16, error) {
	name, levelText, ok := strings.Cut(s, "=")
	if !ok {
		return "", 0, fmt.Errorf("--feature: can't parse feature=level string %s: equals sign not found", s)
	}
	levelText = strings.TrimSpace(levelText)
	level, err := strconv.ParseInt(levelText, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("--feature: can't parse feature=level string %s: unable to parse %s as a short", s, levelText)
	}
	return strings.TrimSpace(name), int16(level), nil
}

// featuresVersionMapping prints the feature levels a release version sets.
func featuresVersionMapping(release string, out io.Writer) error {
	mv, ok := parseMetadataVersion(release)
	if !ok {
		return fmt.Errorf("--release-version: unknown release version '%s'. Supported versions are: %s to %s", release, metadataVersions[0], metadataVersions[len(metadataVersions)-1])
	}
	fmt.Fprintf(out, "metadata.version=%d (%s)\n", mv, release)
	for _, f := range releaseFeatures {
		fmt.Fprintf(out, "%s=%d\n", f.name, f.defaultLevel(mv))
	}
	return nil
}

// featuresDependencies prints what each feature level depends on, in
// order, as Kafka's FeatureCommand does; it stops at the first level it
// does not know, after printing those before it.
func featuresDependencies(features []string, out io.Writer) error {
	if len(features) == 0 {
		return errors.New("missing required argument --feature")
	}
	for _, fl := range features {
		name, level, err := parseFeatureLevel(fl)
		if err != nil {
			return err
		}
		if name == metadataVersionFeature {
			version, ok := metadataVersionName(level)
			if !ok {
				return fmt.Errorf("--feature: unknown metadata.version %d", level)
			}
			fmt.Fprintf(out, "%s=%d (%s) has no dependencies.\n", name, level, version)
			continue
		}
		requires, err := featureRequirements(name, level)
		if err != nil {
			return err
		}
		if len(requires) == 0 {
			fmt.Fprintf(out, "%s=%d has no dependencies.\n", name, level)
			continue
		}
		fmt.Fprintf(out, "%s=%d requires:\n", name, level)
		for _, r := range requires {
			if r.name == metadataVersionFeature {
				fmt.Fprintf(out, "    %s=%d (%s)\n", r.name, r.level, featureLevelText(r.name, r.level))
			} else {
				fmt.Fprintf(out, "    %s=%d\n", r.name, r.level)
			}
		}
	}
	return nil
}

// featureRequirements is the dependencies of a level of one of Kafka 4.2's
// features (metadata.version aside), with Kafka's errors for a feature or
// level it does not know.
func featureRequirements(name string, level int16) ([]featureUpdate, error) {
	for _, f := range releaseFeatures {
		if f.name != name {
			continue
		}
		if level < 0 || int(level) > len(f.levels) {
			return nil, fmt.Errorf("--feature: no feature:%s with feature level %d", name, level)
		}
		if level == 0 {
			return nil, nil
		}
		return f.levels[level-1].requires, nil
	}
	return nil, fmt.Errorf("--feature: unknown feature: %s", name)
}

// featuresDescribe prints each feature a broker supports, sorted by name,
// from its ApiVersions answer (as Kafka's admin client's describeFeatures).
func featuresDescribe(ctx context.Context, cl *kgo.Client, out io.Writer) error {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := clusterBrokerError(resp.ErrorCode, nil); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	supported := resp.SupportedFeatures
	sort.Slice(supported, func(i, j int) bool { return supported[i].Name < supported[j].Name })
	epoch := "-"
	if resp.FinalizedFeaturesEpoch >= 0 {
		epoch = strconv.FormatInt(resp.FinalizedFeaturesEpoch, 10)
	}
	for _, f := range supported {
		fmt.Fprintf(out, "Feature: %s\tSupportedMinVersion: %s\tSupportedMaxVersion: %s\tFinalizedVersionLevel: %s\tEpoch: %s\n",
			f.Name, featureLevelText(f.Name, f.MinVersion), featureLevelText(f.Name, f.MaxVersion),
			featureLevelText(f.Name, finalized[f.Name]), epoch)
	}
	return nil
}

// featuresUpdate sends UpdateFeatures and prints each feature's outcome,
// sorted by name, as Kafka's tool does; a request-wide refusal is every
// feature's (UpdateFeatures v2 is all or nothing).
func featuresUpdate(ctx context.Context, cl *kgo.Client, op string, updates []featureUpdate, upgradeType int8, dryRun bool, out io.Writer) error {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 30000
	req.ValidateOnly = dryRun
	for _, u := range updates {
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = u.name, u.level, upgradeType
		fu.AllowDowngrade = upgradeType != featureUpgrade // v0's form of the upgrade type
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	failures := map[string]string{}
	for _, u := range updates {
		if resp.ErrorCode != 0 {
			failures[u.name] = clusterErrorMessage(resp.ErrorCode, resp.ErrorMessage)
		} else if resp.Version < 2 {
			failures[u.name] = "The controller response did not contain a result for this feature."
		}
	}
	if resp.ErrorCode == 0 {
		for _, r := range resp.Results {
			if _, asked := failures[r.Feature]; !asked {
				continue
			}
			if r.ErrorCode != 0 {
				failures[r.Feature] = clusterErrorMessage(r.ErrorCode, r.ErrorMessage)
			} else {
				delete(failures, r.Feature)
			}
		}
	}
	sort.Slice(updates, func(i, j int) bool { return updates[i].name < updates[j].name })
	for _, u := range updates {
		what := fmt.Sprintf("%s %s to %d", op, u.name, u.level)
		done := fmt.Sprintf("%sd to %d.", op, u.level)
		if op == "disable" {
			what, done = "disable "+u.name, "disabled."
		}
		if msg, failed := failures[u.name]; failed {
			if dryRun {
				fmt.Fprintf(out, "Can not %s. %s\n", what, msg)
			} else {
				fmt.Fprintf(out, "Could not %s. %s\n", what, msg)
			}
		} else if dryRun {
			fmt.Fprintf(out, "%s can be %s\n", u.name, done)
		} else {
			fmt.Fprintf(out, "%s was %s\n", u.name, done)
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d out of %d operation(s) failed.", len(failures), len(updates))
	}
	return nil
}
