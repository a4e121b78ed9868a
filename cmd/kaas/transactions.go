package main

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/actors/txn"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/txnlog"
)

// txnOptions are the transaction coordinator's settings (tests shorten
// them); zero fields take Kafka's defaults.
var txnOptions txn.Options

// registerTransactions starts the transaction coordinator and serves the
// transaction APIs. Its log is <data-dir>/__transactions on the shared
// volume (in memory without --data-dir). It stops with the supervisor.
func registerTransactions(b *broker) {
	opts := txnOptions
	opts.Views = b.views
	opts.Log = b.logger("actor", "transactions")
	opts.NewProducerID = b.srv.NextProducerID
	opts.Watch = b.sup.PID()
	if opts.Core.IDExpiration == 0 {
		opts.Core.IDExpiration = b.cfg.TransactionalIDExpiration
	}
	if opts.Core.MaxTimeout == 0 {
		opts.Core.MaxTimeout = b.cfg.TransactionMaxTimeout
	}
	if b.fence != nil {
		// Cluster mode: the ids held ride the heartbeat with the groups,
		// so a moving id's slot is granted only once this broker let go.
		sup := b.sup
		opts.OnIDsChanged = func(ids []string) { sup.Send(&supervisor.TxnIDsLed{Names: ids}) }
	}
	if b.cfg.DataDir != "" {
		st, err := txnlog.NewFile(b.cfg.DataDir)
		if err != nil {
			// Never fall back to memory: a moved coordinator would lose
			// every transaction. The transaction APIs stay unregistered
			// and InitProducerId with a transactional id is refused.
			b.log.Error().Err(err).Msg("transaction log unavailable; transactions disabled")
			return
		}
		// Coordinators move between processes only in cluster mode:
		// there an id's log is claimed by the coordinator that loads it.
		st.Claims = b.fence != nil
		opts.Store = st
	} else {
		opts.Store = txnlog.NewMemory()
	}
	// Markers for partitions led by other brokers go to their leaders as
	// WriteTxnMarkers requests, over the first listener's protocol.
	remote := &txn.Remote{Peers: b.peers}
	opts.Remote = remote.Write
	opts.RemoteVerify = remote.Verify
	if b.groups != nil {
		groups := b.groups.Ref()
		local := func(m *messages.TxnOffsetsEnd) {
			groups.Send(&messages.GroupCall{Group: m.Group, Op: m, Reply: func(x any) {
				code, ok := x.(int16)
				if !ok {
					code = kerr.UnknownServerError.Code
				}
				m.Reply(code)
			}})
		}
		// A group's marker goes to the group's coordinator: this broker's
		// group coordinator, or another broker's as a WriteTxnMarkers
		// request (answered through srv.TxnOffsetsEnd there). Failures
		// are retried with the transaction's other markers.
		views := b.views
		opts.Groups = func(m *messages.TxnOffsetsEnd) {
			v := views.Load()
			if v == nil {
				m.Reply(kerr.CoordinatorNotAvailable.Code)
				return
			}
			cb, ours := v.CoordinatorFor(m.Group)
			switch {
			case ours:
				local(m)
			case cb.Port == 0:
				m.Reply(kerr.CoordinatorNotAvailable.Code) // slot held between coordinators
			default:
				remote.WriteGroup(cb, m)
			}
		}
		b.srv.TxnOffsetsEnd = local
	}
	c, err := txn.Start(b.system, "transactions", opts)
	if err != nil {
		b.log.Error().Err(err).Msg("start transaction coordinator")
		return
	}
	c.Register(b.srv)
	// Transactional batches are verified with the coordinator (KIP-890).
	b.srv.VerifyTxn = c.Verify
}
