"""confluent-kafka-python's transactional producer in a
consume-transform-produce loop against kaas.

usage: transactions.py BOOTSTRAP INPUT OUTPUT FENCE GROUP TXNID

Creates OUTPUT with as many partitions as INPUT has, and FENCE. A consumer in
GROUP (isolation.level=read_committed, no auto-commit) reads INPUT to its
end. A producer with transactional.id TXNID
writes "out-<input value>" to the same partition of OUTPUT for the first
half of each partition's input and sends the consumer's offsets after that
half with send_offsets_to_transaction, then commits; the second half is
written and sent alike, then aborted. OUTPUT is read back read_committed and
read_uncommitted. Last, a second producer with the same TXNID fences the
first: the first's next transaction (to FENCE) fails, the second's commits.
"""
import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import common

bootstrap, inp, outp, fence, group, txnid = sys.argv[1:7]
out = {}

admin = AdminClient(common.config(bootstrap, client_id="cfk-txn-admin"))
partitions = len(admin.list_topics(inp, timeout=10).topics[inp].partitions)
for f in admin.create_topics([NewTopic(outp, partitions, 1), NewTopic(fence, 1, 1)], operation_timeout=10).values():
    f.result(20)

consumer = Consumer(common.config(
    bootstrap, group_id=group, client_id="cfk-txn-consumer", isolation_level="read_committed",
    enable_auto_commit=False, auto_offset_reset="earliest", enable_partition_eof=True,
    session_timeout_ms=10000, heartbeat_interval_ms=500))
consumer.subscribe([inp])
records, at_end = {p: [] for p in range(partitions)}, set()


def input_read():
    """Polls once; True once every partition was read to its end."""
    m = consumer.poll(0.1)
    if m is not None and m.error():
        if m.error().code() != KafkaError._PARTITION_EOF:
            raise KafkaException(m.error())
        at_end.add(m.partition())
    elif m is not None:
        records[m.partition()].append(m)
    return len(at_end) == partitions


common.wait("the input's end", input_read, 30)
out["consumed"] = ["%d/%d/%s" % (m.partition(), m.offset(), m.value().decode())
                   for p in sorted(records) for m in records[p]]


def producer(client_id):
    p = Producer(common.config(bootstrap, client_id=client_id, transactional_id=txnid,
                               transaction_timeout_ms=30000, linger_ms=5))
    p.init_transactions(10)
    return p


def transact(p, batch, end):
    """Writes batch's outputs and waits for them to be acknowledged (an
    abort would otherwise purge them unsent), adds the offsets after the
    batch, then ends the transaction with end (p.commit_transaction or
    p.abort_transaction); returns the offsets sent."""
    p.begin_transaction()
    acked = []
    for m in batch:
        p.produce(outp, key=m.key(), value=b"out-" + m.value(), partition=m.partition(),
                  on_delivery=lambda err, m: acked.append(common.error(err) if err else
                                                          "%d/%d/%s" % (m.partition(), m.offset(), m.value().decode())))
    if p.flush(10) != 0:
        raise SystemExit("outputs not acknowledged within 10s")
    out.setdefault("produced", []).extend(acked)
    offsets = {}
    for m in batch:
        offsets[m.partition()] = max(offsets.get(m.partition(), 0), m.offset() + 1)
    p.send_offsets_to_transaction([TopicPartition(inp, part, o) for part, o in sorted(offsets.items())],
                                  consumer.consumer_group_metadata(), 10)
    end(10)
    return {common.tp_key(inp, part): o for part, o in offsets.items()}


first = producer("cfk-txn-1")
halves = [[m for p in sorted(records) for m in records[p][:len(records[p]) // 2]],
          [m for p in sorted(records) for m in records[p][len(records[p]) // 2:]]]
out["committedOffsets"] = transact(first, halves[0], first.commit_transaction)
out["abortedOffsets"] = transact(first, halves[1], first.abort_transaction)
# What the consumer's OffsetFetch (require_stable) answers for the group.
out["groupCommitted"] = {common.tp_key(tp.topic, tp.partition): tp.offset
                         for tp in consumer.committed([TopicPartition(inp, p) for p in range(partitions)], 10)}
consumer.close()

out["readCommitted"] = common.read_all(bootstrap, outp, partitions, "read_committed")
out["readUncommitted"] = common.read_all(bootstrap, outp, partitions, "read_uncommitted")

# Fencing: the second producer's InitProducerId bumps the epoch.
second = producer("cfk-txn-2")
first.begin_transaction()
first.produce(fence, value=b"fenced")
out["fencedCommit"] = common.outcome(lambda: first.commit_transaction(10))
second.begin_transaction()
second.produce(fence, value=b"fencer")
out["fencerCommit"] = common.outcome(lambda: second.commit_transaction(10))
out["fenceUncommitted"] = common.read_all(bootstrap, fence, 1, "read_uncommitted")
common.emit(out)
