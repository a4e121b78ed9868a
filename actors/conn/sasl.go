package conn

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/wire"
	"github.com/kaas-project/kaas/wire/sasl"
	"github.com/kaas-project/kaas/wire/tlsfiles"
)

// tlsHandshakeTimeout bounds a client's TLS handshake.
const tlsHandshakeTimeout = 10 * time.Second

// tlsReady tells the actor the TLS handshake finished; principal is the
// client certificate's ("" without one). The reader sends it before any
// frame, so the session is set before the first request.
type tlsReady struct{ principal string }

// saslState is where a connection is in SASL authentication.
type saslState struct {
	authenticated bool
	exchange      sasl.Exchange // non-nil between SaslHandshake and the exchange's end
	mechanism     string
	expires       time.Time // session end (KIP-368); zero: none
	// waiting: a SaslAuthenticate waits for its exchange's I/O (a
	// *sasl.Deferred); held are the requests read meanwhile, dispatched
	// once it is answered, as Kafka serves a connection's requests one
	// after the other.
	waiting bool
	held    []*inbound
}

// saslResume tells the actor that the I/O a SaslAuthenticate's exchange
// waited on ended: the exchange steps again with the same message.
type saslResume struct {
	seq  uint64
	hdr  wire.RequestHeader
	req  *kmsg.SASLAuthenticateRequest
	read time.Time
}

// saslFailed is the answer to a failed first authentication, written once
// the listener's FailedAuthDelay has passed; the connection then closes.
type saslFailed struct {
	seq  uint64
	hdr  wire.RequestHeader
	resp kmsg.Response
	read time.Time
}

// handshake runs the TLS handshake on the reader goroutine.
func (a *connActor) handshake(tc *tls.Conn) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return "", fmt.Errorf("tls handshake: %w", err)
	}
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		if m := a.lst.PrincipalMapping; m != nil {
			name, err := m.Map(certs[0].Subject.String())
			if err != nil {
				return "", fmt.Errorf("client certificate: %w", err)
			}
			return "User:" + name, nil
		}
		return tlsfiles.Principal(certs[0]), nil
	}
	return "", nil
}

func (a *connActor) isSASL(key int16) bool {
	return key == kmsg.SASLHandshake.Int16() || key == kmsg.SASLAuthenticate.Int16()
}

// gate closes the connection, as Kafka does, on a request other than
// ApiVersions and the SASL APIs before authentication on a SASL listener,
// and on any such request once the session has expired. In the middle of
// a first authentication's exchange Kafka's SaslServerAuthenticator
// answers such a request with its error response (ILLEGAL_SASL_STATE)
// before it closes, and so does gate: a client that took an OAUTHBEARER
// error challenge for success reads that answer. It reports whether it
// closed.
func (a *connActor) gate(ctx actor.Context, seq uint64, in *inbound) bool {
	hdr := in.hdr
	if !a.lst.usesSASL() || a.isSASL(hdr.Key) || hdr.Key == kmsg.ApiVersions.Int16() {
		return false
	}
	switch {
	case !a.auth.authenticated && a.auth.exchange != nil:
		ev := a.log.Warn().Str("api", kmsg.NameForKey(hdr.Key)).Str("mechanism", a.auth.mechanism)
		if err := refusal(a.auth.exchange); err != nil {
			ev = ev.Err(err) // the token refused by the error challenge the client took for success
		}
		ev.Msg("request during SASL authentication; answering ILLEGAL_SASL_STATE and closing connection")
		if resp := a.illegalSASLState(in); resp != nil {
			a.auth.exchange = nil
			a.answerSASL(ctx, seq, hdr, resp, in.read, true)
			return true
		}
	case !a.auth.authenticated:
		a.log.Warn().Str("api", kmsg.NameForKey(hdr.Key)).Msg("request before SASL authentication; closing connection")
	case !a.auth.expires.IsZero() && !time.Now().Before(a.auth.expires):
		a.log.Info().Str("principal", a.session.Principal).Msg("SASL session expired without re-authentication; closing connection")
	default:
		return false
	}
	_ = a.c.Close()
	a.done[seq] = answered{seq: seq, hdr: hdr, version: -1}
	a.flush()
	return true
}

// illegalSASLState is in's error response with ILLEGAL_SASL_STATE; nil
// when this broker cannot answer it (an API key or version it does not
// serve, a body that does not decode).
func (a *connActor) illegalSASLState(in *inbound) kmsg.Response {
	api, served := a.srv.api(in.hdr.Key)
	if !served || in.hdr.Version < api.MinVersion || in.hdr.Version > api.MaxVersion {
		return nil
	}
	body, err := wire.DecodeBody(in.hdr, in.body)
	if err != nil {
		return nil
	}
	return errorResponse(api, body, kerr.IllegalSaslState.Code)
}

