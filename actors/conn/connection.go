package conn

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/trace"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/wire"
)

// inbound is a decoded frame from the reader goroutine.
type inbound struct {
	hdr  wire.RequestHeader
	body []byte
	// frame is the pooled buffer body lies in (frames.go says when it
	// goes back to the pool).
	frame []byte
	read  time.Time // when the frame was read (request latency starts here)
}

// answered is a finished response from a Pending goroutine.
type answered struct {
	seq  uint64
	hdr  wire.RequestHeader
	resp kmsg.Response
	// version overrides the encoding version (ApiVersions' v0 fallback).
	version int16
	read    time.Time
	span    trace.Span // the request's span; nil while tracing is off
	// throttle mutes the connection once this answer is written (a
	// quota's throttle time, KIP-219).
	throttle time.Duration
	// silent: an acks=0 Produce, whose resp is counted, never written;
	// when it failed the connection closes in its place.
	silent bool
}

// readerDone reports the reader goroutine's end.
type readerDone struct{ err error }

type connActor struct {
	srv  *Server
	c    net.Conn
	id   int64 // Request.Conn
	log  zerolog.Logger
	host string
	// memberHost is host as group members record it (MemberHost).
	memberHost string

	nextSeq uint64 // next request sequence number
	sendSeq uint64 // next sequence to write
	done    map[uint64]answered
	out     chan outFrame // to the writer goroutine
	credits chan struct{}
	// stopped closes when the actor stops: a reader waiting for a credit
	// (requests read but never served, as on a connection closing after a
	// failed authentication) returns rather than wait for ever.
	stopped chan struct{}
	closing bool
	// hungUp: an acks=0 Produce failed; nothing after it is answered.
	hungUp   bool
	writerOK chan struct{}

	// mutedUntil (unix ns on the server's clock) is when the reader may
	// read the next request: a throttled client's connection is muted
	// after its answer, as Kafka mutes the channel (KIP-219).
	mutedUntil atomic.Int64

	lst *Listener
	// ip is the address the connection limits counted it under (the zero
	// address when they did not count it).
	ip netip.Addr
	// lastActive (unix ns) is when the last request was read, or the
	// connection accepted: the least recently active go first when the
	// broker is over max.connections. evicted marks one closed for that.
	lastActive atomic.Int64
	evicted    atomic.Bool
	// session is the client's principal, listener and host (the
	// authorizer's input).
	session Session
	auth    saslState
}

func newConnActor(s *Server, c net.Conn, lst *Listener, id int64, ip netip.Addr) func() actor.Actor {
	return func() actor.Actor {
		host, port, _ := net.SplitHostPort(c.RemoteAddr().String())
		a := &connActor{
			srv:        s,
			c:          c,
			id:         id,
			host:       host,
			memberHost: MemberHost(host),
			log:        s.cfg.Log.With().Str("peer", c.RemoteAddr().String()).Str("listener", lst.Name).Logger(),
			done:       map[uint64]answered{},
			lst:        lst,
			session:    Session{Principal: AnonymousPrincipal, Listener: lst.Name, SecurityProtocol: lst.SecurityProtocol, ClientHost: host, ClientPort: port},
			ip:         ip,
		}
		a.lastActive.Store(time.Now().UnixNano())
		return a
	}
}

func (a *connActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.srv.live.Store(a, a.c)
		a.out = make(chan outFrame, a.srv.cfg.MaxInFlight)
		a.credits = make(chan struct{}, a.srv.cfg.MaxInFlight)
		a.stopped = make(chan struct{})
		a.writerOK = make(chan struct{})
		self, system := ctx.Self(), ctx.ActorSystem()
		go a.read(func(msg any) { system.Root.Send(self, msg) })
		go a.write()
	case *tlsReady:
		if !a.lst.usesSASL() && m.principal != "" {
			a.session.Principal = m.principal
			a.log.Debug().Str("principal", m.principal).Msg("TLS client certificate verified")
		}
	case *inbound:
		if a.closing {
			return // refused (failed authentication): nothing more is served
		}
		if a.auth.waiting {
			a.auth.held = append(a.auth.held, m) // after the SaslAuthenticate that waits
			return
		}
		a.dispatch(ctx, m)
	case *saslResume:
		a.resumeSASL(ctx, m)
	case *saslFailed:
		a.writeSASL(ctx, m.seq, m.hdr, m.resp, m.read, true)
	case *answered:
		a.done[m.seq] = *m
		a.flush()
		if a.closing && (a.sendSeq == a.nextSeq || a.hungUp) {
			ctx.Stop(ctx.Self())
		}
	case *readerDone:
		if m.err != nil && !errors.Is(m.err, io.EOF) && !errors.Is(m.err, net.ErrClosed) {
			a.log.Warn().Err(m.err).Msg("closing connection")
		}
		a.closing = true
		if a.sendSeq == a.nextSeq {
			ctx.Stop(ctx.Self())
		}
	case *actor.Stopping:
		close(a.stopped)
		for _, d := range a.done {
			if fr, ok := d.resp.(*fetchResponse); ok {
				fr.release()
			}
		}
		close(a.out)
		<-a.writerOK
		_ = a.c.Close()
		a.srv.live.Delete(a)
		a.srv.releaseConnection(a.lst.Name, a.ip)
		a.srv.connectionClosed(a.id)
		a.srv.conns.Done()
	}
}

