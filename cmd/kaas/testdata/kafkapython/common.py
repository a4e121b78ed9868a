"""Helpers shared by the kafka-python scripts the Go tests in cmd/kaas run.

Each script prints one JSON object on stdout; kafka-python's log goes to
stderr (KPY_LOG=DEBUG for more).
"""
import logging
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from twomembers import emit, tp_key  # noqa: E402,F401 (the scripts' helpers too)


def setup():
    logging.basicConfig(
        level=os.environ.get("KPY_LOG", "WARNING"),
        stream=sys.stderr,
        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s",
    )
