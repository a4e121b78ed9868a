package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage/assignment"
)

// HeartbeatConfig configures the broker side of the heartbeat stream.
type HeartbeatConfig struct {
	// Target returns the controller's heartbeat address (from the
	// assignment in force); "" while unknown.
	Target func() string
	// Ping fills a ping with the broker's current state.
	Ping func() *heartbeatpb.Ping
	// OnPush receives every push (PONG and ASSIGNMENT_CHANGED).
	OnPush func(*heartbeatpb.Push)
	// OnExchange is called when a PONG completes an exchange, with the
	// send time of the ping it answers (self-fencing counts from there, or
	// earlier: LeaseBacking) and the PONG.
	OnExchange func(sentAt time.Time, pong *heartbeatpb.Push)
	// Applied returns the newest assignment file the broker has applied
	// (nil: no condition). A PONG naming a newer file completes no
	// exchange: the broker may still act on a file that gave its
	// partitions away (it was paused past dead-after), and it must not lift
	// its fence before it has applied that one.
	Applied func() assignment.Position
	// Kick sends a ping at once (a release the controller waits for).
	Kick     <-chan struct{}
	Interval time.Duration
	// Dial are extra dial options; transport credentials given here
	// (mTLS) replace the default plaintext ones.
	Dial []grpc.DialOption
	Log  zerolog.Logger
	// Clock paces the pings, the watchdog and the redial backoff and dates
	// the exchanges (give the fence the same one); clock.Real when nil.
	Clock clock.Clock
}

// RunHeartbeats keeps one stream open to the current controller, sending a
// ping every Interval, and redials (with backoff) when the stream breaks or
// the controller address changes. It returns when ctx ends.
func RunHeartbeats(ctx context.Context, cfg HeartbeatConfig) {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	backoff := cfg.Interval / 4
	var seq uint64
	for ctx.Err() == nil {
		target := cfg.Target()
		if target == "" {
			sleep(ctx, cfg.Clock, cfg.Interval/2)
			continue
		}
		started := cfg.Clock.Now()
		ponged, err := streamOnce(ctx, cfg, target, &seq)
		if ctx.Err() != nil {
			return
		}
		// A stream that carried exchanges is worth a line (controller
		// changes, failovers); refused redials while the file still names
		// a deposed controller are not.
		ev := cfg.Log.Debug()
		switch {
		case errors.Is(err, errSendStalled):
			ev = cfg.Log.Warn()
		case ponged > 0:
			ev = cfg.Log.Info()
		}
		ev.Err(err).Str("controller", target).Int("pongs", ponged).Dur("lasted", cfg.Clock.Since(started)).Msg("heartbeat stream ended")
		if ponged > 0 || errors.Is(err, errTargetChanged) {
			backoff = cfg.Interval / 4
		}
		if errors.Is(err, errTargetChanged) {
			continue // the new controller at once
		}
		sleep(ctx, cfg.Clock, backoff)
		backoff = min(backoff*2, 2*cfg.Interval)
	}
}

type targetChanged struct{}

func (targetChanged) Error() string { return "controller address changed" }

var errTargetChanged error = targetChanged{}

// WindowSize is the HTTP/2 flow-control window of heartbeat streams, on
// both ends: a ping lists every partition the broker holds (~50 bytes
// each), so with gRPC's 64 KiB default a broker leading a thousand or more
// waits for a window update, i.e. for a busy controller's reader, before
// each ping goes out.
const WindowSize = 4 << 20

// errSendStalled ends a stream whose ping could not be sent for eight
// intervals.
var errSendStalled = errors.New("heartbeat send stalled")

// streamOnce runs one stream to target until it breaks or the target
// changes, and returns how many PONGs it carried.
func streamOnce(ctx context.Context, cfg HeartbeatConfig, target string, seq *uint64) (int, error) {
	var pongs atomic.Int64
	err := runStream(ctx, cfg, target, seq, &pongs)
	return int(pongs.Load()), err
}

// dialOptions are the heartbeat client's options, extra (credentials) last.
func dialOptions(extra []grpc.DialOption) []grpc.DialOption {
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(WindowSize), grpc.WithInitialConnWindowSize(WindowSize)}, tracing.GRPCDialOptions()...)
	return append(opts, extra...)
}

// Unregister asks the controller to unregister broker id and returns its
// answer, a Kafka error code and message (askController).
func Unregister(ctx context.Context, clk clock.Clock, target func() string, dial []grpc.DialOption, id int32) (int16, string) {
	return askController(ctx, clk, target, dial, func(ctx context.Context, c heartbeatpb.HeartbeatClient) (int16, string, error) {
		resp, err := c.Unregister(ctx, &heartbeatpb.UnregisterRequest{BrokerId: id})
		if err != nil {
			return 0, "", err
		}
		return int16(resp.ErrorCode), resp.ErrorMessage, nil
	})
}

// DescribeQuorum asks the controller for its view of the brokers'
// progress through the assignment files (askController); resp is nil
// unless code is 0.
func DescribeQuorum(ctx context.Context, clk clock.Clock, target func() string, dial []grpc.DialOption) (resp *heartbeatpb.DescribeQuorumResponse, code int16, msg string) {
	code, msg = askController(ctx, clk, target, dial, func(ctx context.Context, c heartbeatpb.HeartbeatClient) (int16, string, error) {
		r, err := c.DescribeQuorum(ctx, &heartbeatpb.DescribeQuorumRequest{})
		if err != nil {
			return 0, "", err
		}
		resp = r
		return int16(r.ErrorCode), r.ErrorMessage, nil
	})
	return resp, code, msg
}

