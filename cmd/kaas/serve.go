package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"golang.org/x/term"
	"google.golang.org/grpc"
	"k8s.io/client-go/dynamic"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/cluster"
	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/connlimit"
	"github.com/kaas-project/kaas/actors/group"
	"github.com/kaas-project/kaas/actors/interbroker"
	"github.com/kaas-project/kaas/actors/loggers"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/actors/quota"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/share"
	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/actors/telemetry"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/clientmetrics"
	"github.com/kaas-project/kaas/storage/disklog"
	"github.com/kaas-project/kaas/storage/faultlog"
	"github.com/kaas-project/kaas/storage/memlog"
	"github.com/kaas-project/kaas/storage/topicconfig"
	"github.com/kaas-project/kaas/wire/sasl"
)

// newLogger is the base every logger of the broker derives from: it writes
// every level, and each named logger (b.loggers) drops what is below its
// own level.
func newLogger(cfg *serveConfig, w io.Writer) zerolog.Logger {
	// Millisecond timestamps: handoffs and failovers are read off the logs
	// in tens of milliseconds.
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	var out io.Writer = w
	if cfg.LogFormat == "console" {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !colorTerminal(w, os.Getenv)}
	}
	return zerolog.New(out).Level(zerolog.TraceLevel).Hook(tracing.LogHook{}).With().Timestamp().Logger()
}

// colorTerminal reports whether console logs to w get colours: only on a
// terminal, so a log redirected to a file or a pipe holds no escape codes,
// and not when NO_COLOR is set (no-color.org).
func colorTerminal(w io.Writer, getenv func(string) string) bool {
	f, ok := w.(*os.File)
	return ok && getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}

// partitionLog is the partition actors' logger (their lines carry topic
// and partition).
func (b *broker) partitionLog() zerolog.Logger { return b.loggers.Logger("kaas.partition", b.baseLog) }

// logger is the named logger kaas.<value> (a broker logger operators set
// the level of), its lines carrying key=value.
func (b *broker) logger(key, value string) zerolog.Logger {
	return b.loggers.Logger("kaas."+value, b.baseLog.With().Str(key, value).Logger())
}

// broker is one running kaas process's parts.
type broker struct {
	cfg *serveConfig
	// log is the root logger; baseLog the base of every named one
	// (loggers).
	log      zerolog.Logger
	baseLog  zerolog.Logger
	loggers  *loggers.Levels
	system   *actorsys.System
	views    *routing.Store
	sup      actorsys.Ref
	srv      *conn.Server
	kafkaLn  net.Listener   // the first (primary) listener
	extraLns []net.Listener // the other listeners, in --listeners order
	sec      *security
	httpLn   net.Listener
	ready    atomic.Bool
	stopOnce sync.Once
	hbLn     net.Listener
	fence    *cluster.Fence     // cluster mode: self-fencing clock
	groups   *group.Coordinator // consumer-group coordinator (nil if it failed to start)
	share    *share.Keeper      // share-partition keeper (nil if it failed to start)
	// peers are the Kafka clients to the other brokers' published
	// listeners (transaction markers, share-partition end offsets).
	peers    *interbroker.Clients
	grpc     *grpc.Server
	opener   storage.Opener     // closed last (disklog keeps a descriptor on the volume for syncfs)
	faults   *faultlog.Injector // --debug-chaos: fsync faults of the partitions' storage
	stopping atomic.Bool        // shutdown began: deaths of essential actors are expected
	// unlockDataDir releases a local broker's lock on its data dir, after
	// the storage is closed.
	unlockDataDir func()
	// handoffs counts the partition opens and closes running
	// (runHandoff): stop waits for them before it returns, since an open
	// that outlives its stopped actor still creates the partition's files.
	handoffs atomic.Int64
	dyn      dynamic.Interface // cluster mode: KafkaTopic and KafkaAcl objects
	// telemetry holds what clients pushed (--client-telemetry), for /metrics.
	telemetry *telemetry.Sink
	// brokerCfgs are the static broker configs (flags), dynCfgs the
	// dynamic ones this broker follows.
	brokerCfgs map[string]conn.BrokerConfig
	dynCfgs    *dynamicConfigs
}

