"""kafka-python pinned to a broker version older than 0.11.

usage: pinned.py BOOTSTRAP TOPIC

Users of kafka-python often set api_version=(0, 10, 1) to skip its version
probe. It then produces with Produce v2, which Kafka 4 no longer serves
(KIP-896): the broker closes the connection. Prints the error the send
ended with.
"""
import sys

from kafka import KafkaProducer

import common

common.setup()
bootstrap, topic = sys.argv[1], sys.argv[2]
producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="kpy-pinned", api_version=(0, 10, 1), retries=0)
out = {}
try:
    md = producer.send(topic, key=b"k", value=b"v").get(timeout=10)
    out["produced"] = {"partition": md.partition, "offset": md.offset}
except Exception as e:  # the test checks which
    out["error"] = type(e).__name__
producer.close(timeout=5)
common.emit(out)
