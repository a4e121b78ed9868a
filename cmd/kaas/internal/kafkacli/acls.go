package kafkacli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka-acls.sh: add, remove and list ACLs with Kafka 4's AclCommand flags,
// checks and output.
var _ = register(Tool{Name: "acls", Kafka: "kafka-acls.sh", Run: runACLs})

// aclFlags are kafka-acls.sh's flags as given.
type aclFlags struct {
	conn                                          Conn
	add, remove, list                             bool
	cluster, idempotent, producer, consumer       bool
	force                                         bool
	topics, groups, txnIDs, tokens, users         Repeated
	allowPrincipals, denyPrincipals               Repeated
	allowHosts, denyHosts, operations, principals Repeated
	patternType                                   string
	given                                         map[string]bool
}

// aclResource is Kafka's ResourcePattern (or, for --list and --remove, its
// ResourcePatternFilter); String prints it as Kafka does.
type aclResource struct {
	Type    kmsg.ACLResourceType
	Name    string
	Pattern kmsg.ACLResourcePatternType
}

func (r aclResource) String() string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", r.Type, r.Name, r.Pattern)
}

// aclEntry is Kafka's AccessControlEntry; String prints it as Kafka does.
type aclEntry struct {
	Principal  string
	Host       string
	Operation  kmsg.ACLOperation
	Permission kmsg.ACLPermissionType
}

func (e aclEntry) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s)", e.Principal, e.Host, e.Operation, e.Permission)
}

// aclResourceEntries is one resource (or filter) with its entries, sorted.
type aclResourceEntries struct {
	Resource aclResource
	Entries  []aclEntry
}

const clusterName = "kafka-cluster"

// aclOperations are the operation names --operation takes (Kafka's
// AclEntry.ACL_OPERATIONS), matched ignoring case as Kafka's SecurityUtils
// matches them.
var aclOperations = []kmsg.ACLOperation{
	kmsg.ACLOperationAll, kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
	kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction,
	kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
	kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens,
}

// aclOperationName is an operation as Kafka names it on the command line
// (CLUSTER_ACTION is ClusterAction).
func aclOperationName(op kmsg.ACLOperation) string {
	var b strings.Builder
	for _, w := range strings.Split(op.String(), "_") {
		b.WriteString(w[:1] + strings.ToLower(w[1:]))
	}
	return b.String()
}

func parseACLOperation(s string) (kmsg.ACLOperation, error) {
	s = strings.TrimSpace(s)
	for _, op := range aclOperations {
		if strings.EqualFold(s, aclOperationName(op)) {
			return op, nil
		}
	}
	names := make([]string, len(aclOperations))
	for i, op := range aclOperations {
		names[i] = aclOperationName(op)
	}
	return 0, fmt.Errorf("--operation %s: unknown operation; valid operation names are %s", s, strings.Join(names, ", "))
}

// aclSupportedOperations is what each resource type's ACLs may name
// besides All (Kafka's AclEntry.supportedOperations).
var aclSupportedOperations = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeDelegationToken: {kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeUser:            {kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens},
}

// zookeeperACLFlags are kafka-acls.sh flags of the ZooKeeper era (removed
// in Kafka 4): refused by name rather than reported as unknown.
var zookeeperACLFlags = []string{"authorizer", "authorizer-properties", "zk-tls-config-file"}

