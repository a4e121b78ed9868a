package kafkacli

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var _ = register(Tool{Name: "configs", Kafka: "kafka-configs.sh", Run: runConfigs})

// Kafka's entity types (ConfigType and ConfigCommand's broker-loggers), in
// the order its error message lists them.
const (
	typeTopics        = "topics"
	typeClients       = "clients"
	typeUsers         = "users"
	typeBrokers       = "brokers"
	typeIPs           = "ips"
	typeBrokerLoggers = "broker-loggers"
	typeClientMetrics = "client-metrics"
	typeGroups        = "groups"
)

var configEntityTypes = []string{typeTopics, typeClients, typeUsers, typeBrokers, typeIPs, typeBrokerLoggers, typeClientMetrics, typeGroups}

// Quota keys Kafka's tool accepts per entity kind (QuotaConfig and
// DynamicConfig.Ip), and the SCRAM mechanisms a user's credentials use.
var (
	userClientQuotaKeys = map[string]bool{"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": true, "controller_mutation_rate": true}
	ipQuotaKeys         = map[string]bool{"connection_creation_rate": true}
	scramMechanisms     = map[string]kadm.ScramMechanism{"SCRAM-SHA-256": kadm.ScramSha256, "SCRAM-SHA-512": kadm.ScramSha512}
)

// scramDefaultIterations is what Kafka's tool uses when a credential names
// no iteration count; scramMinIterations is Kafka's minimum for both
// mechanisms.
const (
	scramDefaultIterations = 4096
	scramMinIterations     = 4096
)

// orderedNames collects --entity-name and --entity-default in command-line
// order, as Kafka pairs them with the entity types: a default is "".
type orderedNames struct {
	names   *[]string
	isDflt  bool
	present *bool
}

func (o orderedNames) String() string { return "" }
func (o orderedNames) Set(v string) error {
	if o.isDflt {
		v = ""
	}
	*o.names = append(*o.names, v)
	*o.present = true
	return nil
}
func (o orderedNames) IsBoolFlag() bool { return o.isDflt }

// onceString is a flag that takes one value: Kafka's tool refuses a second.
type onceString struct {
	name string
	val  string
	set  bool
}

func (o *onceString) String() string { return o.val }
func (o *onceString) Set(v string) error {
	if o.set {
		return fmt.Errorf("found multiple arguments for option %s, but only one is allowed", o.name)
	}
	o.val, o.set = v, true
	return nil
}

// commaList is a repeatable flag whose values are also comma-separated
// (--delete-config a,b --delete-config c).
type commaList []string

func (c *commaList) String() string { return strings.Join(*c, ",") }
func (c *commaList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		*c = append(*c, strings.TrimSpace(s))
	}
	return nil
}

type configsOptions struct {
	conn                  Conn
	fs                    *flag.FlagSet
	alter, describe, all  bool
	entityType            Repeated
	names                 []string // --entity-name and --entity-default, in order
	hasEntityName         bool
	hasEntityDefault      bool
	addConfig             onceString
	addConfigFile         onceString
	deleteConfig          commaList
	entityFlags           []*onceString // --topic, --client, ...: Kafka's order
	entityFlagTypes       []string
	defaultsFlags         []*bool // --client-defaults, ...
	defaultsFlagTypes     []string
	zookeeper, zkTLS, bcs string
}

