package metrics

import "github.com/prometheus/client_golang/prometheus"

var mailboxMessages = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: namespace, Name: "actor_mailbox_messages",
	Help: "User messages queued in actor mailboxes and not yet handled, by kind of actor (partition, group, connection, controller, share, other).",
}, []string{"kind"})

func init() { shared = append(shared, mailboxMessages) }

// MailboxMessages is the queued-messages gauge of actors of kind, resolved
// once by the caller.
func MailboxMessages(kind string) prometheus.Gauge { return mailboxMessages.WithLabelValues(kind) }
