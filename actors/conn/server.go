// Package conn is the Kafka listener and the connection actor: one actor per
// TCP connection decodes frames, dispatches each request to its API handler
// in arrival order, and writes responses in request order. Each API key
// lives in one file named by its key and name (00_produce.go, 01_fetch.go,
// ...; README.md lists them) holding its version range, its handler and its
// error response. A handler runs inside the connection actor's Receive and
// must not block: it routes the request (sending messages to partition,
// group or supervisor actors) and returns a Pending that a goroutine runs
// to gather the answer.
package conn

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/conn/fetchsession"
	"github.com/kaas-project/kaas/actors/connlimit"
	"github.com/kaas-project/kaas/actors/loggers"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/producerid"
	"github.com/kaas-project/kaas/actors/quota"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/telemetry"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/brokerconfig"
	"github.com/kaas-project/kaas/storage/clientmetrics"
	"github.com/kaas-project/kaas/storage/delegation"
	"github.com/kaas-project/kaas/storage/groupconfig"
	"github.com/kaas-project/kaas/storage/topicconfig"
	"github.com/kaas-project/kaas/wire"
	"github.com/kaas-project/kaas/wire/sasl"
)

// Pending produces a response; it runs on its own goroutine and may block.
// A nil response means "send nothing" (acks=0 produce).
type Pending func() kmsg.Response

// Ready wraps an already-built response.
func Ready(r kmsg.Response) Pending { return func() kmsg.Response { return r } }

// Request is one decoded request as handlers see it.
type Request struct {
	Header     wire.RequestHeader
	Body       kmsg.Request
	ClientHost string
	// MemberHost is ClientHost in the form Kafka's group coordinator
	// records (MemberHost), formatted once per connection.
	MemberHost string
	View       *routing.View
	Server     *Server
	// Session is who the connection authenticated as, and on which
	// listener (authorization reads it).
	Session Session
	// Conn is the connection's id, unique within this server: state a
	// client keeps per connection (share sessions) is dropped when
	// OnConnectionClosed reports it.
	Conn int64
	// Ctx carries the request's span while tracing is on (nil while off):
	// handlers pass it to the actors they ask (tracing.Wrap).
	Ctx context.Context
	// listener is the listener the request came in on.
	listener *Listener
	// Size is the request's encoded size in bytes (what the produce quota
	// meters, as Kafka does).
	Size int
	// throttle mutes the connection after this request's answer (a quota's
	// throttle time); set by the handler or its Pending, read once the
	// Pending has returned.
	throttle time.Duration
	// panicked: the handler, its authorization or its Pending panicked,
	// so an actor may still hold the request's bytes (the frame is not
	// reused).
	panicked bool
}

// CurrentView is the newest published View as this request's listener
// advertises it (handlers that answer after waiting use it instead of
// View).
func (r *Request) CurrentView() *routing.View {
	v := r.Server.Views().Load()
	if r.listener == nil {
		return v
	}
	return r.listener.view(v)
}

// Config configures the server.
type Config struct {
	// BrokerID is this broker's node id: it keeps the producer ids this
	// broker allocates apart from every other broker's.
	BrokerID       int32
	MaxRequestSize int32
	// MaxInFlight bounds pipelined requests per connection before the
	// reader stops reading (back-pressure).
	MaxInFlight int
	// IdleTimeout closes connections idle that long (connections.max.idle.ms).
	IdleTimeout time.Duration
	Log         zerolog.Logger
	// FetchSessionSlots bounds the incremental fetch sessions (KIP-227)
	// this broker keeps (max.incremental.fetch.session.cache.slots): 0 is
	// the default of 1000, negative offers none.
	FetchSessionSlots int
	// FetchSessionEvictAfter is how long a fetch session goes unused before
	// any new session may take its slot (default 2 minutes, Kafka's
	// min.incremental.fetch.session.eviction.ms).
	FetchSessionEvictAfter time.Duration
	// Clock tells the time fetch sessions are used at (nil: the wall clock).
	Clock clock.Clock
}