func newConfigsOptions(stderr io.Writer) *configsOptions {
	o := &configsOptions{fs: NewFlagSet("configs", stderr)}
	fs := o.fs
	o.conn.Register(fs)
	fs.StringVar(&o.bcs, "bootstrap-controller", "", "not supported: kaas has no separate controller quorum (use --bootstrap-server)")
	fs.StringVar(&o.zookeeper, "zookeeper", "", "not supported: Kafka 4 has no ZooKeeper mode (use --bootstrap-server)")
	fs.StringVar(&o.zkTLS, "zk-tls-config-file", "", "not supported: Kafka 4 has no ZooKeeper mode")
	fs.BoolVar(&o.alter, "alter", false, "Alter the configuration for the entity.")
	fs.BoolVar(&o.describe, "describe", false, "List configs for the given entity.")
	fs.BoolVar(&o.all, "all", false, "List all configs for the given entity, including static configs if available.")
	fs.Var(&o.entityType, "entity-type", "Type of entity (topics/clients/users/brokers/broker-loggers/ips/client-metrics/groups)")
	fs.Var(orderedNames{names: &o.names, present: &o.hasEntityName}, "entity-name", "Name of entity (topic name/client id/user principal name/broker id/ip/client metrics/group id)")
	fs.Var(orderedNames{names: &o.names, isDflt: true, present: &o.hasEntityDefault}, "entity-default", "Default entity name for clients/users/brokers/ips (applies to corresponding entity type)")
	o.addConfig.name, o.addConfigFile.name = "--add-config", "--add-config-file"
	fs.Var(&o.addConfig, "add-config", "Key Value pairs of configs to add. Square brackets can be used to group values which contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'.")
	fs.Var(&o.addConfigFile, "add-config-file", "Path to a properties file with configs to add.")
	fs.Var(&o.deleteConfig, "delete-config", "config keys to remove 'k1,k2'")
	fs.Bool("force", false, "Suppress console prompts (accepted; this tool does not prompt)")
	for _, f := range []struct{ flag, typ, usage string }{
		{"topic", typeTopics, "The topic's name."},
		{"client", typeClients, "The client's ID."},
		{"user", typeUsers, "The user's principal name."},
		{"broker", typeBrokers, "The broker's ID."},
		{"broker-logger", typeBrokerLoggers, "The broker's ID for its logger config."},
		{"ip", typeIPs, "The IP address."},
		{"client-metrics", typeClientMetrics, "The client metrics config resource name."},
		{"group", typeGroups, "The group's ID."},
	} {
		v := &onceString{name: "--" + f.flag}
		fs.Var(v, f.flag, f.usage)
		o.entityFlags, o.entityFlagTypes = append(o.entityFlags, v), append(o.entityFlagTypes, f.typ)
	}
	for _, f := range []struct{ flag, typ, usage string }{
		{"client-defaults", typeClients, "The config defaults for all clients."},
		{"user-defaults", typeUsers, "The config defaults for all users."},
		{"broker-defaults", typeBrokers, "The config defaults for all brokers."},
		{"ip-defaults", typeIPs, "The config defaults for all IPs."},
	} {
		o.defaultsFlags = append(o.defaultsFlags, fs.Bool(f.flag, false, f.usage))
		o.defaultsFlagTypes = append(o.defaultsFlagTypes, f.typ)
	}
	return o
}

// entityTypes is Kafka's list: the --entity-type values, then the types of
// the shorthand flags given, in a fixed order.
func (o *configsOptions) entityTypes() []string {
	types := append([]string{}, o.entityType...)
	for i, f := range o.entityFlags {
		if f.set {
			types = append(types, o.entityFlagTypes[i])
		}
	}
	for i, d := range o.defaultsFlags {
		if *d {
			types = append(types, o.defaultsFlagTypes[i])
		}
	}
	return types
}

// entityNames pairs with entityTypes: "" stands for a default entity.
func (o *configsOptions) entityNames() []string {
	names := append([]string{}, o.names...)
	for _, f := range o.entityFlags {
		if f.set {
			names = append(names, f.val)
		}
	}
	for _, d := range o.defaultsFlags {
		if *d {
			names = append(names, "")
		}
	}
	return names
}