// openStorage chooses the log engine: in memory without --data-dir. faults
// (--debug-chaos; nil otherwise) reaches the disk engine's fsyncs.
func openStorage(cfg *serveConfig, faults *faultlog.Injector, log zerolog.Logger) (storage.Opener, supervisor.Registry, []supervisor.TopicRecord, error) {
	if cfg.DataDir == "" {
		return memlog.NewOpener(), nil, nil, nil
	}
	var opts []disklog.Option
	if faults != nil {
		opts = append(opts, disklog.WithFsyncHook(faults.Fsync))
	}
	return openDiskStorage(cfg.DataDir, cfg.syncMode, log, opts...)
}

// applyDeleteDelay gives the disk engine the broker's default
// file.delete.delay.ms in force (log.segment.delete.delay.ms, a flag's or
// a dynamic broker config's): as on Kafka, the delay before a deleted
// topic's partition directories are deleted.
func (b *broker) applyDeleteDelay() {
	if o, ok := b.opener.(*disklog.Opener); ok {
		o.SetDeleteDelay(topicconfig.LogConfig(b.dynCfgs.TopicDefaults()).FileDeleteDelay)
	}
}

// startBroker binds the listeners and starts the actor system, a local
// broker on a data dir once it holds the dir's lock. It returns once the
// broker accepts connections.
func startBroker(ctx context.Context, cfg *serveConfig, logOut io.Writer) (*broker, error) {
	unlock, err := lockLocalDataDir(cfg)
	if err != nil {
		return nil, err
	}
	b, err := bootBroker(ctx, cfg, logOut)
	if err != nil {
		unlock()
		return nil, err
	}
	b.unlockDataDir = unlock
	return b, nil
}