// Server is the Kafka listener plus the API table.
type Server struct {
	cfg    Config
	frames *wire.FramePool
	views  *routing.Store
	system *actorsys.System
	sup    actorsys.Ref

	mu   sync.RWMutex
	apis map[int16]API

	// AutoCreateTopics lets Metadata create unknown topics (set before Serve).
	AutoCreateTopics bool
	// DeleteTopicDisabled refuses DeleteTopics (Kafka's
	// delete.topic.enable=false; set before Serve).
	DeleteTopicDisabled bool
	// FetchMaxBytes caps a Fetch answer's records whatever the request
	// asks (Kafka's fetch.max.bytes; 0: its default of 55 MiB).
	FetchMaxBytes int
	// BrokerConfigs are the read-only broker configs DescribeConfigs reports,
	// by Kafka name.
	BrokerConfigs map[string]BrokerConfig
	// DataDir is the shared volume DescribeLogDirs reports as this broker's
	// one log dir; empty when partitions are kept in memory.
	DataDir string
	// Authorizer decides every request when set (--authorizer=acl); nil
	// allows everything.
	Authorizer *acl.Authorizer
	// ACLs is where CreateAcls and DeleteAcls write (KafkaAcl objects in
	// cluster mode, the local ACL store otherwise); nil refuses them.
	ACLs acl.Store
	// Quotas is the client-quota state Produce and Fetch record into and
	// DescribeClientQuotas answers from; QuotaStore is where
	// AlterClientQuotas writes (KafkaQuota objects in cluster mode, the
	// local quota file otherwise). NewServer sets both to memory only.
	Quotas     *quota.Quotas
	QuotaStore quota.Store
	// Clock measures quota rates and throttles (set before Serve).
	Clock clock.Clock
	// Delegation is the delegation-token settings (no secret key: tokens
	// disabled); DelegationTokens is their store (NewServer: memory).
	Delegation       delegation.Config
	DelegationTokens *delegation.Store
	// ScramUsers is where DescribeUserScramCredentials and
	// AlterUserScramCredentials read and write (KafkaUser objects in
	// cluster mode, the credentials file otherwise); nil refuses them.
	ScramUsers sasl.UserStore
	// GroupConfigs holds the GROUP config resources DescribeConfigs and
	// IncrementalAlterConfigs serve. NewServer sets it to memory only.
	GroupConfigs *groupconfig.Store
	// BrokerDynamic holds the dynamic broker configs (BROKER resources of
	// AlterConfigs and IncrementalAlterConfigs). NewServer sets it to
	// memory only.
	BrokerDynamic *brokerconfig.Store
	// DynamicInForce returns the dynamic broker configs this broker
	// follows (topic defaults in DescribeConfigs); nil: none. Set before
	// Serve.
	DynamicInForce func() brokerconfig.Set
	// Loggers are the broker's named loggers, the BROKER_LOGGER resource
	// of DescribeConfigs and IncrementalAlterConfigs. NewServer sets a
	// root logger alone, at INFO.
	Loggers *loggers.Levels
	// ClientMetrics holds the CLIENT_METRICS subscriptions (KIP-714;
	// NewServer: memory); Telemetry receives the clients' pushes, nil
	// unless the broker serves client telemetry (TelemetryAPIs).
	ClientMetrics *clientmetrics.Store
	Telemetry     *telemetry.Service

	producerIDs *producerid.Generator
	connSeq     atomic.Int64
	refusedAt   atomic.Int64 // monotonic ns since start of the last NOT_LEADER_OR_FOLLOWER answered
	started     time.Time
	conns       sync.WaitGroup
	live        sync.Map   // *connActor -> net.Conn
	evictMu     sync.Mutex // one closeExcessConnections at a time

	// ConnLimits applies the connection limits (set before Serve; nil:
	// none counted).
	ConnLimits *connlimit.Counter

	// SASLFailures limits failed SASL authentications per client address
	// (set before Serve; nil: no limit).
	SASLFailures *sasl.Limiter

	fetchSessions *fetchsession.Cache
	// guard supervises the connection actors (connStrategy).
	guard *actorsys.StopOnFailure
	// closedHooks run when a connection closes (OnConnectionClosed).
	closedHooks []func(conn int64)
	// VerifyTxn checks a transactional produce's partitions with the
	// transaction coordinator (KIP-890; set before Serve; nil: not
	// checked).
	VerifyTxn func(messages.VerifyTxn)
	// TxnOffsetsEnd hands a group's transaction marker from another
	// broker's transaction coordinator to this broker's group coordinator
	// (set before Serve; nil: answered COORDINATOR_NOT_AVAILABLE).
	TxnOffsetsEnd func(*messages.TxnOffsetsEnd)
}

