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

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

import common
import twomembers

common.setup()
bootstrap, prefix, n, group = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
codecs = sys.argv[5].split(",")
topics = ["%s-%s" % (prefix, c) for c in codecs]
all_tps = {(t, p) for t in topics for p in range(3)}

admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpy-admin")
resp = admin.create_topics([NewTopic(t, 3, 1) for t in topics])
created = {t: code for t, code, _ in resp.topic_errors}
admin.close()


class Client:
    """A KafkaConsumer as twomembers.Member drives it."""

    def __init__(self, name):
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

    def poll(self):
        return [
            {
                "topic": r.topic,
                "partition": r.partition,
                "offset": r.offset,
                "key": r.key.decode(),
                "value": r.value.decode(),
                "headers": [[k, v.decode()] for k, v in r.headers],
            }
            for recs in self.consumer.poll(timeout_ms=100).values()
            for r in recs
        ]

    def commit(self):
        self.consumer.commit()

    def assignment(self):
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def committed(self, tps):
        return {common.tp_key(t, p): self.consumer.committed(TopicPartition(t, p)) for t, p in tps}

    def close(self):
        self.consumer.close()


produced = []


def produce():
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


assignments, members = twomembers.run_group(["kpy-a", "kpy-b"], Client, all_tps, produce, n * len(topics))
common.emit({"created": created, "assignments": assignments, "produced": produced, "members": members})
