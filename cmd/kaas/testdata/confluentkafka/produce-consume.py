"""confluent-kafka-python's idempotent producer and classic consumer group
against kaas.

usage: produce-consume.py BOOTSTRAP PREFIX N GROUP CODEC[,CODEC...]

Creates topic PREFIX-CODEC (3 partitions) per codec, starts two Consumers in
GROUP subscribed to all of them (range assignment, no auto-commit) and waits
until they split the partitions, then sends N keyed records with headers to
each topic with an idempotent acks=all Producer compressing with that codec.
The consumers commit synchronously after every batch they take; once every
record is in, each reports what it read and its committed offsets, and
leaves the group. Prints the same JSON shape as kafkapython's
produce-consume.py.
"""
import sys
import threading
import traceback

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import common

bootstrap, prefix, n, group = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
codecs = sys.argv[5].split(",")
topics = ["%s-%s" % (prefix, c) for c in codecs]
all_tps = {(t, p) for t in topics for p in range(3)}

admin = AdminClient(common.config(bootstrap, client_id="cfk-admin"))
created = {}
for t, f in admin.create_topics([NewTopic(t, 3, 1) for t in topics], operation_timeout=10).items():
    err = f.exception(10)
    created[t] = err.args[0].code() if err else 0


class Member(threading.Thread):
    def __init__(self, name):
        super().__init__(name=name, daemon=True)
        self.consumer = Consumer(common.config(
            bootstrap, group_id=group, client_id=name, auto_offset_reset="earliest",
            enable_auto_commit=False, partition_assignment_strategy="range",
            session_timeout_ms=10000, heartbeat_interval_ms=300, fetch_wait_max_ms=100))
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.assigned = set()
        self.records = []
        self.committed = {}
        self.error = None

    def run(self):
        try:
            self.consumer.subscribe(topics)
            while not self.stop.is_set():
                got = []
                for m in self.consumer.consume(num_messages=500, timeout=0.1):
                    if m.error():
                        raise KafkaException(m.error())
                    got.append({
                        "topic": m.topic(),
                        "partition": m.partition(),
                        "offset": m.offset(),
                        "key": m.key().decode(),
                        "value": m.value().decode(),
                        "headers": [[k, v.decode()] for k, v in m.headers() or []],
                    })
                if got:
                    # Commit what was processed before taking more: a
                    # rebalance then never hands a processed record on.
                    self.consumer.commit(asynchronous=False)
                with self.lock:
                    self.assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
                    self.records.extend(got)
            self.committed = {
                common.tp_key(tp.topic, tp.partition): tp.offset
                for tp in self.consumer.committed([TopicPartition(t, p) for t, p in sorted(self.assigned)], 10)
            }
            self.consumer.close()  # LeaveGroup
        except Exception:
            self.error = traceback.format_exc()
            sys.stderr.write(self.error)

    def state(self):
        with self.lock:
            return set(self.assigned), len(self.records)


def wait(what, cond, timeout):
    common.wait(what, lambda: cond() or any(m.error for m in members), timeout)
    if any(m.error for m in members):
        raise SystemExit("failed waiting for %s: %s" % (what, [(m.name, m.error) for m in members]))


members = [Member("cfk-a")]
members[0].start()
wait("cfk-a to own every partition", lambda: members[0].state()[0] == all_tps, 20)
members.append(Member("cfk-b"))
members[1].start()


def split():
    a, b = members[0].state()[0], members[1].state()[0]
    return a and b and not (a & b) and (a | b) == all_tps


wait("cfk-a and cfk-b to split the partitions", split, 20)
assignments = {m.name: sorted(common.tp_key(t, p) for t, p in m.state()[0]) for m in members}

produced = []
for codec, topic in zip(codecs, topics):
    producer = Producer(common.config(
        bootstrap, client_id="cfk-producer-" + codec, enable_idempotence=True, acks="all",
        compression_type=codec, linger_ms=5))
    failed = []

    def delivered(err, m, key, value):
        if err:
            failed.append(common.error(err))
        else:
            produced.append({"topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
                             "key": key, "value": value})

    for i in range(n):
        key, value = "key-%d" % (i % 10), "%s-%05d" % (topic, i)
        headers = [("i", str(i).encode()), ("codec", codec.encode())]
        producer.produce(topic, key=key.encode(), value=value.encode(), headers=headers,
                         on_delivery=lambda err, m, key=key, value=value: delivered(err, m, key, value))
    if producer.flush(10) != 0 or failed:
        raise SystemExit("%s: not every record acknowledged: %s" % (topic, failed))

wait("every record consumed", lambda: sum(m.state()[1] for m in members) >= n * len(topics), 30)
for m in members:
    m.stop.set()
for m in members:
    m.join(20)

common.emit({
    "created": created,
    "assignments": assignments,
    "produced": produced,
    "members": {
        m.name: {
            "records": m.records,
            "committed": m.committed,
            "error": m.error,
            "alive": m.is_alive(),
        }
        for m in members
    },
})