func (o *configsOptions) usesShorthand() bool {
	for _, f := range o.entityFlags {
		if f.set {
			return true
		}
	}
	for _, d := range o.defaultsFlags {
		if *d {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// check is Kafka's ConfigCommandOptions.checkArgs, in its order and with
// its messages, plus the refusal of the ZooKeeper-era flags.
func (o *configsOptions) check() error {
	if o.zookeeper != "" || o.zkTLS != "" {
		return errors.New("--zookeeper and --zk-tls-config-file are not supported: Kafka 4's kafka-configs.sh talks to brokers only; use --bootstrap-server")
	}
	if o.bcs != "" {
		return errors.New("--bootstrap-controller is not supported: kaas brokers serve the config APIs themselves; use --bootstrap-server")
	}
	if o.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", o.fs.Arg(0))
	}
	if o.alter == o.describe {
		return errors.New("Command must include exactly one action: --describe, --alter")
	}
	if o.describe {
		for _, f := range []struct {
			set  bool
			name string
		}{{o.addConfig.set, "add-config"}, {o.addConfigFile.set, "add-config-file"}, {len(o.deleteConfig) > 0, "delete-config"}} {
			if f.set {
				return fmt.Errorf("Option \"[describe]\" can't be used with option \"[%s]\"", f.name)
			}
		}
	}
	if o.all && !o.describe {
		return errors.New("--all can only be used with --describe")
	}
	types := o.entityTypes()
	seen, dups := map[string]bool{}, []string{}
	for _, t := range types {
		if seen[t] && !contains(dups, t) {
			dups = append(dups, t)
		}
		seen[t] = true
	}
	if len(dups) > 0 {
		return fmt.Errorf("Duplicate entity type(s) specified: %s", strings.Join(dups, ","))
	}
	for _, t := range types {
		if !contains(configEntityTypes, t) {
			return fmt.Errorf("Invalid entity type %s, the entity type must be one of %s with a --bootstrap-server or --bootstrap-controller argument", t, strings.Join(configEntityTypes, ", "))
		}
	}
	if len(types) == 0 {
		return errors.New("At least one entity type must be specified")
	}
	if len(types) > 1 && !(len(types) == 2 && contains(types, typeUsers) && contains(types, typeClients)) {
		return fmt.Errorf("Only '%s' and '%s' entity types may be specified together", typeUsers, typeClients)
	}
	if (o.hasEntityName || len(o.entityType) > 0 || o.hasEntityDefault) && o.usesShorthand() {
		return errors.New("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
	}
	names := o.entityNames()
	hasName, hasDefault := false, false
	for _, n := range names {
		if n == "" {
			hasDefault = true
		} else {
			hasName = true
		}
	}
	if o.conn.Bootstrap == "" {
		return errors.New("the required --bootstrap-server argument must be specified")
	}
	if hasName && (contains(types, typeBrokers) || contains(types, typeBrokerLoggers)) {
		for _, n := range names {
			if _, err := strconv.Atoi(n); n != "" && err != nil {
				return fmt.Errorf("The entity name for %s must be a valid integer broker id, but it is: %s", types[0], n)
			}
		}
	}
	if hasName && contains(types, typeIPs) {
		for _, n := range names {
			if n != "" && !validIPEntity(n) {
				return fmt.Errorf("The entity name for %s must be a valid IP or resolvable host, but it is: %s", types[0], n)
			}
		}
	}
	quotaOrBroker := contains(types, typeUsers) || contains(types, typeClients) || contains(types, typeBrokers) || contains(types, typeIPs)
	if o.describe {
		if !quotaOrBroker && o.hasEntityDefault {
			return fmt.Errorf("--entity-default must not be specified with --describe of %s", strings.Join(types, ","))
		}
		if contains(types, typeBrokerLoggers) && !hasName {
			return fmt.Errorf("An entity name must be specified with --describe of %s", strings.Join(types, ","))
		}
		if o.all && !(contains(types, typeTopics) || contains(types, typeBrokers) || contains(types, typeBrokerLoggers) || contains(types, typeClientMetrics) || contains(types, typeGroups)) {
			return fmt.Errorf("--all applies to topics, brokers, broker-loggers, client-metrics and groups, not %s", strings.Join(types, ","))
		}
	}
	if o.alter {
		if quotaOrBroker {
			if !hasName && !hasDefault {
				return errors.New("An entity-name or default entity must be specified with --alter of users, clients, brokers or ips")
			}
		} else if !hasName {
			return fmt.Errorf("An entity name must be specified with --alter of %s", strings.Join(types, ","))
		}
		if o.addConfig.set && o.addConfigFile.set {
			return errors.New("Only one of --add-config or --add-config-file must be specified")
		}
		if !o.addConfig.set && !o.addConfigFile.set && len(o.deleteConfig) == 0 {
			return errors.New("At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter")
		}
		if len(types) != len(names) {
			return errors.New("An entity name must be specified for every entity type")
		}
	}
	if len(names) > len(types) {
		return errors.New("More entity names specified than entity types")
	}
	return nil
}

// validIPEntity is Kafka's DynamicConfig.Ip.isValidIpEntity: an address,
// or a host name that resolves.
func validIPEntity(s string) bool {
	if net.ParseIP(s) != nil {
		return true
	}
	_, err := net.LookupHost(s)
	return err == nil
}

func runConfigs(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o := newConfigsOptions(stderr)
	if err := o.fs.Parse(args); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	var adds []configKV
	if o.alter {
		var err error
		if adds, err = o.configsToAdd(); err != nil {
			return err
		}
	}
	cl, adm, err := o.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	c := &configsCmd{cl: cl, adm: adm, out: stdout, types: o.entityTypes(), names: o.entityNames()}
	if o.describe {
		return c.describe(ctx, o.all)
	}
	return c.alter(ctx, adds, o.deleteConfig)
}

// configKV is one config to set.
type configKV struct{ key, value string }

// configsToAdd reads --add-config or --add-config-file.
func (o *configsOptions) configsToAdd() ([]configKV, error) {
	var kvs []configKV
	if o.addConfigFile.set {
		f, err := os.Open(o.addConfigFile.val)
		if err != nil {
			return nil, fmt.Errorf("--add-config-file: %w", err)
		}
		props, err := parseProperties(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--add-config-file %s: %w", o.addConfigFile.val, err)
		}
		for k, v := range props {
			kvs = append(kvs, configKV{k, v})
		}
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].key < kvs[j].key })
	}
	if o.addConfig.set {
		parsed, err := parseAddConfig(o.addConfig.val)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, parsed...)
	}
	for _, kv := range kvs {
		if !configKeyChars.MatchString(kv.key) {
			return nil, fmt.Errorf("Invalid character found for config key: %s", kv.key)
		}
	}
	return kvs, nil
}

