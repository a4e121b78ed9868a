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

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import common
import twomembers

bootstrap, prefix, n, group = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
codecs = sys.argv[5].split(",")
topics = ["%s-%s" % (prefix, c) for c in codecs]
all_tps = {(t, p) for t in topics for p in range(3)}

admin = AdminClient(common.config(bootstrap, client_id="cfk-admin"))
created = {}
for t, f in admin.create_topics([NewTopic(t, 3, 1) for t in topics], operation_timeout=10).items():
    err = f.exception(10)
    created[t] = err.args[0].code() if err else 0


class Client:
    """A Consumer as twomembers.Member drives it."""

    def __init__(self, name):
        self.consumer = Consumer(common.config(
            bootstrap, group_id=group, client_id=name, auto_offset_reset="earliest",
            enable_auto_commit=False, partition_assignment_strategy="range",
            session_timeout_ms=10000, heartbeat_interval_ms=300, fetch_wait_max_ms=100))
        self.consumer.subscribe(topics)

    def poll(self):
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
        return got

    def commit(self):
        self.consumer.commit(asynchronous=False)

    def assignment(self):
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def committed(self, tps):
        return {common.tp_key(tp.topic, tp.partition): tp.offset
                for tp in self.consumer.committed([TopicPartition(t, p) for t, p in tps], 10)}

    def close(self):
        self.consumer.close()


produced = []


def produce():
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


assignments, members = twomembers.run_group(["cfk-a", "cfk-b"], Client, all_tps, produce, n * len(topics))
common.emit({"created": created, "assignments": assignments, "produced": produced, "members": members})