// read runs on its own goroutine: frames in, back-pressured by credits.
func (a *connActor) read(send func(any)) {
	if tc, ok := a.c.(*tls.Conn); ok {
		principal, err := a.handshake(tc)
		if err != nil {
			a.log.Warn().Err(err).Msg("TLS handshake failed; closing connection")
			send(&readerDone{})
			return
		}
		send(&tlsReady{principal: principal})
	}
	r := bufio.NewReaderSize(a.c, readBufferSize)
	for {
		select {
		case a.credits <- struct{}{}:
		case <-a.stopped:
			return
		}
		a.waitUnmuted()
		_ = a.c.SetReadDeadline(time.Now().Add(a.srv.cfg.IdleTimeout))
		frame, err := a.srv.frames.ReadFrame(r, a.srv.cfg.MaxRequestSize)
		if err != nil {
			if errors.Is(err, wire.ErrFrameTooLarge) {
				err = fmt.Errorf("refused frame: %w", err)
			}
			send(&readerDone{err: err})
			return
		}
		hdr, body, err := wire.ParseHeader(frame)
		if err != nil && !errors.Is(err, wire.ErrVersionTooNew) {
			send(&readerDone{err: fmt.Errorf("request header: %w", err)})
			return
		}
		now := time.Now()
		a.lastActive.Store(now.UnixNano())
		send(&inbound{hdr: hdr, body: body, frame: frame, read: now})
	}
}

// mute keeps the reader from reading the next request for d from now
// (a later mute may extend it, never shorten it).
func (a *connActor) mute(d time.Duration) {
	until := a.srv.Clock.Now().Add(d).UnixNano()
	for {
		cur := a.mutedUntil.Load()
		if cur >= until || a.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitUnmuted blocks the reader goroutine while the connection is muted.
func (a *connActor) waitUnmuted() {
	for {
		d := time.Duration(a.mutedUntil.Load() - a.srv.Clock.Now().UnixNano())
		if d <= 0 {
			return
		}
		woken := make(chan struct{})
		a.srv.Clock.AfterFunc(d, func() { close(woken) })
		<-woken
	}
}

// readBufferSize is each connection's read buffer: several small
// pipelined requests per read, while a frame larger than the buffer is
// read straight into its own.
const readBufferSize = 8 << 10

// writeBuffers hold the answers of a burst, taken when the first of them
// is written and put back once they are flushed, so that an idle
// connection holds none.
var writeBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// write runs on its own goroutine, batching frames into few syscalls.
func (a *connActor) write() {
	defer close(a.writerOK)
	var w *bufio.Writer
	putBack := func() {
		w.Reset(nil)
		writeBuffers.Put(w)
		w = nil
	}
	broken := false
	// Latencies are observed once the buffered frames reach the socket.
	type sent struct {
		api  *metrics.API
		read time.Time
	}
	var written []sent
	for f := range a.out {
		if broken {
			releaseFrame(f)
			continue
		}
		if w == nil {
			w = writeBuffers.Get().(*bufio.Writer)
			w.Reset(a.c)
		}
		if err := writeFrame(w, a.c, f); err != nil {
			broken = true
			putBack()
			_ = a.c.Close()
			continue
		}
		written = append(written, sent{f.api, f.read})
		if len(a.out) == 0 {
			err := w.Flush()
			putBack()
			if err != nil {
				broken = true
				_ = a.c.Close()
				continue
			}
			now := time.Now()
			for i, f := range written {
				f.api.Duration(now.Sub(f.read).Seconds())
				written[i] = sent{}
			}
			written = written[:0]
		}
	}
	if w != nil {
		_ = w.Flush()
		putBack()
	}
}

func (a *connActor) dispatch(ctx actor.Context, in *inbound) {
	seq := a.nextSeq
	a.nextSeq++
	hdr := in.hdr
	read := in.read
	var span trace.Span // started once the request is known to be served
	var spanCtx context.Context
	reply := func(resp kmsg.Response, throttle time.Duration, silent bool) {
		ctx.Send(ctx.Self(), &answered{seq: seq, hdr: hdr, resp: resp, version: -1, read: read, span: span, throttle: throttle, silent: silent})
	}
	if a.gate(ctx, seq, in) {
		return
	}
	api, served := a.srv.api(hdr.Key)
	if !served {
		// Kafka closes the connection on an API key it does not serve.
		a.log.Warn().Int16("api_key", hdr.Key).Str("api", kmsg.NameForKey(hdr.Key)).Msg("unsupported api key; closing connection")
		_ = a.c.Close()
		a.done[seq] = answered{seq: seq, hdr: hdr, version: -1}
		a.flush()
		return
	}
	if hdr.Version < api.MinVersion || hdr.Version > api.MaxVersion {
		if resp := unsupportedVersion(a.srv, hdr); resp != nil {
			a.done[seq] = answered{seq: seq, hdr: hdr, resp: resp, version: 0, read: read}
			a.flush()
			return
		}
		a.log.Warn().Str("api", kmsg.NameForKey(hdr.Key)).Int16("version", hdr.Version).Msg("unsupported version; closing connection")
		_ = a.c.Close()
		a.done[seq] = answered{seq: seq, hdr: hdr, version: -1}
		a.flush()
		return
	}
	start := a.requestStart()
	body, err := wire.DecodeBody(hdr, in.body)
	if err != nil {
		a.log.Warn().Err(err).Msg("malformed request; closing connection")
		_ = a.c.Close()
		a.done[seq] = answered{seq: seq, hdr: hdr, version: -1}
		a.flush()
		return
	}
	if a.isSASL(hdr.Key) {
		a.saslRequest(ctx, seq, hdr, body, read)
		return
	}
	if v, ok := body.(*kmsg.ApiVersionsRequest); ok && v.Version >= 3 {
		// KIP-511: the client names its software once per connection
		// (client-metrics subscriptions match on it).
		a.session.SoftwareName, a.session.SoftwareVersion = v.ClientSoftwareName, v.ClientSoftwareVersion
	}
	if tracing.On() {
		spanCtx, span = tracing.StartRequest(hdr.Key, hdr.Version, hdr.ClientIDString(), a.host, read)
	}
	req := &Request{Header: hdr, Body: body, ClientHost: a.host, MemberHost: a.memberHost, View: a.lst.view(a.srv.views.Load()), Server: a.srv, Session: a.session, Conn: a.id, listener: a.lst, Ctx: spanCtx, Size: len(in.body)}
	pending := a.safeAuthorizeAndHandle(api, req)
	req.throttle = max(req.throttle, a.requestTime(hdr, start))
	frame := reusableFrame(hdr, in.frame)
	actorsys.Go(func() {
		resp := a.safeRun(api, pending, req)
		if frame != nil && !req.panicked {
			a.srv.frames.Put(frame)
		}
		p, ok := req.Body.(*kmsg.ProduceRequest)
		reply(resp, req.throttle, ok && p.Acks == 0)
	})
}

// safeHandle runs a handler; a panic on client input becomes an error
// response instead of a dead broker.
func (a *connActor) safeHandle(api API, req *Request) (p Pending) {
	defer func() {
		if r := recover(); r != nil {
			p = Ready(a.recovered(api, req, r, "handler panic"))
		}
	}()
	return api.Handle(req)
}

func (a *connActor) safeRun(api API, p Pending, req *Request) (resp kmsg.Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = a.recovered(api, req, r, "handler panic")
		}
	}()
	return p()
}

