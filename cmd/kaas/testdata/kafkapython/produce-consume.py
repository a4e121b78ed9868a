"""kafka-python's producer and classic consumer group against kaas.

usage: produce-consume.py BOOTSTRAP PREFIX N GROUP CODEC[,CODEC...]

Creates topic PREFIX-CODEC (3 partitions) per codec, starts two
KafkaConsumers in GROUP subscribed to all of them and waits until they split
the partitions, then sends N keyed records with headers to each topic with an
acks='all' KafkaProducer compressing with that codec. The consumers commit
after every poll; once every record is in, each reports what it read and its
committed offsets, and leaves the group.
"""
import sys
import threading
import time
import traceback

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

import common

common.setup()
bootstrap, prefix, n, group = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
codecs = sys.argv[5].split(",")
topics = ["%s-%s" % (prefix, c) for c in codecs]
all_tps = {(t, p) for t in topics for p in range(3)}

admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpy-admin")
resp = admin.create_topics([NewTopic(t, 3, 1) for t in topics])
created = {t: code for t, code, _ in resp.topic_errors}
admin.close()


class Member(threading.Thread):
    def __init__(self, name):
        super().__init__(name=name, daemon=True)
        self.consumer = KafkaConsumer(
            *topics,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10000,
            heartbeat_interval_ms=300,
            fetch_max_wait_ms=100,
        )
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.assigned = set()
        self.records = []
        self.committed = {}
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                batches = self.consumer.poll(timeout_ms=100)
                got = [
                    {
                        "topic": r.topic,
                        "partition": r.partition,
                        "offset": r.offset,
                        "key": r.key.decode(),
                        "value": r.value.decode(),
                        "headers": [[k, v.decode()] for k, v in r.headers],
                    }
                    for recs in batches.values()
                    for r in recs
                ]
                if got:
                    # Commit what was processed before taking more: a
                    # rebalance then never hands a processed record on.
                    self.consumer.commit()
                with self.lock:
                    self.assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
                    self.records.extend(got)
            self.committed = {
                common.tp_key(t, p): self.consumer.committed(TopicPartition(t, p))
                for t, p in sorted(self.assigned)
            }
            self.consumer.close()  # LeaveGroup
        except Exception:
            self.error = traceback.format_exc()
            sys.stderr.write(self.error)

    def state(self):
        with self.lock:
            return set(self.assigned), len(self.records)


def wait(what, cond, timeout):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline or any(m.error for m in members):
            raise SystemExit("timed out waiting for %s: %s" % (what, [(m.name, m.state(), m.error) for m in members]))
        time.sleep(0.05)


members = [Member("kpy-a")]
members[0].start()
wait("kpy-a to own every partition", lambda: members[0].state()[0] == all_tps, 20)
members.append(Member("kpy-b"))
members[1].start()


def split():
    a, b = members[0].state()[0], members[1].state()[0]
    return a and b and not (a & b) and (a | b) == all_tps


wait("kpy-a and kpy-b to split the partitions", split, 20)
assignments = {m.name: sorted(common.tp_key(t, p) for t, p in m.state()[0]) for m in members}

produced = []
for codec, topic in zip(codecs, topics):
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id="kpy-producer-" + codec,
        acks="all",
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
    )
    futures = []
    for i in range(n):
        key, value = "key-%d" % (i % 10), "%s-%05d" % (topic, i)
        headers = [("i", str(i).encode()), ("codec", codec.encode())]
        futures.append((key, value, producer.send(topic, key=key.encode(), value=value.encode(), headers=headers)))
    producer.flush()
    for key, value, f in futures:
        md = f.get(timeout=10)
        produced.append({"topic": md.topic, "partition": md.partition, "offset": md.offset, "key": key, "value": value})
    producer.close()

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
