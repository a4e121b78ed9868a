package conn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// recompressProduced applies a topic's compression.type to one partition's
// produced records, as Kafka's broker does: with a codec named (not
// producer), a batch produced with another codec is rewritten with the
// topic's, at the topic's compression.<codec>.level when one is set
// (storage/batch.RecompressLevel). It runs here, on the connection that
// received the request, so the partition actor's mailbox never waits on a
// codec. It runs before the request's Produce messages are sent, inside the
// connection's Receive, on purpose: a connection's produce requests must reach
// their partitions in the order they came (idempotent sequences), and Kafka
// too handles one connection's requests one at a time. Records that are not exactly one batch are passed on untouched
// for the partition actor to refuse. A batch that cannot be decoded gets
// the code the partition actor would give it (code != 0).
func recompressProduced(t *routing.Topic, records []byte) (out []byte, code int16, msg string) {
	if t == nil {
		return records, 0, ""
	}
	codec, ok := topicconfig.Recompression(t.Config)
	if !ok {
		return records, 0, ""
	}
	batches, rest, err := batch.Split(records)
	if err != nil || len(rest) > 0 || len(batches) != 1 {
		return records, 0, ""
	}
	level := batch.DefaultLevel
	if l, set := topicconfig.CompressionLevel(t.Config, codec); set {
		level = l
	}
	out, err = batch.RecompressLevel(batches[0], codec, level)
	switch {
	case err == nil:
		return out, 0, ""
	case errors.Is(err, batch.ErrUnsupportedMagic):
		return nil, kerr.UnsupportedForMessageFormat.Code, err.Error()
	case errors.Is(err, batch.ErrCorrupt):
		return nil, kerr.CorruptMessage.Code, err.Error()
	default:
		return nil, kerr.InvalidRecord.Code, err.Error()
	}
}