// bootBroker is startBroker past the data dir's lock.
func bootBroker(ctx context.Context, cfg *serveConfig, logOut io.Writer) (*broker, error) {
	b := &broker{cfg: cfg, baseLog: newLogger(cfg, logOut), loggers: loggers.New(cfg.level), views: &routing.Store{}}
	b.log = b.loggers.Logger(loggers.Root, b.baseLog)
	if cfg.DebugChaos {
		b.faults = faultlog.New(nil, nil)
	}
	opener, registry, initial, err := openStorage(cfg, b.faults, b.logger("component", "disklog"))
	if err != nil {
		return nil, err
	}
	b.opener = opener
	if b.sec, err = openSecurity(cfg, b.log); err != nil {
		return nil, err
	}
	go b.sec.refreshJWKS(ctx, cfg, b.log)
	if err := b.listen(cfg); err != nil {
		return nil, err
	}
	if cfg.HTTPAddr != "" {
		b.httpLn, err = net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			b.closeKafkaListeners()
			return nil, fmt.Errorf("listen on --http-addr %s: %w", cfg.HTTPAddr, err)
		}
	}
	b.system = actorsys.NewSystem()
	b.brokerCfgs = brokerConfigs(cfg)
	b.dynCfgs = newDynamicConfigs(cfg, b.brokerCfgs, b.logger("component", "broker-configs"))
	partOpener := b.chaosStorage(opener)
	if cfg.clusterMode() {
		err = b.startCluster(cfg, partOpener)
	} else {
		err = b.startLocal(cfg, partOpener, registry, initial)
	}
	auth, aclStore, aclErr := b.startACLs(ctx, cfg, b.dyn)
	if err == nil && aclErr != nil {
		err = fmt.Errorf("authorizer: %w", aclErr)
	}
	var quotas *quota.Quotas
	var quotaStore quota.Store
	if err == nil {
		if quotas, quotaStore, err = b.startQuotas(ctx, cfg, b.dyn); err != nil {
			err = fmt.Errorf("client quotas: %w", err)
		}
	}
	var scramUsers sasl.UserStore
	if err == nil {
		if scramUsers, err = b.startScramUsers(ctx, cfg, b.dyn); err != nil {
			err = fmt.Errorf("SCRAM users: %w", err)
		}
	}
	if err != nil {
		b.closeKafkaListeners()
		if b.httpLn != nil {
			_ = b.httpLn.Close()
		}
		b.system.Shutdown()
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	for b.views.Load() == nil {
		time.Sleep(time.Millisecond)
	}
	b.srv = conn.NewServer(conn.Config{BrokerID: int32(cfg.BrokerID), MaxRequestSize: int32(cfg.MaxRequestSize), Log: b.loggers.Logger("kaas.conn", b.baseLog), FetchSessionSlots: fetchSessionSlots(cfg.FetchSessionSlots), IdleTimeout: cfg.ConnectionsMaxIdle}, b.system, b.views, b.sup)
	b.srv.AutoCreateTopics = cfg.AutoCreateTopics
	b.srv.DeleteTopicDisabled = !cfg.DeleteTopicEnable
	b.srv.FetchMaxBytes = cfg.FetchMaxBytes
	listeners := listenerNames(b)
	b.srv.ConnLimits = connlimit.New(connlimit.None(), len(listeners), quota.Window{Samples: cfg.QuotaWindowNum, Size: cfg.QuotaWindowSize}, nil)
	b.dynCfgs.followConnectionLimits(connectionLimits(cfg, listeners, b.srv, b.logger("component", "connection-limits")))
	b.srv.Loggers = b.loggers
	b.srv.DataDir = cfg.DataDir
	if cfg.DataDir != "" {
		b.srv.ClientMetrics = clientmetrics.NewFile(filepath.Join(cfg.DataDir, clusterDir))
	}
	if cfg.ClientTelemetry {
		b.telemetry = telemetry.NewSink()
		b.srv.Telemetry = telemetry.New(cfg.TelemetryMaxBytes, b.telemetry)
		for _, a := range conn.TelemetryAPIs() {
			b.srv.Register(a)
		}
	}
	b.srv.Authorizer, b.srv.ACLs = auth, aclStore
	b.srv.Quotas, b.srv.QuotaStore = quotas, quotaStore
	b.srv.ScramUsers = scramUsers
	b.srv.BrokerConfigs = b.brokerCfgs
	b.srv.BrokerDynamic, b.srv.DynamicInForce = b.dynCfgs.store, b.dynCfgs.Set
	b.dynCfgs.onTopicDefaults = func() {
		b.applyDeleteDelay()
		b.sup.Send(&messages.BrokerDefaultsChanged{})
	}
	b.applyDeleteDelay()
	go b.dynCfgs.run(ctx, clock.Real(), time.Second)
	b.srv.SASLFailures = b.sec.limiter
	b.srv.Delegation, b.srv.DelegationTokens = b.sec.tokenCfg, b.sec.tokens
	b.srv.GroupConfigs = groupConfigStore(cfg)
	// Requests to other brokers go over the first listener's protocol.
	b.peers = &interbroker.Clients{ClientOpts: b.sec.interBrokerClientOpts(cfg)}
	registerGroups(b)
	registerTransactions(b)
	registerShare(b)
	b.watchEssential("supervisor", b.sup)
	if b.groups != nil {
		b.watchEssential("group coordinator", b.groups.Ref())
	}
	for i, ln := range append([]net.Listener{b.kafkaLn}, b.extraLns...) {
		l := b.sec.settings[i]
		go func() {
			if err := b.srv.ServeListener(ctx, ln, l); err != nil {
				b.log.Error().Err(err).Str("listener", l.Name).Msg("kafka listener stopped")
			}
		}()
	}
	if b.httpLn != nil {
		go b.serveHTTP(ctx)
	}
	b.ready.Store(true)
	mode := "local"
	if cfg.clusterMode() {
		mode = "cluster"
	}
	b.log.Info().Str("kafka_addr", b.kafkaLn.Addr().String()).Str("advertised", net.JoinHostPort(cfg.advHost, strconv.Itoa(int(cfg.advPort)))).
		Str("data_dir", cfg.DataDir).Str("mode", mode).Str("authorizer", cfg.Authorizer).Int("broker_id", cfg.BrokerID).Str("version", version).Msg("kaas started")
	return b, nil
}