// askController makes call on the controller at target's heartbeat
// address, as a Kafka broker forwards a request to the active controller,
// and returns its Kafka error code and message. While no controller
// answers (none known yet, unreachable, or no longer the controller:
// NOT_CONTROLLER) it asks again every 250 ms, of the controller target then
// names, until ctx ends: then REQUEST_TIMED_OUT.
func askController(ctx context.Context, clk clock.Clock, target func() string, dial []grpc.DialOption,
	call func(context.Context, heartbeatpb.HeartbeatClient) (int16, string, error)) (int16, string) {
	msg := "no controller is known"
	for {
		if t := target(); t != "" {
			code, m, err := callAt(ctx, t, dial, call)
			if err == nil && code != kerr.NotController.Code {
				return code, m
			}
			msg = m
			if err != nil {
				msg = err.Error()
			}
		}
		sleep(ctx, clk, 250*time.Millisecond)
		if ctx.Err() != nil {
			return kerr.RequestTimedOut.Code, msg
		}
	}
}

func callAt(ctx context.Context, target string, dial []grpc.DialOption, call func(context.Context, heartbeatpb.HeartbeatClient) (int16, string, error)) (int16, string, error) {
	conn, err := grpc.NewClient(target, dialOptions(dial)...)
	if err != nil {
		return 0, "", fmt.Errorf("controller %s: %w", target, err)
	}
	defer conn.Close()
	code, msg, err := call(ctx, heartbeatpb.NewHeartbeatClient(conn))
	if err != nil {
		return 0, "", fmt.Errorf("controller %s: %w", target, err)
	}
	return code, msg, nil
}

func runStream(ctx context.Context, cfg HeartbeatConfig, target string, seq *uint64, pongs *atomic.Int64) error {
	conn, err := grpc.NewClient(target, dialOptions(cfg.Dial)...)
	if err != nil {
		return err
	}
	defer conn.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := heartbeatpb.NewHeartbeatClient(conn).Stream(sctx)
	if err != nil {
		return err
	}
	errc := make(chan error, 3)
	var sent sync.Map // seq -> time.Time
	// A Send can block (flow control towards a busy or deposed
	// controller): the watchdog ends the stream when the file names
	// another controller (at once), or when a ping has been stuck for eight
	// intervals (a wedged stream; a redial only adds work to a process that
	// is merely starved, so it is not done sooner).
	var sendingSince atomic.Int64 // UnixNano of the Send in progress; 0: none
	var why atomic.Value          // error: why the watchdog ended the stream
	go func() {
		t := cfg.Clock.NewTicker(max(cfg.Interval/4, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C():
			}
			if cfg.Target() != target {
				why.Store(errTargetChanged)
				cancel()
				return
			}
			if at := sendingSince.Load(); at != 0 && cfg.Clock.Since(time.Unix(0, at)) > 8*cfg.Interval {
				why.Store(errSendStalled)
				cancel()
				return
			}
		}
	}()
	go func() {
		for {
			p, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			if p.Kind == heartbeatpb.Push_PONG {
				if pongs.Add(1) == 1 {
					cfg.Log.Info().Str("controller", target).Int64("epoch", p.ControllerEpoch).Msg("heartbeat stream open")
				}
				if at, ok := sent.LoadAndDelete(p.AckSeq); ok {
					metrics.HeartbeatRoundTrip(cfg.Clock.Since(at.(time.Time)).Seconds())
					if cfg.OnExchange != nil && caughtUp(cfg.Applied, p) {
						cfg.OnExchange(at.(time.Time), p)
					}
				}
			}
			cfg.OnPush(p)
		}
	}()
	t := cfg.Clock.NewTicker(cfg.Interval)
	defer t.Stop()
	for {
		*seq++
		// Dated before it is built: an exchange counts from no later than
		// the state the ping carries (self-fencing, drain confirmation).
		at := cfg.Clock.Now()
		p := cfg.Ping()
		p.Seq = *seq
		sent.Store(p.Seq, at)
		sent.Delete(p.Seq - 64) // unanswered pings are forgotten
		sendingSince.Store(cfg.Clock.Now().UnixNano())
		err := stream.Send(p)
		sendingSince.Store(0)
		if w, ok := why.Load().(error); ok {
			return w
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sctx.Done():
			if w, ok := why.Load().(error); ok {
				return w
			}
			return sctx.Err()
		case err := <-errc:
			return err
		case <-cfg.Kick:
		case <-t.C():
		}
		if cfg.Target() != target {
			return errTargetChanged
		}
	}
}

func sleep(ctx context.Context, clk clock.Clock, d time.Duration) {
	woke, t := after(clk, d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-woke:
	}
}

// after is closed once d has passed on clk (time.After on a clock; stop
// the timer when done with it).
func after(clk clock.Clock, d time.Duration) (<-chan struct{}, clock.Timer) {
	ch := make(chan struct{})
	return ch, clk.AfterFunc(d, func() { close(ch) })
}

// caughtUp reports whether the broker has applied the file a PONG names, or
// a later one.
func caughtUp(applied func() assignment.Position, p *heartbeatpb.Push) bool {
	if applied == nil {
		return true
	}
	return applied().AtLeast(assignment.Position{Epoch: p.AssignmentEpoch, Version: p.AssignmentVersion})
}