var configKeyChars = regexp.MustCompile(`^[a-zA-Z0-9._-]*$`)

// parseAddConfig reads Kafka's --add-config syntax: key=value pairs split
// at commas outside square brackets, each split at its one '=' outside
// brackets; the brackets themselves are dropped from values
// ('k2=[a,b]' sets k2 to "a,b"). A key given twice keeps its last value.
func parseAddConfig(s string) ([]configKV, error) {
	var kvs []configKV
	index := map[string]int{}
	for _, pair := range splitOutsideBrackets(s, ',') {
		parts := splitOutsideBrackets(pair, '=')
		if len(parts) != 2 {
			return nil, errors.New(`Invalid entity config: all configs to be added must be in the format "key=val".`)
		}
		key := strings.TrimSpace(parts[0])
		value := strings.TrimSpace(strings.NewReplacer("[", "", "]", "").Replace(parts[1]))
		if i, dup := index[key]; dup {
			kvs[i].value = value
			continue
		}
		index[key] = len(kvs)
		kvs = append(kvs, configKV{key, value})
	}
	return kvs, nil
}

func splitOutsideBrackets(s string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case sep:
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// configsCmd runs one describe or alter against the cluster.
type configsCmd struct {
	cl    *kgo.Client
	adm   *kadm.Client
	out   io.Writer
	types []string
	names []string
}

// resourceType is the config resource of an entity type, and the source
// of the configs a describe without --all shows (none: every config).
func resourceType(entityType, name string) (kmsg.ConfigResourceType, kmsg.ConfigSource, bool) {
	switch entityType {
	case typeTopics:
		return kmsg.ConfigResourceTypeTopic, kmsg.ConfigSourceDynamicTopicConfig, true
	case typeBrokers:
		if name == "" {
			return kmsg.ConfigResourceTypeBroker, kmsg.ConfigSourceDynamicDefaultBrokerConfig, true
		}
		return kmsg.ConfigResourceTypeBroker, kmsg.ConfigSourceDynamicBrokerConfig, true
	case typeBrokerLoggers:
		return kmsg.ConfigResourceTypeBrokerLogger, 0, false
	case typeClientMetrics:
		return kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigSourceClientMetricsConfig, true
	case typeGroups:
		return kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigSourceGroupConfig, true
	}
	return kmsg.ConfigResourceTypeUnknown, 0, false
}

// javaConfigSource is the name Java's ConfigEntry.ConfigSource gives a
// source, which Kafka's tool prints in synonyms.
func javaConfigSource(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "DYNAMIC_TOPIC_CONFIG"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "DYNAMIC_BROKER_CONFIG"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "STATIC_BROKER_CONFIG"
	case kmsg.ConfigSourceDefaultConfig:
		return "DEFAULT_CONFIG"
	case kmsg.ConfigSourceDynamicBrokerLoggerConfig:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	case kmsg.ConfigSourceClientMetricsConfig:
		return "DYNAMIC_CLIENT_METRICS_CONFIG"
	case kmsg.ConfigSourceGroupConfig:
		return "DYNAMIC_GROUP_CONFIG"
	}
	return "UNKNOWN"
}

// brokerError is a Kafka error code with the broker's message, as Kafka's
// exceptions read.
func brokerError(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if msg != nil && *msg != "" && errors.As(err, &ke) {
		return fmt.Errorf("%s: %s", ke.Message, *msg)
	}
	return err
}

