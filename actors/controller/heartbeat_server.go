package controller

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
)

// Hub is the controller side of the heartbeat service: it accepts every
// broker's stream, forwards pings to the current controller actor (if this
// broker is the controller) and fans pushes out to every open stream. The
// gRPC server lives as long as the broker; the controller actor comes and
// goes with the Lease.
type Hub struct {
	heartbeatpb.UnimplementedHeartbeatServer

	mu         sync.Mutex
	controller actorsys.Ref
	epoch      int64
	streams    map[chan *heartbeatpb.Push]struct{}
	// leaseFresh reports whether this controller renewed its Lease
	// recently enough that no other can hold it. A PONG lifts the
	// receiving broker's self-fence, so a controller resumed from a pause
	// (SIGSTOP, a long GC) must not answer before it knows it still leads:
	// it would unfence its own broker, whose partitions a newer controller
	// has given away.
	leaseFresh func() bool
	// fileEpoch, fileVersion: the newest assignment file the controller
	// wrote or inherited, named in every PONG (a broker that has not
	// applied it yet does not count the exchange).
	fileEpoch, fileVersion int64
}

// SetWritten records the newest assignment file of the controller.
func (h *Hub) SetWritten(epoch, version int64) {
	h.mu.Lock()
	h.fileEpoch, h.fileVersion = epoch, version
	h.mu.Unlock()
}

func (h *Hub) written() (int64, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fileEpoch, h.fileVersion
}

// NewHub returns a hub with no controller.
func NewHub() *Hub { return &Hub{streams: map[chan *heartbeatpb.Push]struct{}{}} }

// SetController routes pings to ref (a zero Ref means "not the controller":
// streams are refused so brokers look for the real one). Pings are only
// answered (PONG) while leaseFresh (nil: always) reports true.
func (h *Hub) SetController(ref actorsys.Ref, epoch int64, leaseFresh func() bool) {
	h.mu.Lock()
	h.controller, h.epoch, h.leaseFresh = ref, epoch, leaseFresh
	h.mu.Unlock()
	if !ref.Valid() {
		metrics.ForgetHeartbeats()
	}
}

func (h *Hub) current() (actorsys.Ref, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.controller, h.epoch
}

func (h *Hub) fresh() bool {
	h.mu.Lock()
	f := h.leaseFresh
	h.mu.Unlock()
	return f == nil || f()
}

// Push sends p to every open stream (dropping it for a stream whose buffer
// is full: the broker's 1 s poll is the backstop).
func (h *Hub) Push(p *heartbeatpb.Push) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.streams {
		select {
		case ch <- p:
		default:
		}
	}
}

// ErrNotController is returned to a broker that dials a non-controller.
type notController struct{}

func (notController) Error() string { return "this broker is not the controller" }

// Stream implements the Heartbeat service.
func (h *Hub) Stream(s heartbeatpb.Heartbeat_StreamServer) error {
	ref, epoch := h.current()
	if !ref.Valid() {
		return notController{}
	}
	out := make(chan *heartbeatpb.Push, 16)
	h.mu.Lock()
	h.streams[out] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.streams, out)
		h.mu.Unlock()
	}()
	errc := make(chan error, 1)
	go func() {
		for {
			p, err := s.Recv()
			if err != nil {
				errc <- err
				return
			}
			cur, curEpoch := h.current()
			if !cur.Valid() || curEpoch != epoch {
				errc <- notController{}
				return
			}
			now := time.Now()
			metrics.HeartbeatReceived(p.Name, now)
			cur.Send(&BrokerPing{Ping: p, At: now})
			if !h.fresh() {
				continue // no PONG: the broker stays fenced
			}
			fe, fv := h.written()
			select {
			case out <- &heartbeatpb.Push{Kind: heartbeatpb.Push_PONG, AckSeq: p.Seq, ControllerEpoch: epoch, AssignmentEpoch: fe, AssignmentVersion: fv}:
			default:
			}
		}
	}()
	for {
		select {
		case err := <-errc:
			return err
		case p := <-out:
			if err := s.Send(p); err != nil {
				return err
			}
		}
	}
}

// unregisterTimeout bounds how long an unregistration waits for the
// controller to write the file without the broker's row.
const unregisterTimeout = 15 * time.Second

// DescribeQuorum implements the Heartbeat service: the controller actor's
// view of the brokers' progress through the assignment files.
func (h *Hub) DescribeQuorum(ctx context.Context, _ *heartbeatpb.DescribeQuorumRequest) (*heartbeatpb.DescribeQuorumResponse, error) {
	q, st := askController(ctx, h, func(reply func(*heartbeatpb.DescribeQuorumResponse)) any {
		return &DescribeQuorum{Reply: reply}
	})
	switch st {
	case askedNoController:
		return &heartbeatpb.DescribeQuorumResponse{ErrorCode: int32(kerr.NotController.Code), ErrorMessage: "this broker is not the controller"}, nil
	case askTimedOut:
		return &heartbeatpb.DescribeQuorumResponse{ErrorCode: int32(kerr.RequestTimedOut.Code), ErrorMessage: "the controller did not answer in time"}, nil
	}
	return q, nil
}

// Unregister implements the Heartbeat service: it hands the request to the
// controller actor and answers once the controller has (the file without
// the broker's row written, or a refusal). A broker that is not the
// controller answers NOT_CONTROLLER (the caller asks again, of the
// controller the newest file names).
func (h *Hub) Unregister(ctx context.Context, req *heartbeatpb.UnregisterRequest) (*heartbeatpb.UnregisterResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, unregisterTimeout)
	defer cancel()
	r, st := askController(ctx, h, func(reply func(*heartbeatpb.UnregisterResponse)) any {
		return &UnregisterBroker{ID: req.BrokerId, Reply: func(code int16, msg string) {
			reply(&heartbeatpb.UnregisterResponse{ErrorCode: int32(code), ErrorMessage: msg})
		}}
	})
	switch st {
	case askedNoController:
		return &heartbeatpb.UnregisterResponse{ErrorCode: int32(kerr.NotController.Code), ErrorMessage: "this broker is not the controller"}, nil
	case askTimedOut:
		return &heartbeatpb.UnregisterResponse{ErrorCode: int32(kerr.RequestTimedOut.Code),
			ErrorMessage: "the controller did not write the assignment in time; the broker may still be unregistered"}, nil
	}
	return r, nil
}

// askState is how a question to the controller actor ended.
type askState uint8

const (
	askAnswered       askState = iota
	askedNoController          // this broker runs no controller
	askTimedOut                // ctx ended first
)

// askController sends this broker's controller actor the message msg builds
// around a reply function, and waits for the reply until ctx ends.
func askController[T any](ctx context.Context, h *Hub, msg func(reply func(T)) any) (T, askState) {
	var zero T
	ref, _ := h.current()
	if !ref.Valid() {
		return zero, askedNoController
	}
	done := make(chan T, 1)
	ref.Send(msg(func(r T) { done <- r }))
	select {
	case r := <-done:
		return r, askAnswered
	case <-ctx.Done():
		return zero, askTimedOut
	}
}