// BrokerConfig is one read-only broker config: its value, Kafka's type for
// it and its documentation (DescribeConfigs v3+).
type BrokerConfig struct {
	Value string
	Type  topicconfig.Type
	Doc   string
}

// NewServer returns a server with the core APIs registered.
func NewServer(cfg Config, system *actorsys.System, views *routing.Store, supervisor actorsys.Ref) *Server {
	if cfg.MaxRequestSize <= 0 {
		cfg.MaxRequestSize = wire.DefaultMaxRequestSize
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 64
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if cfg.FetchSessionSlots == 0 {
		cfg.FetchSessionSlots = 1000
	}
	if cfg.FetchSessionEvictAfter <= 0 {
		cfg.FetchSessionEvictAfter = 2 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	s := &Server{cfg: cfg, frames: wire.NewFramePool(framePoolBudget), views: views, system: system, sup: supervisor, apis: map[int16]API{}, started: time.Now(),
		fetchSessions: fetchsession.New(fetchsession.Config{Slots: max(cfg.FetchSessionSlots, 0), EvictAfter: cfg.FetchSessionEvictAfter})}
	s.guard = connStrategy(s)
	s.producerIDs = producerid.New(cfg.BrokerID, cfg.Clock.Now)
	s.Quotas = quota.New(quota.DefaultWindow)
	s.QuotaStore, _ = quota.OpenLocal("", s.Quotas) // memory only: cannot fail
	s.GroupConfigs = groupconfig.NewMemory(nil)
	s.BrokerDynamic = brokerconfig.NewMemory()
	s.DelegationTokens = delegation.NewMemory()
	s.Loggers = loggers.New(zerolog.InfoLevel)
	s.ClientMetrics = clientmetrics.NewMemory()
	s.Clock = clock.Real()
	registerCore(s)
	return s
}

// FetchSessionStats reports the fetch sessions this broker keeps, the
// partitions they hold and the sessions evicted so far (metrics).
func (s *Server) FetchSessionStats() (sessions, partitions int, evictions int64) {
	st := s.fetchSessions.Stats()
	return st.Sessions, st.Partitions, st.Evictions
}

// OnConnectionClosed registers fn to be told the id (Request.Conn) of
// every connection that closes, whatever closed it. fn runs on the
// connection's actor and must not block. Call before Serve.
func (s *Server) OnConnectionClosed(fn func(conn int64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closedHooks = append(s.closedHooks, fn)
}

func (s *Server) connectionClosed(conn int64) {
	s.mu.RLock()
	hooks := s.closedHooks
	s.mu.RUnlock()
	for _, fn := range hooks {
		fn(conn)
	}
}

// Register adds or replaces an API. Call before Serve.
func (s *Server) Register(a API) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apis[a.Key] = a
}

func (s *Server) api(key int16) (API, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.apis[key]
	return a, ok
}

// APIs returns the served table, sorted by key (ApiVersions).
func (s *Server) APIs() []API {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]API, 0, len(s.apis))
	for _, a := range s.apis {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Views returns the routing store.
func (s *Server) Views() *routing.Store { return s.views }

// Supervisor returns the supervisor actor.
func (s *Server) Supervisor() actorsys.Ref { return s.sup }

// NextProducerID allocates a producer id, unique across the cluster's
// brokers and this broker's restarts (package producerid).
func (s *Server) NextProducerID() int64 { return s.producerIDs.Next() }

// Log returns the server's logger.
func (s *Server) Log() *zerolog.Logger { return &s.cfg.Log }

// Serve accepts connections on ln, a PLAINTEXT listener advertising the
// published addresses, until ctx is done or ln fails.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.ServeListener(ctx, ln, &Listener{Name: ProtocolPlaintext, SecurityProtocol: ProtocolPlaintext})
}

// ServeListener accepts connections on ln for listener l until ctx is done
// or ln fails.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener, l *Listener) error {
	if l.usesTLS() {
		if l.TLS == nil {
			return fmt.Errorf("listener %s: %s needs a TLS configuration", l.Name, l.SecurityProtocol)
		}
		ln = tls.NewListener(ln, l.TLS)
	}
	if l.usesSASL() && l.SASL == nil {
		return fmt.Errorf("listener %s: %s needs SASL mechanisms", l.Name, l.SecurityProtocol)
	}
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !transientAcceptError(err) {
				return err
			}
			if backoff == 0 {
				s.cfg.Log.Warn().Err(err).Str("listener", l.Name).Msg("accept failed; retrying with backoff until it succeeds")
			}
			backoff = acceptBackoff(backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			continue
		}
		backoff = 0
		if s.throttleConnection(c, l) {
			continue
		}
		ip, counted, err := s.admitConnection(ctx, c, l)
		if err != nil {
			return nil // ctx ended while the listener waited for a slot
		}
		if !counted && s.ConnLimits != nil {
			continue // refused for its address
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		id := s.connSeq.Add(1)
		s.conns.Add(1)
		if _, err := s.system.SpawnGuarded("conn/"+itoa(id), newConnActor(s, c, l, id, ip), s.guard); err != nil {
			s.cfg.Log.Error().Err(err).Msg("spawn connection actor")
			_ = c.Close()
			s.releaseConnection(l.Name, ip)
			s.conns.Done()
		}
	}
}