// mechanisms are the SASL mechanisms this connection may use: PLAIN sends
// the password in clear, so it needs TLS unless the listener allows it.
func (a *connActor) mechanisms() []string {
	if a.lst.SASL == nil {
		return []string{}
	}
	out := make([]string, 0, len(a.lst.SASL.Mechanisms))
	for _, m := range a.lst.SASL.Mechanisms {
		if m == sasl.Plain && !a.lst.usesTLS() && !a.lst.AllowPlainWithoutTLS {
			continue
		}
		out = append(out, m)
	}
	return out
}

// saslRequest answers SaslHandshake and SaslAuthenticate inside Receive:
// they change the connection's state, and the work is bounded CPU (SCRAM
// is a few HMACs; PLAIN one PBKDF2 derivation; GSSAPI a few AES
// decryptions and checksums; OAUTHBEARER a signature check) with no I/O
// but a stat of the credentials file, keytab or JWKS file at most once a
// second (and reading it when it changed). The one exchange step that
// waits on the network, OAUTHBEARER's fetch of the JWKS URL for a token
// naming a key id the set lacks (a *sasl.Deferred), waits on a goroutine
// of its own, never in Receive: the answer is written when its
// saslResume comes back, and the requests read meanwhile are held
// (resumeSASL).
func (a *connActor) saslRequest(ctx actor.Context, seq uint64, hdr wire.RequestHeader, body kmsg.Request, read time.Time) {
	var resp kmsg.Response
	var closeAfter bool
	switch req := body.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp, closeAfter = a.saslHandshake(req)
	case *kmsg.SASLAuthenticateRequest:
		var wait *sasl.Deferred
		resp, closeAfter, wait = a.saslAuthenticate(req, false)
		if wait != nil {
			a.auth.waiting = true
			self, system := ctx.Self(), ctx.ActorSystem()
			resume := &saslResume{seq: seq, hdr: hdr, req: req, read: read}
			actorsys.Go(func() {
				wait.Wait() // bounded: the fetch's timeout
				system.Root.Send(self, resume)
			})
			return
		}
	}
	a.answerSASL(ctx, seq, hdr, resp, read, closeAfter)
}

// answerSASL writes a SASL answer; closeAfter: then the connection closes
// (Kafka closes after a failed authentication). The answer to a failed
// first authentication waits the listener's FailedAuthDelay, as Kafka
// delays it (a failed re-authentication is answered at once, as by Kafka);
// nothing more is served meanwhile.
func (a *connActor) answerSASL(ctx actor.Context, seq uint64, hdr wire.RequestHeader, resp kmsg.Response, read time.Time, closeAfter bool) {
	if d := a.lst.FailedAuthDelay; closeAfter && a.lst.usesSASL() && !a.auth.authenticated && d > 0 {
		a.closing = true
		self, system := ctx.Self(), ctx.ActorSystem()
		failed := &saslFailed{seq: seq, hdr: hdr, resp: resp, read: read}
		a.srv.Clock.AfterFunc(d, func() { system.Root.Send(self, failed) })
		return
	}
	a.writeSASL(ctx, seq, hdr, resp, read, closeAfter)
}

// writeSASL writes a SASL answer, then stops the actor if it closes and
// nothing else is left to write.
func (a *connActor) writeSASL(ctx actor.Context, seq uint64, hdr wire.RequestHeader, resp kmsg.Response, read time.Time, closeAfter bool) {
	a.done[seq] = answered{seq: seq, hdr: hdr, resp: resp, version: -1, read: read}
	a.flush()
	if closeAfter {
		a.closing = true
	}
	if a.closing && a.sendSeq == a.nextSeq {
		ctx.Stop(ctx.Self())
	}
}

// resumeSASL steps the exchange a SaslAuthenticate waited on again,
// answers it, then dispatches the requests held meanwhile (until one
// waits in turn).
func (a *connActor) resumeSASL(ctx actor.Context, m *saslResume) {
	a.auth.waiting = false
	resp, closeAfter, _ := a.saslAuthenticate(m.req, true)
	a.answerSASL(ctx, m.seq, m.hdr, resp, m.read, closeAfter)
	for len(a.auth.held) > 0 && !a.auth.waiting && !a.closing {
		in := a.auth.held[0]
		a.auth.held[0] = nil
		a.auth.held = a.auth.held[1:]
		a.dispatch(ctx, in)
	}
	if a.closing {
		for range a.auth.held {
			<-a.credits // never served: give the reader its credit back
		}
		a.auth.held = nil
	}
}

func (a *connActor) saslHandshake(req *kmsg.SASLHandshakeRequest) (kmsg.Response, bool) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = a.mechanisms()
	switch {
	case !a.lst.usesSASL():
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, false
	case a.auth.exchange != nil:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, true
	}
	enabled := false
	for _, m := range resp.SupportedMechanisms {
		enabled = enabled || m == req.Mechanism
	}
	if !enabled {
		a.log.Warn().Str("mechanism", req.Mechanism).Strs("enabled", resp.SupportedMechanisms).Msg("SASL mechanism not enabled; closing connection")
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp, true
	}
	if a.auth.authenticated && a.auth.mechanism != req.Mechanism {
		a.log.Warn().Str("mechanism", req.Mechanism).Msg("SASL re-authentication must keep the mechanism; closing connection")
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, true
	}
	ex, err := a.lst.SASL.Start(req.Mechanism)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp, true
	}
	a.auth.exchange, a.auth.mechanism = ex, req.Mechanism
	return resp, false
}