func parseACLFlags(args []string, stderr io.Writer) (*aclFlags, error) {
	f := &aclFlags{}
	fs := NewFlagSet("acls", stderr)
	f.conn.Register(fs)
	fs.BoolVar(&f.add, "add", false, "add ACLs")
	fs.BoolVar(&f.remove, "remove", false, "remove ACLs")
	fs.BoolVar(&f.list, "list", false, "list ACLs (of the resources given, or all)")
	fs.Var(&f.topics, "topic", "a topic (repeatable); * is every topic")
	fs.Var(&f.groups, "group", "a consumer group (repeatable); * is every group")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster")
	fs.Var(&f.txnIDs, "transactional-id", "a transactional id (repeatable); * is every one")
	fs.Var(&f.tokens, "delegation-token", "a delegation token id (repeatable); * is every token")
	fs.Var(&f.users, "user-principal", "a user principal as a resource, for CreateTokens and DescribeTokens (repeatable)")
	fs.StringVar(&f.patternType, "resource-pattern-type", "literal", "literal or prefixed; for --list and --remove also any or match")
	fs.Var(&f.allowPrincipals, "allow-principal", "a principal allowed, Type:name (repeatable); User:* is every user")
	fs.Var(&f.denyPrincipals, "deny-principal", "a principal denied, Type:name (repeatable)")
	fs.Var(&f.allowHosts, "allow-host", "a host --allow-principal may connect from: an IP address or CIDR block (repeatable; default *)")
	fs.Var(&f.denyHosts, "deny-host", "a host --deny-principal is denied from (repeatable; default *)")
	fs.Var(&f.operations, "operation", "an operation allowed or denied (repeatable; default All): All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens")
	fs.Var(&f.principals, "principal", "with --list, only the ACLs of this principal (repeatable)")
	fs.BoolVar(&f.producer, "producer", false, "the producer's ACLs: Write, Describe, Create on the topics (Write, Describe on transactional ids)")
	fs.BoolVar(&f.idempotent, "idempotent", false, "with --producer, IdempotentWrite on the cluster")
	fs.BoolVar(&f.consumer, "consumer", false, "the consumer's ACLs: Read, Describe on the topics, Read on the groups")
	fs.BoolVar(&f.force, "force", false, "remove without asking for confirmation")
	var controller string
	fs.StringVar(&controller, "bootstrap-controller", "", "not supported: kaas has no separate controllers; use --bootstrap-server")
	var zk string
	for _, name := range zookeeperACLFlags {
		fs.StringVar(&zk, name, "", "not supported: ZooKeeper-era, removed in Kafka 4")
	}
	given, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	f.given = given
	for _, name := range zookeeperACLFlags {
		if f.given[name] {
			return nil, fmt.Errorf("--%s is a ZooKeeper-era flag, removed in Kafka 4: ACLs are managed through the brokers with --bootstrap-server", name)
		}
	}
	if f.given["bootstrap-controller"] {
		return nil, errors.New("--bootstrap-controller is not supported: kaas has no separate controllers; use --bootstrap-server")
	}
	return f, f.check()
}

// check makes Kafka's AclCommandOptions.checkArgs checks, in its order and
// with its messages.
func (f *aclFlags) check() error {
	if f.conn.Bootstrap == "" {
		return errors.New("missing required argument --bootstrap-server")
	}
	if n := countTrue(f.add, f.remove, f.list); n != 1 {
		return errors.New("Command must include exactly one action: --list, --add, --remove. ")
	}
	if err := f.notWith("list", "producer", "consumer", "allow-host", "allow-principal", "deny-host", "deny-principal"); err != nil {
		return err
	}
	// --producer and --consumer imply their operations and only allow.
	for _, role := range []string{"producer", "consumer"} {
		if err := f.notWith(role, "operation", "deny-principal", "deny-host"); err != nil {
			return err
		}
	}
	if f.given["principal"] && !f.list {
		return errors.New("The --principal option is only available if --list is set")
	}
	if f.producer && len(f.topics) == 0 {
		return errors.New("With --producer you must specify a --topic")
	}
	if f.idempotent && !f.producer {
		return errors.New("The --idempotent option is only available if --producer is set")
	}
	if f.consumer && (len(f.topics) == 0 || len(f.groups) == 0 || (!f.producer && (f.cluster || len(f.txnIDs) > 0))) {
		return errors.New("With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.")
	}
	return nil
}

