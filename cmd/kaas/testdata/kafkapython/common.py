"""Helpers shared by the kafka-python scripts the Go tests in cmd/kaas run.

Each script prints one JSON object on stdout; kafka-python's log goes to
stderr (KPY_LOG=DEBUG for more).
"""
import json
import logging
import os
import sys


def setup():
    logging.basicConfig(
        level=os.environ.get("KPY_LOG", "WARNING"),
        stream=sys.stderr,
        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s",
    )


def emit(obj):
    json.dump(obj, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    sys.stdout.flush()


def tp_key(topic, partition):
    return "%s/%d" % (topic, partition)
