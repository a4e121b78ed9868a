"""Helpers shared by the confluent-kafka-python scripts the Go tests in
cmd/kaas run.

Each script prints one JSON object on stdout; librdkafka logs to stderr
(CFK_DEBUG=broker,protocol,eos,cgrp,... turns on its debug contexts).
"""
import os
import sys
import time

from confluent_kafka import KafkaError, KafkaException

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from twomembers import emit, tp_key  # noqa: E402,F401 (the scripts' helpers too)


def config(bootstrap, **extra):
    """A client configuration: extra's keys with '_' for '.'."""
    conf = {"bootstrap.servers": bootstrap}
    if os.environ.get("CFK_DEBUG"):
        conf["debug"] = os.environ["CFK_DEBUG"]
    conf.update({k.replace("_", "."): v for k, v in extra.items()})
    return conf


def error(err):
    """A KafkaError (or the one a KafkaException carries) as the tests see it."""
    if isinstance(err, KafkaException):
        err = err.args[0]
    if not isinstance(err, KafkaError):
        return {"name": type(err).__name__, "str": str(err)}
    return {"name": err.name(), "code": err.code(), "fatal": err.fatal(), "retriable": err.retriable(),
            "abortable": err.txn_requires_abort()}


def outcome(call):
    """None when call() returns, else the error it raised."""
    try:
        call()
    except KafkaException as e:
        return error(e)
    return None


def wait(what, cond, timeout):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise SystemExit("timed out waiting for " + what)
        time.sleep(0.05)


def read_all(bootstrap, topic, partitions, isolation, group_id="cfk-reader"):
    """Every record of topic's partitions from offset 0 to their end as a
    consumer with isolation.level=isolation sees them (assigned, no group
    membership), as "partition/offset/value" strings."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(config(bootstrap, group_id=group_id, isolation_level=isolation, enable_partition_eof=True,
                        enable_auto_commit=False, auto_offset_reset="earliest"))
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, at_end = [], set()
    deadline = time.time() + 20
    while len(at_end) < partitions:
        if time.time() > deadline:
            raise SystemExit("timed out reading %s (%s): %s" % (topic, isolation, got))
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
                continue
            raise KafkaException(m.error())
        got.append("%d/%d/%s" % (m.partition(), m.offset(), m.value().decode()))
    c.close()
    return got