func (f *aclFlags) notWith(used string, others ...string) error {
	if !f.given[used] {
		return nil
	}
	for _, o := range others {
		if f.given[o] {
			return fmt.Errorf("Option \"[%s]\" can't be used with option \"[%s]\"", used, o)
		}
	}
	return nil
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// pattern is --resource-pattern-type (LITERAL unless given).
func (f *aclFlags) pattern() (kmsg.ACLResourcePatternType, error) {
	for _, p := range []kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed,
		kmsg.ACLResourcePatternTypeMatch, kmsg.ACLResourcePatternTypeAny} {
		if strings.EqualFold(f.patternType, p.String()) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("--resource-pattern-type %s: want one of ANY|MATCH|LITERAL|PREFIXED", f.patternType)
}

// resources are the resource filters the flags name, as Kafka's
// getResourceFilter builds them: --cluster counts only with the literal
// pattern type.
func (f *aclFlags) resources(pattern kmsg.ACLResourcePatternType, required bool) ([]aclResource, error) {
	var out []aclResource
	seen := map[aclResource]bool{}
	addAll := func(t kmsg.ACLResourceType, names []string, trim bool) {
		for _, n := range names {
			if trim {
				n = strings.TrimSpace(n)
			}
			r := aclResource{t, n, pattern}
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	addAll(kmsg.ACLResourceTypeTopic, f.topics, true)
	if pattern == kmsg.ACLResourcePatternTypeLiteral && (f.cluster || f.idempotent) {
		addAll(kmsg.ACLResourceTypeCluster, []string{clusterName}, false)
	}
	addAll(kmsg.ACLResourceTypeGroup, f.groups, true)
	addAll(kmsg.ACLResourceTypeTransactionalId, f.txnIDs, false) // Kafka does not trim these
	addAll(kmsg.ACLResourceTypeDelegationToken, f.tokens, true)
	addAll(kmsg.ACLResourceTypeUser, f.users, true)
	if len(out) == 0 && required {
		return nil, errors.New("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>")
	}
	return out, nil
}

// parsePrincipal checks Kafka's principalType:principalName form.
func parsePrincipal(flagName, s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, ":") {
		return "", fmt.Errorf("--%s %s: expected a string in format principalType:principalName but got %s", flagName, s, s)
	}
	return s, nil
}

// entries are the ACL entries for ops: every allowed principal from every
// allowed host, and every denied one from every denied host (Kafka's
// getAcl). A principal without hosts gets host *.
func (f *aclFlags) entries(ops []kmsg.ACLOperation) ([]aclEntry, error) {
	var out []aclEntry
	for _, side := range []struct {
		principals, hosts Repeated
		flagName          string
		perm              kmsg.ACLPermissionType
	}{
		{f.allowPrincipals, f.allowHosts, "allow-principal", kmsg.ACLPermissionTypeAllow},
		{f.denyPrincipals, f.denyHosts, "deny-principal", kmsg.ACLPermissionTypeDeny},
	} {
		hosts := []string{"*"}
		if len(side.hosts) > 0 {
			hosts = nil
			for _, h := range side.hosts {
				hosts = append(hosts, strings.TrimSpace(h))
			}
		}
		for _, p := range side.principals {
			principal, err := parsePrincipal(side.flagName, p)
			if err != nil {
				return nil, err
			}
			for _, op := range ops {
				for _, h := range hosts {
					out = append(out, aclEntry{principal, h, op, side.perm})
				}
			}
		}
	}
	return sortEntries(out), nil
}

func sortEntries(es []aclEntry) []aclEntry {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.Principal != b.Principal {
			return a.Principal < b.Principal
		}
		if a.Permission != b.Permission {
			return a.Permission > b.Permission // ALLOW before DENY
		}
		if a.Operation != b.Operation {
			return a.Operation < b.Operation
		}
		return a.Host < b.Host
	})
	out := es[:0]
	for i, e := range es {
		if i == 0 || e != es[i-1] {
			out = append(out, e)
		}
	}
	return out
}