// startLocal spawns the local-dev supervisor (the always-leader shim).
func (b *broker) startLocal(cfg *serveConfig, opener storage.Opener, registry supervisor.Registry, initial []supervisor.TopicRecord) error {
	var err error
	self := routing.Broker{ID: int32(cfg.BrokerID), Name: "kaas-" + strconv.Itoa(cfg.BrokerID), Host: cfg.advHost, Port: cfg.advPort, Rack: cfg.rack(), Alive: true, Listeners: cfg.publishedListeners()}
	b.sup, err = b.system.Spawn("supervisor", supervisor.NewLocal(supervisor.LocalConfig{
		ClusterID: cfg.ClusterID,
		Self:      self,
		Store:     b.views,
		Opener:    opener,
		Partition: partition.Config{Opener: opener, Log: b.partitionLog(), Cleaner: b.cleaner(cfg), MaintenanceInterval: cfg.RetentionCheckInterval, RunHandoff: b.runHandoff,
			ProducerExpiration: b.dynCfgs.ProducerExpiration},
		DefaultPartitions: int32(cfg.DefaultPartitions),
		TopicDefaults:     b.dynCfgs.TopicDefaults,
		Initial:           initial,
		Registry:          registry,
		Log:               b.logger("actor", "supervisor"),
	}))
	return err
}

// shutdown stops accepting, closes client connections, then stops the
// supervisor so every partition flushes and closes its files.
func (b *broker) shutdown() { b.stopOnce.Do(b.stop) }

func (b *broker) stop() {
	b.stopping.Store(true)
	b.ready.Store(false)
	b.closeKafkaListeners()
	b.srv.CloseConnections()
	if b.share != nil {
		// Its Stopping handler ends its state writer, after what is pending.
		if err := b.share.Ref().PoisonWait(30 * time.Second); err != nil {
			b.log.Error().Err(err).Msg("share-partition keeper stop")
		}
	}
	if err := b.sup.PoisonWait(30 * time.Second); err != nil {
		b.log.Error().Err(err).Msg("supervisor stop")
	}
	if b.grpc != nil {
		b.grpc.Stop()
	}
	if b.httpLn != nil {
		_ = b.httpLn.Close()
	}
	b.system.Shutdown()
	b.waitHandoffs(30 * time.Second)
	if b.peers != nil {
		b.peers.Close()
	}
	if c, ok := b.opener.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			b.log.Error().Err(err).Msg("close storage")
		}
	}
	if b.unlockDataDir != nil {
		b.unlockDataDir()
	}
	b.log.Info().Msg("kaas stopped")
}

// runHandoff runs a partition's open or close on the handoff pool,
// counted in b.handoffs.
func (b *broker) runHandoff(fn func()) {
	b.handoffs.Add(1)
	actorsys.HandoffPool().Schedule(func() {
		defer b.handoffs.Add(-1)
		fn()
	})
}