// recovered is the answer to a request whose authorization, handler or
// Pending panicked (r): UNKNOWN_SERVER_ERROR, the panic logged and told
// to its watchers. Called in the deferred function that recovered, so the
// watchers get the panic's stack.
func (a *connActor) recovered(api API, req *Request, r any, msg string) kmsg.Response {
	name := kmsg.NameForKey(req.Header.Key)
	actorsys.Recovered(name, r)
	a.log.Error().Interface("panic", r).Str("api", name).Msg(msg)
	req.panicked = true
	return errorResponse(api, req.Body, kerr.UnknownServerError.Code)
}

// flush writes every finished response that is next in request order.
func (a *connActor) flush() {
	for !a.hungUp {
		d, ok := a.done[a.sendSeq]
		if !ok {
			break
		}
		delete(a.done, a.sendSeq)
		a.sendSeq++
		if d.throttle > 0 {
			a.mute(d.throttle)
		}
		if d.resp != nil && !d.silent {
			if d.version >= 0 {
				d.resp.SetVersion(d.version)
			} else {
				d.resp.SetVersion(d.hdr.Version)
			}
			if d.throttle > 0 {
				throttleAtLeast(d.resp, d.throttle)
			}
			api := metrics.ForAPI(d.hdr.Key)
			countResponse(api, d.resp)
			start := a.requestStart()
			f := encodeFrame(d.hdr, d.resp)
			a.requestTime(d.hdr, start)
			f.api, f.read = api, d.read
			a.out <- f
			if d.span != nil {
				d.span.End()
			}
		} else if d.silent {
			// acks=0: answered by not answering; a failure closes the
			// connection instead, as Kafka does, so that the producer
			// learns of it and refreshes its metadata.
			api := metrics.ForAPI(d.hdr.Key)
			countResponse(api, d.resp)
			api.Duration(time.Since(d.read).Seconds())
			if d.span != nil {
				d.span.End()
			}
			if failed := produceFailures(d.resp); failed != "" {
				a.log.Info().Int32("correlation_id", d.hdr.CorrelationID).Str("client_id", d.hdr.ClientIDString()).Str("errors", failed).
					Msg("acks=0 produce failed; closing connection")
				a.closing, a.hungUp = true, true
			}
		}
		<-a.credits
	}
}