// plan is Kafka's getResourceFilterToAcls: for each resource (filter) the
// entries to add or remove: the --operation entries on every resource, or
// those of --producer and --consumer; then every entry checked against its
// resource type.
func (f *aclFlags) plan() ([]aclResourceEntries, error) {
	pattern, err := f.pattern()
	if err != nil {
		return nil, err
	}
	resources, err := f.resources(pattern, true)
	if err != nil {
		return nil, err
	}
	byResource := map[aclResource][]aclEntry{}
	var order []aclResource
	put := func(r aclResource, es []aclEntry) {
		if _, ok := byResource[r]; !ok {
			order = append(order, r)
		}
		byResource[r] = sortEntries(append(byResource[r], es...))
	}
	entriesFor := func(ops ...kmsg.ACLOperation) []aclEntry {
		if err != nil {
			return nil
		}
		var es []aclEntry
		es, err = f.entries(ops)
		return es
	}
	if !f.producer && !f.consumer {
		ops := []kmsg.ACLOperation{kmsg.ACLOperationAll}
		if len(f.operations) > 0 {
			ops = nil
			for _, s := range f.operations {
				op, err := parseACLOperation(s)
				if err != nil {
					return nil, err
				}
				ops = append(ops, op)
			}
		}
		es := entriesFor(ops...)
		for _, r := range resources {
			put(r, es)
		}
	}
	if f.producer {
		topicOps := entriesFor(kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationCreate)
		txnOps := entriesFor(kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe)
		for _, r := range resources {
			switch r.Type {
			case kmsg.ACLResourceTypeTopic:
				put(r, topicOps)
			case kmsg.ACLResourceTypeTransactionalId:
				put(r, txnOps)
			}
		}
		if f.idempotent {
			put(aclResource{kmsg.ACLResourceTypeCluster, clusterName, kmsg.ACLResourcePatternTypeLiteral}, entriesFor(kmsg.ACLOperationIdempotentWrite))
		}
	}
	if f.consumer {
		topicOps := entriesFor(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
		groupOps := entriesFor(kmsg.ACLOperationRead)
		for _, r := range resources {
			switch r.Type {
			case kmsg.ACLResourceTypeTopic:
				put(r, topicOps)
			case kmsg.ACLResourceTypeGroup:
				put(r, groupOps)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	sortResources(order)
	out := make([]aclResourceEntries, len(order))
	for i, r := range order {
		out[i] = aclResourceEntries{r, byResource[r]}
		if err := validateACLOperations(r.Type, out[i].Entries); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sortResources(rs []aclResource) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Pattern != b.Pattern {
			return a.Pattern < b.Pattern
		}
		return a.Name < b.Name
	})
}

// validateACLOperations refuses an operation the resource type has no use
// for, with Kafka's message.
func validateACLOperations(t kmsg.ACLResourceType, es []aclEntry) error {
	valid := append([]kmsg.ACLOperation{kmsg.ACLOperationAll}, aclSupportedOperations[t]...)
	for _, e := range es {
		ok := false
		for _, v := range valid {
			ok = ok || e.Operation == v
		}
		if !ok {
			sort.Slice(valid, func(i, j int) bool { return valid[i] < valid[j] })
			names := make([]string, len(valid))
			for i, v := range valid {
				names[i] = v.String()
			}
			return fmt.Errorf("ResourceType %s only supports operations [%s]", t, strings.Join(names, ", "))
		}
	}
	return nil
}

// addPlan is Kafka's getResourceToAcls: a specific pattern type, and some
// principal for every resource.
func (f *aclFlags) addPlan() ([]aclResourceEntries, error) {
	pattern, err := f.pattern()
	if err != nil {
		return nil, err
	}
	if pattern != kmsg.ACLResourcePatternTypeLiteral && pattern != kmsg.ACLResourcePatternTypePrefixed {
		return nil, fmt.Errorf("A '--resource-pattern-type' value of '%s' is not valid when adding acls.", pattern)
	}
	plan, err := f.plan()
	if err != nil {
		return nil, err
	}
	for _, re := range plan {
		if len(re.Entries) == 0 {
			return nil, errors.New("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
		}
	}
	return plan, nil
}

func runACLs(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f, err := parseACLFlags(args, stderr)
	if err != nil {
		return err
	}
	// Everything is checked before connecting: a refused command changes
	// nothing.
	var plan []aclResourceEntries
	var listFilters []aclResource
	var listPrincipals []string
	switch {
	case f.add:
		plan, err = f.addPlan()
	case f.remove:
		plan, err = f.plan()
	case f.list:
		var pattern kmsg.ACLResourcePatternType
		if pattern, err = f.pattern(); err == nil {
			listFilters, _ = f.resources(pattern, false)
		}
		for _, p := range f.principals {
			p, perr := parsePrincipal("principal", p)
			if perr != nil {
				return perr
			}
			listPrincipals = append(listPrincipals, p)
		}
	}
	if err != nil {
		return err
	}
	cl, adm, err := f.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	switch {
	case f.add:
		return addACLs(ctx, cl, plan, stdout)
	case f.remove:
		return removeACLs(ctx, cl, plan, f.force, stdin, stdout)
	default:
		return listACLs(ctx, cl, listFilters, listPrincipals, stdout)
	}
}

// addACLs adds each resource's entries, saying which exist already (as
// Kafka 4.2's AclCommand does) and adding only the others.
func addACLs(ctx context.Context, cl *kgo.Client, plan []aclResourceEntries, stdout io.Writer) error {
	for _, re := range plan {
		existing, err := describeACLs(ctx, cl, re.Resource)
		if err != nil {
			return err
		}
		have := map[aclEntry]bool{}
		for _, e := range existing[re.Resource] {
			have[e] = true
		}
		var toAdd []aclEntry
		for _, e := range re.Entries {
			if have[e] {
				fmt.Fprintf(stdout, "Acl (pattern=%s, entry=%s) already exists.\n", re.Resource, e)
			} else {
				toAdd = append(toAdd, e)
			}
		}
		if len(toAdd) == 0 {
			continue
		}
		fmt.Fprintf(stdout, "Adding ACLs for resource `%s`: \n %s\n\n", re.Resource, tabbed(toAdd))
		req := kmsg.NewPtrCreateACLsRequest()
		for _, e := range toAdd {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = re.Resource.Type, re.Resource.Name, re.Resource.Pattern
			c.Principal, c.Host, c.Operation, c.PermissionType = e.Principal, e.Host, e.Operation, e.Permission
			req.Creations = append(req.Creations, c)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("CreateAcls: %w", err)
		}
		var failed []string
		for i, r := range resp.Results {
			if err := kerr.ErrorForCode(r.ErrorCode); err != nil && i < len(toAdd) {
				failed = append(failed, fmt.Sprintf("%s: %s", toAdd[i], errText(err, r.ErrorMessage)))
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("adding ACLs for resource `%s` failed:\n\t%s", re.Resource, strings.Join(failed, "\n\t"))
		}
	}
	return nil
}

func tabbed(es []aclEntry) string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = "\t" + e.String()
	}
	return strings.Join(lines, "\n")
}

func errText(err error, msg *string) string {
	if msg != nil && *msg != "" && !strings.Contains(err.Error(), *msg) {
		return err.Error() + ": " + *msg
	}
	return err.Error()
}

// describeACLs lists the ACLs a resource filter matches (every ACL for the
// zero filter), grouped by resource.
func describeACLs(ctx context.Context, cl *kgo.Client, filter aclResource) (map[aclResource][]aclEntry, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	if filter != (aclResource{}) {
		name := filter.Name
		req.ResourceType, req.ResourceName, req.ResourcePatternType = filter.Type, &name, filter.Pattern
	}
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("DescribeAcls: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("DescribeAcls: %s", errText(err, resp.ErrorMessage))
	}
	out := map[aclResource][]aclEntry{}
	for _, r := range resp.Resources {
		res := aclResource{r.ResourceType, r.ResourceName, r.ResourcePatternType}
		for _, a := range r.ACLs {
			out[res] = append(out[res], aclEntry{a.Principal, a.Host, a.Operation, a.PermissionType})
		}
	}
	return out, nil
}

// listACLs prints the ACLs of each filter (every ACL without one) per
// resource, or, with --principal, per principal only theirs.
func listACLs(ctx context.Context, cl *kgo.Client, filters []aclResource, principals []string, stdout io.Writer) error {
	if len(filters) == 0 {
		filters = []aclResource{{}}
	}
	all := map[aclResource][]aclEntry{}
	for _, f := range filters {
		got, err := describeACLs(ctx, cl, f)
		if err != nil {
			return err
		}
		for r, es := range got {
			all[r] = append(all[r], es...)
		}
	}
	if len(principals) == 0 {
		printResourceACLs(stdout, all)
		return nil
	}
	for _, p := range principals {
		fmt.Fprintf(stdout, "ACLs for principal `%s`\n", p)
		mine := map[aclResource][]aclEntry{}
		for r, es := range all {
			for _, e := range es {
				if e.Principal == p {
					mine[r] = append(mine[r], e)
				}
			}
		}
		printResourceACLs(stdout, mine)
	}
	return nil
}

func printResourceACLs(w io.Writer, byResource map[aclResource][]aclEntry) {
	order := make([]aclResource, 0, len(byResource))
	for r := range byResource {
		order = append(order, r)
	}
	sortResources(order)
	for _, r := range order {
		fmt.Fprintf(w, "Current ACLs for resource `%s`:\n%s\n\n", r, tabbed(sortEntries(byResource[r])))
	}
}

// removeACLs deletes, per resource filter, the entries given, or every ACL
// of the filter when no principal is. Without --force each removal is
// confirmed with a y on standard input, as Kafka asks; no answer at all
// (standard input closed or empty) is an error rather than a silent no.
func removeACLs(ctx context.Context, cl *kgo.Client, plan []aclResourceEntries, force bool, stdin io.Reader, stdout io.Writer) error {
	var answers *bufio.Reader
	for _, re := range plan {
		if !force {
			if len(re.Entries) == 0 {
				fmt.Fprintf(stdout, "Are you sure you want to delete all ACLs for resource filter `%s`? (y/n)\n", re.Resource)
			} else {
				fmt.Fprintf(stdout, "Are you sure you want to remove ACLs: \n %s\n from resource filter `%s`? (y/n)\n", tabbed(re.Entries), re.Resource)
			}
			if answers == nil {
				answers = bufio.NewReader(stdin)
			}
			line, err := answers.ReadString('\n')
			if line == "" && err != nil {
				return errors.New("--remove asks for confirmation on standard input and got no answer: pass --force to remove without asking")
			}
			if !strings.EqualFold(strings.TrimSpace(line), "y") {
				continue
			}
		}
		if err := deleteACLs(ctx, cl, re); err != nil {
			return err
		}
	}
	return nil
}

func deleteACLs(ctx context.Context, cl *kgo.Client, re aclResourceEntries) error {
	req := kmsg.NewPtrDeleteACLsRequest()
	filter := func() kmsg.DeleteACLsRequestFilter {
		f := kmsg.NewDeleteACLsRequestFilter()
		name := re.Resource.Name
		f.ResourceType, f.ResourceName, f.ResourcePatternType = re.Resource.Type, &name, re.Resource.Pattern
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return f
	}
	if len(re.Entries) == 0 {
		req.Filters = append(req.Filters, filter())
	}
	for _, e := range re.Entries {
		f := filter()
		principal, host := e.Principal, e.Host
		f.Principal, f.Host, f.Operation, f.PermissionType = &principal, &host, e.Operation, e.Permission
		req.Filters = append(req.Filters, f)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("DeleteAcls: %w", err)
	}
	var failed []string
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			failed = append(failed, errText(err, r.ErrorMessage))
		}
		for _, m := range r.MatchingACLs {
			if err := kerr.ErrorForCode(m.ErrorCode); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %s", aclEntry{m.Principal, m.Host, m.Operation, m.PermissionType}, errText(err, m.ErrorMessage)))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("removing ACLs from resource filter `%s` failed:\n\t%s", re.Resource, strings.Join(failed, "\n\t"))
	}
	return nil
}
