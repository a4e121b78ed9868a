package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
)

// APIs lists the group coordinator's APIs and the versions served: every
// version kmsg v1.15 knows, except where noted in docs/groups.md.
func (c *Coordinator) APIs() []conn.API {
	return []conn.API{
		{Key: kmsg.FindCoordinator.Int16(), MinVersion: 0, MaxVersion: 6, Handle: handleFindCoordinator},
		{Key: kmsg.JoinGroup.Int16(), MinVersion: 0, MaxVersion: 9, Handle: c.handleOne},
		{Key: kmsg.SyncGroup.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleOne},
		{Key: kmsg.Heartbeat.Int16(), MinVersion: 0, MaxVersion: 4, Handle: c.handleOne},
		{Key: kmsg.LeaveGroup.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleOne},
		{Key: kmsg.OffsetCommit.Int16(), MinVersion: 0, MaxVersion: 10, Handle: c.handleOne},
		{Key: kmsg.OffsetFetch.Int16(), MinVersion: 0, MaxVersion: 10, Handle: c.handleOffsetFetch},
		{Key: kmsg.ListGroups.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleListGroups},
		{Key: kmsg.DescribeGroups.Int16(), MinVersion: 0, MaxVersion: 6, Handle: c.handleDescribeGroups},
		{Key: kmsg.DeleteGroups.Int16(), MinVersion: 0, MaxVersion: 3, Handle: c.handleDeleteGroups},
		{Key: kmsg.OffsetDelete.Int16(), MinVersion: 0, MaxVersion: 0, Handle: c.handleOne},
		{Key: kmsg.ConsumerGroupHeartbeat.Int16(), MinVersion: 0, MaxVersion: 1, Handle: c.handleOne},
		{Key: kmsg.ConsumerGroupDescribe.Int16(), MinVersion: 0, MaxVersion: 1, Handle: c.handleConsumerGroupDescribe},
	}
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

// handleFindCoordinator answers from the routing view. Transaction
// coordinators are refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which
// every client treats as fatal (kaas serves no transactions); share groups
// with INVALID_REQUEST.
func handleFindCoordinator(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		switch req.CoordinatorType {
		case 0:
			b, _ := r.View.CoordinatorFor(key)
			if b.Host == "" || b.Fenced || !b.Alive {
				c.ErrorCode = kerr.CoordinatorNotAvailable.Code
				break
			}
			c.NodeID, c.Host, c.Port = b.ID, b.Host, b.Port
		case 1:
			c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			c.ErrorMessage = strp("kaas does not serve transactions")
		default:
			c.ErrorCode = kerr.InvalidRequest.Code
			c.ErrorMessage = strp("kaas serves consumer-group coordinators only")
		}
		if c.ErrorCode != 0 && c.ErrorMessage == nil {
			c.ErrorMessage = strp(kerr.ErrorForCode(c.ErrorCode).Error())
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
	}
	return conn.Ready(resp)
}

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
	c.ref.Send(&messages.GroupCall{
		Group: group, ClientID: r.Header.ClientIDString(), ClientHost: r.ClientHost, Op: op,
		Reply: func(x any) { ch <- x },
	})
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

// handleOne serves the APIs that address one group.
func (c *Coordinator) handleOne(r *conn.Request) conn.Pending {
	var group string
	switch req := r.Body.(type) {
	case *kmsg.JoinGroupRequest:
		group = req.Group
	case *kmsg.SyncGroupRequest:
		group = req.Group
	case *kmsg.HeartbeatRequest:
		group = req.Group
	case *kmsg.LeaveGroupRequest:
		group = req.Group
	case *kmsg.OffsetCommitRequest:
		group = req.Group
	case *kmsg.OffsetDeleteRequest:
		group = req.Group
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if req.Group == "" {
			return conn.Ready(cgError(kerr.InvalidRequest.Code, "GroupId can't be empty."))
		}
		group = req.Group
	}
	wait := c.call(r, group, r.Body)
	return func() kmsg.Response { return wait().(kmsg.Response) }
}

func (c *Coordinator) handleOffsetFetch(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	groups := req.Groups
	if req.Version < 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = req.Group
		if req.Topics != nil || req.Version < 2 {
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		for _, t := range req.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			g.Topics = append(g.Topics, gt)
		}
		groups = []kmsg.OffsetFetchRequestGroup{g}
	}
	waits := make([]func() any, len(groups))
	for i, g := range groups {
		f := &messages.GroupFetchOffsets{Version: req.Version, MemberID: g.MemberID, MemberEpoch: g.MemberEpoch, RequireStable: req.RequireStable}
		if req.Version < 9 {
			f.MemberID, f.MemberEpoch = nil, -1
		}
		if g.Topics != nil {
			f.Topics = []messages.GroupTopic{}
			for _, t := range g.Topics {
				f.Topics = append(f.Topics, messages.GroupTopic{Topic: t.Topic, TopicID: t.TopicID, Partitions: t.Partitions})
			}
		}
		waits[i] = c.call(r, g.Group, f)
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			rg := wait().(kmsg.OffsetFetchResponseGroup)
			rg.Group = groups[i].Group
			if req.Version >= 8 {
				resp.Groups = append(resp.Groups, rg)
				continue
			}
			resp.ErrorCode = rg.ErrorCode
			if rg.ErrorCode != 0 && req.Version < 2 {
				// v0-v1 carry errors per partition only.
				for _, t := range req.Topics {
					rt := kmsg.NewOffsetFetchResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetFetchResponseTopicPartition()
						rp.Partition, rp.Offset, rp.ErrorCode, rp.Metadata = p, -1, rg.ErrorCode, strp("")
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
				continue
			}
			for _, t := range rg.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp
	}
}

func (c *Coordinator) handleDescribeGroups(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	waits := make([]func() any, len(req.Groups))
	for i, g := range req.Groups {
		waits[i] = c.call(r, g, &messages.GroupDescribe{Version: req.Version})
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			d := wait().(kmsg.DescribeGroupsResponseGroup)
			d.Group = req.Groups[i]
			if req.IncludeAuthorizedOperations {
				d.AuthorizedOperations = groupAuthorizedOps
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp
	}
}

func (c *Coordinator) handleDeleteGroups(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	waits := make([]func() any, len(req.Groups))
	for i, g := range req.Groups {
		waits[i] = c.call(r, g, &messages.GroupDelete{})
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			d := wait().(kmsg.DeleteGroupsResponseGroup)
			d.Group = req.Groups[i]
			resp.Groups = append(resp.Groups, d)
		}
		return resp
	}
}

func (c *Coordinator) handleConsumerGroupDescribe(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	waits := make([]func() any, len(req.Groups))
	for i, g := range req.Groups {
		waits[i] = c.call(r, g, &messages.GroupDescribeConsumer{})
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			d := wait().(kmsg.ConsumerGroupDescribeResponseGroup)
			d.Group = req.Groups[i]
			if req.IncludeAuthorizedOperations {
				d.AuthorizedOperations = groupAuthorizedOps
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp
	}
}

func (c *Coordinator) handleListGroups(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	type answer struct {
		rows []messages.GroupRow
		code int16
	}
	ch := make(chan answer, 1)
	l := &messages.GroupList{Reply: func(rows []messages.GroupRow, code int16) { ch <- answer{rows, code} }}
	if req.Version >= 4 {
		l.States = req.StatesFilter
	}
	if req.Version >= 5 {
		l.Types = req.TypesFilter
	}
	c.ref.Send(l)
	return func() kmsg.Response {
		var a answer
		select {
		case a = <-ch:
		case <-c.done:
			a.code = kerr.CoordinatorNotAvailable.Code
		}
		resp.ErrorCode = a.code
		for _, row := range a.rows {
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState, g.GroupType = row.Group, row.ProtocolType, row.State, row.Type
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}
