"""What the Python clients' scripts share (kafkapython's and
confluentkafka's common.py put this directory on sys.path): the JSON output,
and produce-consume.py's two consumer-group members.

A member is a thread around a client adapter with these methods:
  poll()              -> the records taken, as dicts (topic, partition,
                         offset, key, value, headers)
  commit()            commits what poll() returned
  assignment()        -> set of (topic, partition)
  committed(tps)      -> {"topic/partition": offset} for the pairs tps
  close()             leaves the group
"""
import json
import sys
import threading
import time
import traceback


def emit(obj):
    json.dump(obj, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    sys.stdout.flush()


def tp_key(topic, partition):
    return "%s/%d" % (topic, partition)


class Member(threading.Thread):
    def __init__(self, name, client):
        super().__init__(name=name, daemon=True)
        self.client = client
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.assigned = set()
        self.records = []
        self.committed = {}
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                got = self.client.poll()
                if got:
                    # Commit what was processed before taking more: a
                    # rebalance then never hands a processed record on.
                    self.client.commit()
                with self.lock:
                    self.assigned = self.client.assignment()
                    self.records.extend(got)
            self.committed = self.client.committed(sorted(self.assigned))
            self.client.close()  # LeaveGroup
        except Exception:
            self.error = traceback.format_exc()
            sys.stderr.write(self.error)

    def state(self):
        with self.lock:
            return set(self.assigned), len(self.records)

    def report(self):
        return {"records": self.records, "committed": self.committed, "error": self.error, "alive": self.is_alive()}


def run_group(names, new_client, all_tps, produce, want):
    """Starts a member named names[0] and waits until it owns all_tps, then
    one named names[1] and waits until they split them; calls produce(), then
    waits until the members read want records, stops them and returns their
    assignments and reports. new_client(name) makes a member's adapter."""
    members = []

    def wait(what, cond, timeout):
        deadline = time.time() + timeout
        while not cond():
            if time.time() > deadline or any(m.error for m in members):
                raise SystemExit("timed out waiting for %s: %s" % (what, [(m.name, m.state(), m.error) for m in members]))
            time.sleep(0.05)

    def split():
        a, b = members[0].state()[0], members[1].state()[0]
        return a and b and not (a & b) and (a | b) == all_tps

    members.append(Member(names[0], new_client(names[0])))
    members[0].start()
    wait("%s to own every partition" % names[0], lambda: members[0].state()[0] == all_tps, 20)
    members.append(Member(names[1], new_client(names[1])))
    members[1].start()
    wait("%s and %s to split the partitions" % tuple(names), split, 20)
    assignments = {m.name: sorted(tp_key(t, p) for t, p in m.state()[0]) for m in members}

    produce()
    wait("every record consumed", lambda: sum(m.state()[1] for m in members) >= want, 30)
    for m in members:
        m.stop.set()
    for m in members:
        m.join(20)
    return assignments, {m.name: m.report() for m in members}