// admitConnection applies the connection limits (max.connections of the
// broker and the listener, max.connections.per.ip) to c, as Kafka's
// acceptor does: while the broker or the listener is full it holds c and
// accepts nothing more on l; an address at its limit has c closed at once
// (counted false). The error is ctx's, when it ends while l waits (c is
// closed). Without limits (ConnLimits nil) every connection is admitted
// uncounted.
func (s *Server) admitConnection(ctx context.Context, c net.Conn, l *Listener) (ip netip.Addr, counted bool, err error) {
	if s.ConnLimits == nil {
		return netip.Addr{}, false, nil
	}
	if ap, perr := netip.ParseAddrPort(c.RemoteAddr().String()); perr == nil {
		ip = ap.Addr().Unmap()
	}
	start := time.Now()
	err = s.ConnLimits.Acquire(ctx, l.Name, ip)
	if waited := time.Since(start); waited > time.Millisecond {
		metrics.AcceptBlocked(l.Name, waited)
	}
	switch {
	case errors.Is(err, connlimit.ErrTooManyFromAddress):
		s.cfg.Log.Info().Str("peer", ip.String()).Str("listener", l.Name).Err(err).Msg("rejected connection: its address is at max.connections.per.ip")
		metrics.ConnectionRefused(l.Name)
		_ = c.Close()
		return ip, false, nil
	case err != nil:
		_ = c.Close()
		return ip, false, err
	}
	if s.ConnLimits.Protects(l.Name) {
		s.closeExcessConnections()
	}
	return ip, true, nil
}

// releaseConnection uncounts a connection admitConnection counted.
func (s *Server) releaseConnection(listener string, ip netip.Addr) {
	if s.ConnLimits != nil {
		s.ConnLimits.Release(listener, ip)
	}
}