// waitHandoffs waits up to timeout for the opens and closes still running:
// the partition actors are stopped, but an open they started goes on
// creating files on the volume (a test's cleanup, or the next broker
// process on the same data dir, would race with it).
func (b *broker) waitHandoffs(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for b.handoffs.Load() > 0 {
		if time.Now().After(deadline) {
			b.log.Warn().Int64("running", b.handoffs.Load()).Dur("waited", timeout).Msg("partition opens and closes still running at stop")
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func serve(ctx context.Context, cfg *serveConfig, logOut io.Writer) error {
	// The listeners outlive the signal: during a drain, clients still reach
	// the partitions not yet moved, and /readyz (503), /healthz and /metrics
	// still answer. stop closes them.
	life, endLife := context.WithCancel(context.WithoutCancel(ctx))
	defer endLife()
	stopTracing, traced, err := startTracing(life)
	if err != nil {
		return err
	}
	defer stopTracing()
	b, err := startBroker(life, cfg, logOut)
	if err != nil {
		return err
	}
	if traced {
		b.log.Info().Msg("tracing on: exporting spans over OTLP as the OTEL_* environment says")
	}
	<-ctx.Done()
	if cfg.clusterMode() {
		b.drain(cfg.DrainTimeout)
	}
	b.log.Info().Msg("shutting down")
	b.shutdown()
	return nil
}

// A drained broker stays up, once the controller has its report listing
// nothing, until it has applied the file that gives its last partitions to
// their next leaders and no client has been refused a partition for
// refusalQuiet (clients still retrying here get a hint naming the new
// leader, not a refused connection), at most handOffWait.
const (
	refusalQuiet = 300 * time.Millisecond
	handOffWait  = 2 * time.Second
)

// handedOn reports whether a drained broker whose report the controller has
// had for sinceReport may exit: held of its partitions are still waiting
// for the file that grants them on here, and a client was last refused
// sinceRefusal ago (refused: ever).
func handedOn(held int, refused bool, sinceRefusal, sinceReport time.Duration) bool {
	quiet := !refused || sinceRefusal >= refusalQuiet
	return held == 0 && quiet || sinceReport > handOffWait
}

// drain turns readiness off, asks the controller (through the heartbeat's
// draining flag) to move every partition and group away, and waits until
// this broker leads nothing, the controller knows it, and its partitions'
// clients have been sent on (handedOn), or the timeout passes.
func (b *broker) drain(timeout time.Duration) {
	b.ready.Store(false)
	start := time.Now()
	b.sup.Send(&supervisor.Drain{})
	var reportFrom time.Time    // set once nothing is open any more
	var reportedAt time.Time    // set once the controller has that report
	var handedOff time.Duration // since start, once the file giving the last partitions on is applied
	for time.Since(start) < timeout {
		if !reportFrom.IsZero() && b.fence.ExchangedSince(reportFrom) {
			// The controller has a ping listing nothing: it can hand the
			// last partitions on without waiting for dead-after. Stay
			// until this broker has applied the file that does, and while
			// clients are still refused here (bounded): their NOT_LEADER
			// answers carry hints naming the new leaders (KIP-951). After
			// the exit they would get a refused connection and a metadata
			// refresh instead, which franz-go at its defaults spaces 5 s
			// apart.
			if reportedAt.IsZero() {
				reportedAt = time.Now()
			}
			v := b.views.Load()
			held := v.HeldFromBroker(v.Self)
			if held == 0 && handedOff == 0 {
				handedOff = time.Since(start)
			}
			since, refused := b.srv.SinceRefusal()
			if handedOn(held, refused, since, time.Since(reportedAt)) {
				b.log.Info().Dur("took", time.Since(start)).Dur("handed_off", handedOff).Dur("hand_off_wait", time.Since(reportedAt)).
					Int("still_held", held).Bool("refused_recently", refused && since < refusalQuiet).Msg("drained")
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if v := b.views.Load(); reportFrom.IsZero() && len(v.Local) == 0 && groupsLed(b) == 0 {
			type open struct {
				n    int
				from time.Time
			}
			reply := make(chan open, 1)
			b.sup.Send(&supervisor.OpenPartitions{Reply: func(n int, from time.Time) { reply <- open{n, from} }})
			if r := <-reply; r.n == 0 {
				reportFrom = r.from
				continue
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	v := b.views.Load()
	b.log.Warn().Dur("timeout", timeout).Int("partitions_led", len(v.Local)).Int("groups_led", groupsLed(b)).Msg("drain timed out")
}

// health is the /healthz body.
type health struct {
	Status            string `json:"status"`
	Role              string `json:"role"`
	BrokerID          int32  `json:"broker_id"`
	Epoch             int64  `json:"epoch"`
	AssignmentVersion int64  `json:"assignment_version"`
	PartitionsLed     int    `json:"partitions_led"`
	GroupsLed         int    `json:"groups_led"`
	Topics            int    `json:"topics"`
	// Cordoned: cordoned.log.dirs in force cordons this broker's log dir.
	Cordoned bool `json:"cordoned,omitempty"`
	// Cleaner is the log cleaner's state of each compacted partition led here.
	Cleaner []metrics.CleanerState `json:"cleaner,omitempty"`
}

func (b *broker) serveHTTP(ctx context.Context) {
	mux := http.NewServeMux()
	if b.cfg.DebugPprof {
		// Go's profiler on the admin port (goroutine dumps, CPU and
		// execution traces of a live broker): off by default, since it
		// exposes memory contents and costs CPU to anyone reaching the port.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	b.registerChaos(mux)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		v := b.views.Load()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(health{Status: "ok", Role: v.Role, BrokerID: v.Self, Epoch: v.Epoch,
			AssignmentVersion: v.Version, PartitionsLed: v.TopicPartitionsLed(), GroupsLed: groupsLed(b), Topics: len(v.Topics),
			Cordoned: b.dynCfgs.Cordoned(), Cleaner: metrics.Cleaners()})
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.ready.Load() {
			http.Error(w, "not ready: starting or draining", http.StatusServiceUnavailable)
			return
		}
		pong := make(chan struct{})
		b.sup.Send(&supervisor.Ping{Reply: func() { close(pong) }})
		deadline := time.After(2 * time.Second)
		select {
		case <-pong:
		case <-deadline:
			http.Error(w, "not ready: supervisor does not answer", http.StatusServiceUnavailable)
			return
		}
		// Every partition assigned to this broker must be open.
		v := b.views.Load()
		open := make(chan bool, len(v.Local))
		for _, ref := range v.Local {
			ref.Send(&messages.PartitionStatus{Reply: func(st messages.PartitionStatusResult) { open <- st.Leading }})
		}
		for i := 0; i < len(v.Local); i++ {
			select {
			case ok := <-open:
				if !ok {
					http.Error(w, "not ready: a led partition is still opening", http.StatusServiceUnavailable)
					return
				}
			case <-deadline:
				http.Error(w, "not ready: partitions do not answer", http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	reg := metrics.NewRegistry(metrics.View{
		PartitionsLed:     func() int { return b.views.Load().TopicPartitionsLed() },
		Topics:            func() int { return len(b.views.Load().Topics) },
		GroupSlotsServed:  func() int { return b.views.Load().GroupSlotsServed() },
		ControllerEpoch:   func() int64 { return b.views.Load().Epoch },
		AssignmentVersion: func() int64 { return b.views.Load().Version },
		DiskFsyncs:        disklog.Fsyncs,
		CommittedOffsets:  func() []metrics.CommittedOffset { return committedOffsets(b) },
		Partitions: func() map[metrics.TopicPartition]metrics.PartitionStats {
			return ledPartitionStats(b.views.Load(), partitionScrapeTimeout)
		},
		Volume:        dataVolume(b.cfg.DataDir),
		FetchSessions: b.srv.FetchSessionStats,
		Listeners:     listenerNames(b),
		Connections:   func(l string) int { _, n := b.srv.ConnLimits.Open(l); return n },
		ShareSessions: func() (open, evicted int64) {
			if b.share == nil {
				return 0, 0
			}
			return b.share.Sessions()
		},
		ShareDeadLetters: func() (written, failed int64) {
			if b.share == nil {
				return 0, 0
			}
			return b.share.DeadLetters()
		},
		Brokers: func() (alive, fenced int) {
			for _, br := range b.views.Load().Brokers {
				switch {
				case br.Fenced:
					fenced++
				case br.Alive:
					alive++
				}
			}
			return alive, fenced
		},
	})
	if b.telemetry != nil {
		reg.MustRegister(b.telemetry)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: promLog{b.log}}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(b.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		b.log.Error().Err(err).Msg("http server stopped")
	}
}

// promLog reports /metrics gathering errors through the broker's logger.
type promLog struct{ log zerolog.Logger }

func (l promLog) Println(v ...any) { l.log.Error().Msg(fmt.Sprint(v...)) }

var _ = os.Stderr

// fetchSessionSlots turns --fetch-session-cache-slots into conn.Config's
// form, where 0 is the default and a negative count offers none.
func fetchSessionSlots(flag int) int {
	if flag == 0 {
		return -1
	}
	return flag
}

// listenerNames are the broker's Kafka listeners, the inter-broker one
// first.
func listenerNames(b *broker) []string {
	names := make([]string, len(b.sec.settings))
	for i, l := range b.sec.settings {
		names[i] = l.Name
	}
	return names
}