// resourceConfigs describes one resource and returns its configs sorted by
// name: the dynamic ones, or all with describeAll.
func (c *configsCmd) resourceConfigs(ctx context.Context, entityType, name string, synonyms, describeAll bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	rt, dynamic, filter := resourceType(entityType, name)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = synonyms
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = rt, name
	req.Resources = append(req.Resources, r)
	var configs []kmsg.DescribeConfigsResponseResourceConfig
	for _, shard := range c.cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			return nil, fmt.Errorf("describe configs of %s %q: %w", strings.TrimSuffix(entityType, "s"), name, shard.Err)
		}
		for _, res := range shard.Resp.(*kmsg.DescribeConfigsResponse).Resources {
			if err := brokerError(res.ErrorCode, res.ErrorMessage); err != nil {
				return nil, fmt.Errorf("describe configs of %s %q: %w", strings.TrimSuffix(entityType, "s"), name, err)
			}
			for _, cfg := range res.Configs {
				if describeAll || !filter || cfg.Source == dynamic {
					configs = append(configs, cfg)
				}
			}
		}
	}
	sort.Slice(configs, func(i, j int) bool { return configs[i].Name < configs[j].Name })
	return configs, nil
}

func strOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func (c *configsCmd) describe(ctx context.Context, describeAll bool) error {
	switch c.types[0] {
	case typeTopics, typeBrokers, typeBrokerLoggers, typeClientMetrics, typeGroups:
		return c.describeResources(ctx, c.types[0], describeAll)
	case typeUsers, typeClients:
		if err := c.describeQuotas(ctx); err != nil {
			return err
		}
		if !contains(c.types, typeClients) && !contains(c.names, "") {
			return c.describeScram(ctx)
		}
		return nil
	default: // ips
		return c.describeQuotas(ctx)
	}
}

// describeResources prints the configs of the named entity, or of every
// entity of the type when none is named.
func (c *configsCmd) describeResources(ctx context.Context, entityType string, describeAll bool) error {
	var entities []string
	if len(c.names) > 0 {
		entities = c.names[:1]
	} else {
		var err error
		if entities, err = c.listEntities(ctx, entityType); err != nil {
			return err
		}
	}
	for _, name := range entities {
		configs, err := c.resourceConfigs(ctx, entityType, name, true, describeAll)
		if err != nil {
			return err
		}
		switch {
		case name == "" && entityType == typeBrokers:
			fmt.Fprintf(c.out, "Default configs for %s in the cluster are:\n", entityType)
		case describeAll:
			fmt.Fprintf(c.out, "All configs for %s %s are:\n", strings.TrimSuffix(entityType, "s"), name)
		default:
			fmt.Fprintf(c.out, "Dynamic configs for %s %s are:\n", strings.TrimSuffix(entityType, "s"), name)
		}
		for _, cfg := range configs {
			syns := make([]string, len(cfg.ConfigSynonyms))
			for i, s := range cfg.ConfigSynonyms {
				syns[i] = fmt.Sprintf("%s:%s=%s", javaConfigSource(s.Source), s.Name, strOrNull(s.Value))
			}
			fmt.Fprintf(c.out, "  %s=%s sensitive=%t synonyms={%s}\n", cfg.Name, strOrNull(cfg.Value), cfg.IsSensitive, strings.Join(syns, ", "))
		}
	}
	return nil
}

// listEntities is every entity of a type, as Kafka's tool lists them when
// --describe names none: topics with internal ones, each broker then the
// cluster default, the client-metrics resources, the groups.
func (c *configsCmd) listEntities(ctx context.Context, entityType string) ([]string, error) {
	var names []string
	switch entityType {
	case typeTopics:
		topics, err := c.adm.ListTopicsWithInternal(ctx)
		if err != nil {
			return nil, fmt.Errorf("list topics: %w", err)
		}
		names = topics.Names()
		sort.Strings(names)
	case typeBrokers:
		md, err := c.adm.BrokerMetadata(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe cluster: %w", err)
		}
		ids := md.Brokers.NodeIDs()
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			names = append(names, strconv.Itoa(int(id)))
		}
		names = append(names, "")
	case typeClientMetrics:
		res, err := c.adm.ListConfigResources(ctx, kmsg.ConfigResourceTypeClientMetrics)
		if err != nil {
			return nil, fmt.Errorf("list client-metrics resources: %w", err)
		}
		if res.Err != nil {
			return nil, fmt.Errorf("list client-metrics resources: %w", res.Err)
		}
		for _, r := range res.Resources {
			names = append(names, r.Name)
		}
		sort.Strings(names)
	case typeGroups:
		groups, err := c.adm.ListGroups(ctx)
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		names = groups.Groups()
		sort.Strings(names)
	}
	return names, nil
}

var quotaEntityTypes = map[string]string{typeUsers: "user", typeClients: "client-id", typeIPs: "ip"}