// SetConnectionLimits puts new connection limits in force (dynamic broker
// configs); if the broker now has more connections open than its limit,
// the least recently active ones of unprotected listeners are closed.
func (s *Server) SetConnectionLimits(l connlimit.Limits) {
	if s.ConnLimits == nil {
		return
	}
	s.ConnLimits.Set(l)
	s.closeExcessConnections()
}

// closeExcessConnections closes the least recently active connections of
// the unprotected listeners until the broker is within max.connections, as
// Kafka's processors close their lowest-priority channel while the broker
// is over it. Connections already closing count as closed.
func (s *Server) closeExcessConnections() {
	s.evictMu.Lock()
	defer s.evictMu.Unlock()
	excess := s.ConnLimits.Excess()
	if excess <= 0 {
		return
	}
	var open []*connActor
	s.live.Range(func(k, _ any) bool {
		a := k.(*connActor)
		if a.evicted.Load() {
			excess--
		} else if !s.ConnLimits.Protects(a.lst.Name) {
			open = append(open, a)
		}
		return true
	})
	slices.SortFunc(open, func(x, y *connActor) int { return cmp.Compare(x.lastActive.Load(), y.lastActive.Load()) })
	for _, a := range open[:max(0, min(excess, len(open)))] {
		a.evicted.Store(true)
		metrics.ConnectionEvicted(a.lst.Name)
		a.log.Info().Msg("closing the least recently active connection: the broker is over max.connections")
		go a.c.Close() // a TLS close may wait on its close_notify: not in the accept loop
	}
}

// throttleConnection applies the connection_creation_rate quota of c's
// address (KIP-612): over it, c is closed unserved once the throttle time
// has passed, as Kafka's acceptor does, and true is returned.
func (s *Server) throttleConnection(c net.Conn, l *Listener) bool {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return false
	}
	d := s.Quotas.RecordConnection(host, s.Clock.Now())
	if d <= 0 {
		return false
	}
	metrics.QuotaThrottled(quota.Connection.String(), d)
	s.cfg.Log.Debug().Str("peer", host).Str("listener", l.Name).Dur("throttle", d).Msg("connection over its ip's connection_creation_rate: closed")
	s.Clock.AfterFunc(d, func() { _ = c.Close() })
	return true
}

// transientAcceptError: the listener itself is fine and a later Accept
// may succeed. Out of descriptors (EMFILE, ENFILE) is the case that
// matters: a broker at its open-file limit must keep its listener and
// accept again once connections or partitions free some.
func transientAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// acceptBackoff is the wait after a failed Accept that followed a wait of
// prev (0: the first failure): 5 ms, doubling up to a second.
func acceptBackoff(prev time.Duration) time.Duration {
	if prev <= 0 {
		return 5 * time.Millisecond
	}
	return min(2*prev, time.Second)
}

// CloseConnections closes every open client connection (shutdown).
func (s *Server) CloseConnections() {
	s.live.Range(func(k, v any) bool {
		_ = v.(net.Conn).Close()
		return true
	})
}

// Wait waits for every connection actor to finish.
func (s *Server) Wait() { s.conns.Wait() }

func itoa(i int64) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			break
		}
	}
	return string(b[n:])
}

var _ actor.Actor = (*connActor)(nil)

// noteRefusal records that a Produce or Fetch answer refused a partition
// (NOT_LEADER_OR_FOLLOWER) now.
func (s *Server) noteRefusal(refused bool) {
	if refused {
		s.refusedAt.Store(int64(time.Since(s.started)) + 1)
	}
}

// SinceRefusal is how long ago a Produce or Fetch answer last refused a
// partition because it is led elsewhere (or moving); ok is false if none
// ever did. A drained broker waits until clients have stopped asking it
// for the partitions it gave away (cmd/kaas drain).
func (s *Server) SinceRefusal() (d time.Duration, ok bool) {
	at := s.refusedAt.Load()
	if at == 0 {
		return 0, false
	}
	return time.Since(s.started) - time.Duration(at-1), true
}