// saslAuthenticate steps the exchange with the client's message; resumed:
// it is the second step of a message whose first returned wait (the
// exchange then answers without waiting).
func (a *connActor) saslAuthenticate(req *kmsg.SASLAuthenticateRequest, resumed bool) (_ kmsg.Response, closeAfter bool, wait *sasl.Deferred) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	fail := func(code int16, msg string) (kmsg.Response, bool, *sasl.Deferred) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		a.auth.exchange = nil
		return resp, true, nil
	}
	if a.auth.exchange == nil && (!a.lst.usesSASL() || a.auth.authenticated) {
		// No authentication is under way, nor due: answered as Kafka's
		// KafkaApis answers it, the connection kept.
		resp.ErrorCode, resp.ErrorMessage = kerr.IllegalSaslState.Code, new("SaslAuthenticate request received after successful authentication")
		return resp, false, nil
	}
	if a.auth.exchange == nil {
		a.log.Warn().Msg("SaslAuthenticate without SaslHandshake; closing connection")
		return fail(kerr.IllegalSaslState.Code, "SaslAuthenticate must follow SaslHandshake")
	}
	now := time.Now()
	// The %x01 after an error challenge ends a failure counted already;
	// it gets the challenge's message, not the limiter's.
	challenged := refusal(a.auth.exchange) != nil && bytes.Equal(req.SASLAuthBytes, []byte{1})
	if !resumed && !challenged && !a.srv.SASLFailures.Allow(a.host, now) {
		a.log.Warn().Str("mechanism", a.auth.mechanism).Msg("SASL authentication refused: too many failures from this address")
		return fail(kerr.SaslAuthenticationFailed.Code, "too many failed authentications from this address; try again later")
	}
	out, done, err := a.auth.exchange.Step(req.SASLAuthBytes)
	if d := (*sasl.Deferred)(nil); errors.As(err, &d) {
		if resumed {
			// Exchanges answer the step after a wait; a second wait is a
			// bug, refused rather than waited on forever.
			a.log.Error().Str("mechanism", a.auth.mechanism).Msg("SASL exchange waited twice on one message; closing connection")
			return fail(kerr.SaslAuthenticationFailed.Code, sasl.ErrAuthentication.Error())
		}
		return nil, false, d
	}
	if err != nil {
		if !challenged {
			a.srv.SASLFailures.Fail(a.host, now)
		}
		// err names no secret (the sasl package's errors never do).
		a.log.Warn().Str("mechanism", a.auth.mechanism).Err(err).Msg("SASL authentication failed; closing connection")
		return fail(kerr.SaslAuthenticationFailed.Code, sasl.ClientMessage(err))
	}
	resp.SASLAuthBytes = out
	if !done {
		if refusal(a.auth.exchange) != nil {
			// Counted at the challenge: a client that hangs up instead
			// of sending %x01 has failed all the same.
			a.srv.SASLFailures.Fail(a.host, now)
		}
		return resp, false, nil
	}
	ex := a.auth.exchange
	a.auth.exchange = nil
	principal := ex.Principal()
	if a.auth.authenticated && principal != a.session.Principal {
		a.log.Warn().Str("principal", a.session.Principal).Str("new_principal", principal).Msg("SASL re-authentication changed the principal; closing connection")
		return fail(kerr.SaslAuthenticationFailed.Code, "re-authentication must keep the principal")
	}
	expires := ex.Expires()
	if m := a.lst.MaxReauth; m > 0 && (expires.IsZero() || now.Add(m).Before(expires)) {
		expires = now.Add(m)
	}
	reauth := a.auth.authenticated
	a.session.Principal, a.auth.authenticated, a.auth.expires = principal, true, expires
	if ta, ok := ex.(sasl.TokenAuthenticated); ok {
		a.session.TokenAuthenticated = ta.TokenAuthenticated()
	}
	if req.Version >= 1 && !expires.IsZero() {
		resp.SessionLifetimeMillis = max(1, expires.Sub(now).Milliseconds())
	}
	a.log.Info().Str("principal", principal).Str("mechanism", a.auth.mechanism).Bool("reauthentication", reauth).Msg("SASL authenticated")
	return resp, false, nil
}

// refusal is the refusal of the token an exchange's last answer
// challenged (OAUTHBEARER's error challenge), if any.
func refusal(ex sasl.Exchange) error {
	if r, ok := ex.(interface{ Refused() error }); ok {
		return r.Refused()
	}
	return nil
}