// quotaComponents is Kafka's filter: each type paired with its name (a
// default when ""), or any entity of the type when names run out.
func (c *configsCmd) quotaComponents() []kadm.DescribeClientQuotaComponent {
	var comps []kadm.DescribeClientQuotaComponent
	for i, t := range c.types {
		comp := kadm.DescribeClientQuotaComponent{Type: quotaEntityTypes[t], MatchType: 2}
		if i < len(c.names) {
			if c.names[i] == "" {
				comp.MatchType = 1
			} else {
				name := c.names[i]
				comp.MatchType, comp.MatchName = 0, &name
			}
		}
		comps = append(comps, comp)
	}
	return comps
}

func (c *configsCmd) describeQuotas(ctx context.Context) error {
	quotas, err := c.adm.DescribeClientQuotas(ctx, true, c.quotaComponents())
	if err != nil {
		return fmt.Errorf("describe client quotas: %w", err)
	}
	for _, q := range quotas {
		var entity []string
		for _, kind := range []struct{ typ, label string }{{"user", "user-principal"}, {"client-id", "client-id"}, {"ip", "ip"}} {
			for _, comp := range q.Entity {
				if comp.Type != kind.typ {
					continue
				}
				if comp.Name == nil {
					entity = append(entity, "the default "+kind.label)
				} else {
					entity = append(entity, fmt.Sprintf("%s '%s'", kind.label, *comp.Name))
				}
			}
		}
		values := make([]string, len(q.Values))
		for i, v := range q.Values {
			values[i] = v.Key + "=" + javaDouble(v.Value)
		}
		fmt.Fprintf(c.out, "Quota configs for %s are %s\n", strings.Join(entity, ", "), strings.Join(values, ", "))
	}
	return nil
}

// describeScram prints the SCRAM mechanisms and iteration counts of the
// named users, or of every user. A broker without a credential store
// (SECURITY_DISABLED) has no SCRAM users to show.
func (c *configsCmd) describeScram(ctx context.Context) error {
	described, err := c.adm.DescribeUserSCRAMs(ctx, c.names...)
	if errors.Is(err, kerr.SecurityDisabled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("describe user SCRAM credentials: %w", err)
	}
	for _, d := range described.Sorted() {
		if errors.Is(d.Err, kerr.ResourceNotFound) {
			continue // a named user without credentials: Kafka's Admin leaves it out
		}
		if d.Err != nil {
			fmt.Fprintf(c.out, "Error retrieving SCRAM credential configs for user-principal '%s': %v\n", d.User, brokerErr(d.Err, d.ErrMessage))
			continue
		}
		infos := make([]string, len(d.CredInfos))
		for i, ci := range d.CredInfos {
			infos[i] = fmt.Sprintf("%s=iterations=%d", ci.Mechanism, ci.Iterations)
		}
		fmt.Fprintf(c.out, "SCRAM credential configs for user-principal '%s' are %s\n", d.User, strings.Join(infos, ", "))
	}
	return nil
}

// brokerErr joins a kadm result's error and message.
func brokerErr(err error, msg string) error {
	var ke *kerr.Error
	if msg != "" && errors.As(err, &ke) {
		return fmt.Errorf("%s: %s", ke.Message, msg)
	}
	return err
}

