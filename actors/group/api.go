package group

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/messages"
)

// groupAPI is one group API key as its NN_name.go file declares it: the
// versions served (every version kmsg v1.15 knows, except where noted in
// docs/groups.md) and the handler. None has a conn ErrorResponse: an
// unsupported version or a handler panic is answered with the top-level
// ErrorCode.
type groupAPI struct {
	key, min, max int16
	handle        func(*Coordinator, *conn.Request) conn.Pending
}

// groupAPIs are the group coordinator's APIs; each NN_name.go file adds its
// own in init.
var groupAPIs = map[int16]groupAPI{}

// serve adds a to groupAPIs; a key served twice is a programming error.
func serve(a groupAPI) {
	if _, dup := groupAPIs[a.key]; dup {
		panic("group: API key " + kmsg.NameForKey(a.key) + " served twice")
	}
	groupAPIs[a.key] = a
}

// APIs lists the group coordinator's APIs, by key.
func (c *Coordinator) APIs() []conn.API {
	apis := make([]conn.API, 0, len(groupAPIs))
	for _, a := range groupAPIs {
		apis = append(apis, conn.API{Key: a.key, MinVersion: a.min, MaxVersion: a.max,
			Handle: func(r *conn.Request) conn.Pending { return a.handle(c, r) }})
	}
	slices.SortFunc(apis, func(a, b conn.API) int { return int(a.Key) - int(b.Key) })
	return apis
}

// Register serves the group APIs on srv.
func (c *Coordinator) Register(srv *conn.Server) {
	for _, a := range c.APIs() {
		srv.Register(a)
	}
}

// groupAuthorizedOps is READ | DELETE | DESCRIBE: every group operation
// (kaas has no authorizer).
const groupAuthorizedOps = 1<<3 | 1<<6 | 1<<8

// call routes op for group to its actor and returns a channel that gets the
// reply (or an error reply if the group is not ours, or the coordinator
// stopped).
func (c *Coordinator) call(r *conn.Request, group string, op any) func() any {
	if group == "" {
		x := errorReply(group, op, kerr.InvalidGroupID.Code)
		return func() any { return x }
	}
	if !coordinates(r.View, group) {
		x := errorReply(group, op, kerr.NotCoordinator.Code)
		return func() any { return x }
	}
	ch := make(chan any, 1)
	c.ref.Send(tracing.Wrap(r.Ctx, &messages.GroupCall{
		Group: group, ClientID: r.Header.ClientIDString(), ClientHost: r.MemberHost, Principal: r.Session.Principal, Op: op,
		Reply: func(x any) { ch <- x },
	}))
	return func() any {
		select {
		case x := <-ch:
			return x
		case <-c.done:
			select {
			case x := <-ch:
				return x
			default:
				return errorReply(group, op, kerr.CoordinatorNotAvailable.Code)
			}
		}
	}
}

// dispatch serves a request that addresses one group: its group actor
// (actor.go, serveCall) answers it.
func (c *Coordinator) dispatch(r *conn.Request, group string) conn.Pending {
	wait := c.call(r, group, r.Body)
	return func() kmsg.Response { return wait().(kmsg.Response) }
}