// javaDouble formats f as Java's Double.toString does, which Kafka's tool
// prints quota values with: "1024.0", "1.048576E7".
func javaDouble(f float64) string {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	if f == 0 || (abs >= 1e-3 && abs < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // 1.048576E+07
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

func (c *configsCmd) alter(ctx context.Context, adds []configKV, deletes []string) error {
	typ, name := c.types[0], c.names[0]
	var err error
	switch typ {
	case typeTopics, typeBrokers, typeBrokerLoggers, typeClientMetrics, typeGroups:
		err = c.alterResource(ctx, typ, name, adds, deletes)
	case typeUsers, typeClients:
		err = c.alterUserOrClient(ctx, adds, deletes)
	case typeIPs:
		var unknown []string
		for _, kv := range adds {
			if !ipQuotaKeys[kv.key] {
				unknown = append(unknown, kv.key)
			}
		}
		for _, k := range deletes {
			if !ipQuotaKeys[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			return fmt.Errorf("Only connection quota configs can be added for '%s' using --bootstrap-server. Unexpected config names: %s", typeIPs, strings.Join(unknown, ","))
		}
		err = c.alterQuotas(ctx, adds, deletes)
	}
	if err != nil {
		return err
	}
	if name != "" {
		fmt.Fprintf(c.out, "Completed updating config for %s %s.\n", strings.TrimSuffix(typ, "s"), name)
	} else {
		fmt.Fprintf(c.out, "Completed updating default config for %s in the cluster.\n", typ)
	}
	return nil
}

// alterResource is Kafka's alterResourceConfig: deletions must name
// configs the resource sets (for loggers: loggers that exist), then one
// IncrementalAlterConfigs with SET and DELETE operations.
func (c *configsCmd) alterResource(ctx context.Context, typ, name string, adds []configKV, deletes []string) error {
	if typ == typeBrokerLoggers {
		current, err := c.resourceConfigs(ctx, typ, name, true, false)
		if err != nil {
			return err
		}
		loggers := map[string]bool{}
		for _, cfg := range current {
			loggers[cfg.Name] = true
		}
		var invalid []string
		for _, k := range deletes {
			if !loggers[k] {
				invalid = append(invalid, k)
			}
		}
		for _, kv := range adds {
			if !loggers[kv.key] {
				invalid = append(invalid, kv.key)
			}
		}
		if len(invalid) > 0 {
			return fmt.Errorf("Invalid broker logger(s): %s", strings.Join(invalid, ","))
		}
	} else if len(deletes) > 0 {
		current, err := c.resourceConfigs(ctx, typ, name, false, false)
		if err != nil {
			return err
		}
		set := map[string]bool{}
		for _, cfg := range current {
			set[cfg.Name] = true
		}
		var invalid []string
		for _, k := range deletes {
			if !set[k] {
				invalid = append(invalid, k)
			}
		}
		if len(invalid) > 0 {
			return fmt.Errorf("Invalid config(s): %s", strings.Join(invalid, ","))
		}
	}
	rt, _, _ := resourceType(typ, name)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = rt, name
	for _, kv := range adds {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = kv.key, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv.value)
		r.Configs = append(r.Configs, cfg)
	}
	for _, k := range deletes {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op = k, kmsg.IncrementalAlterConfigOpDelete
		r.Configs = append(r.Configs, cfg)
	}
	req.Resources = append(req.Resources, r)
	for _, shard := range c.cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			return fmt.Errorf("alter configs of %s %q: %w", strings.TrimSuffix(typ, "s"), name, shard.Err)
		}
		for _, res := range shard.Resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
			if err := brokerError(res.ErrorCode, res.ErrorMessage); err != nil {
				return fmt.Errorf("alter configs of %s %q: %w", strings.TrimSuffix(typ, "s"), name, err)
			}
		}
	}
	return nil
}

// alterUserOrClient sorts the changes into quotas and SCRAM credentials,
// with Kafka's checks on which an entity may take.
func (c *configsCmd) alterUserOrClient(ctx context.Context, adds []configKV, deletes []string) error {
	var quotaAdds, quotaDels, scramAdds, scramDels, unknownAdds, unknownDels []string
	for _, kv := range adds {
		switch {
		case userClientQuotaKeys[kv.key]:
			quotaAdds = append(quotaAdds, kv.key)
		case scramMechanisms[kv.key] != 0:
			scramAdds = append(scramAdds, kv.key)
		default:
			unknownAdds = append(unknownAdds, kv.key)
		}
	}
	for _, k := range deletes {
		switch {
		case userClientQuotaKeys[k]:
			quotaDels = append(quotaDels, k)
		case scramMechanisms[k] != 0:
			scramDels = append(scramDels, k)
		default:
			unknownDels = append(unknownDels, k)
		}
	}
	if c.types[0] == typeClients || len(c.types) == 2 {
		if len(unknownAdds)+len(scramAdds) > 0 {
			return fmt.Errorf("Only quota configs can be added for '%s' using --bootstrap-server. Unexpected config names: %s", typeClients, strings.Join(append(unknownAdds, scramAdds...), ","))
		}
		if len(unknownDels)+len(scramDels) > 0 {
			return fmt.Errorf("Only quota configs can be deleted for '%s' using --bootstrap-server. Unexpected config names: %s", typeClients, strings.Join(append(unknownDels, scramDels...), ","))
		}
	} else {
		if len(unknownAdds) > 0 {
			return fmt.Errorf("Only quota and SCRAM credential configs can be added for '%s' using --bootstrap-server. Unexpected config names: %s", typeUsers, strings.Join(unknownAdds, ","))
		}
		if len(unknownDels) > 0 {
			return fmt.Errorf("Only quota and SCRAM credential configs can be deleted for '%s' using --bootstrap-server. Unexpected config names: %s", typeUsers, strings.Join(unknownDels, ","))
		}
		if len(scramAdds)+len(scramDels) > 0 {
			if contains(c.names, "") {
				return errors.New("The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server.")
			}
			if len(quotaAdds)+len(quotaDels) > 0 {
				return fmt.Errorf("Cannot alter both quota and SCRAM credential configs simultaneously for '%s' using --bootstrap-server.", typeUsers)
			}
		}
	}
	if len(quotaAdds)+len(quotaDels) > 0 {
		return c.alterQuotas(ctx, adds, deletes)
	}
	return c.alterScram(ctx, c.names[0], adds, deletes)
}

// alterQuotas is Kafka's alterQuotaConfigs: deletions must name quotas the
// entity has; values are numbers; one AlterClientQuotas.
func (c *configsCmd) alterQuotas(ctx context.Context, adds []configKV, deletes []string) error {
	ops := make([]kadm.AlterClientQuotaOp, 0, len(adds)+len(deletes))
	for _, kv := range adds {
		v, err := strconv.ParseFloat(kv.value, 64)
		if err != nil {
			return fmt.Errorf("Cannot parse quota configuration value for %s: %s", kv.key, kv.value)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: kv.key, Value: v})
	}
	if len(deletes) > 0 {
		current, err := c.adm.DescribeClientQuotas(ctx, true, c.quotaComponents())
		if err != nil {
			return fmt.Errorf("describe client quotas: %w", err)
		}
		have := map[string]bool{}
		if len(current) > 0 {
			for _, v := range current[0].Values {
				have[v.Key] = true
			}
		}
		var invalid []string
		for _, k := range deletes {
			if !have[k] {
				invalid = append(invalid, k)
			}
			ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
		}
		if len(invalid) > 0 {
			return fmt.Errorf("Invalid config(s): %s", strings.Join(invalid, ","))
		}
	}
	var entity kadm.ClientQuotaEntity
	for i, t := range c.types {
		comp := kadm.ClientQuotaEntityComponent{Type: quotaEntityTypes[t]}
		if c.names[i] != "" {
			name := c.names[i]
			comp.Name = &name
		}
		entity = append(entity, comp)
	}
	res, err := c.adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
	if err != nil {
		return fmt.Errorf("alter client quotas: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("alter client quotas of %s: %w", r.Entity, brokerErr(r.Err, r.ErrMessage))
		}
	}
	return nil
}

var scramCredentialSyntax = regexp.MustCompile(`^(?:iterations=(-?[0-9]*),)?password=(.*)$`)

// alterScram upserts and deletes one user's SCRAM credentials.
func (c *configsCmd) alterScram(ctx context.Context, user string, adds []configKV, deletes []string) error {
	var dels []kadm.DeleteSCRAM
	for _, k := range deletes {
		dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: scramMechanisms[k]})
	}
	var ups []kadm.UpsertSCRAM
	for _, kv := range adds {
		m := scramCredentialSyntax.FindStringSubmatch(kv.value)
		if m == nil {
			return fmt.Errorf("Invalid credential property %s=%s", kv.key, kv.value)
		}
		iterations := scramDefaultIterations
		if m[1] != "" && m[1] != "-1" {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				return fmt.Errorf("Invalid credential property %s=%s", kv.key, kv.value)
			}
			iterations = n
		}
		if iterations < scramMinIterations {
			return fmt.Errorf("Iterations %d is less than the minimum %d required for %s", iterations, scramMinIterations, kv.key)
		}
		if m[2] == "" {
			return fmt.Errorf("Invalid credential property %s: the password is empty", kv.key)
		}
		up, err := saltedCredential(user, scramMechanisms[kv.key], iterations, m[2])
		if err != nil {
			return err
		}
		ups = append(ups, up)
	}
	res, err := c.adm.AlterUserSCRAMs(ctx, dels, ups)
	if err != nil {
		return fmt.Errorf("alter user SCRAM credentials: %w", err)
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			return fmt.Errorf("alter SCRAM credentials of user %s: %w", r.User, brokerErr(r.Err, r.ErrMessage))
		}
	}
	return nil
}

// saltedCredential salts a password as Kafka's Admin client does before
// AlterUserScramCredentials (RFC 5802's Hi(): PBKDF2 with the mechanism's
// hash and a random salt), so the password never leaves this process. The
// iteration count is the broker's to bound, as with Kafka's tool.
func saltedCredential(user string, mech kadm.ScramMechanism, iterations int, password string) (kadm.UpsertSCRAM, error) {
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		return kadm.UpsertSCRAM{}, err
	}
	h, size := sha256.New, sha256.Size
	if mech == kadm.ScramSha512 {
		h, size = sha512.New, sha512.Size
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, size)
	if err != nil {
		return kadm.UpsertSCRAM{}, fmt.Errorf("salt the %s password: %w", mech, err)
	}
	return kadm.UpsertSCRAM{User: user, Mechanism: mech, Iterations: int32(iterations), Salt: salt, SaltedPassword: salted}, nil
}
