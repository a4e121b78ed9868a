"""confluent-kafka-python's AdminClient against kaas.

usage: admin.py BOOTSTRAP TOPIC GROUP

Every AdminClient call of confluent-kafka-python 1.7.0, with the answers
and the errors each raised; GROUP is a consumer group whose members left.
"""
import sys

from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

import common

bootstrap, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
other, validated, invalid = topic + "-b", topic + "-validated", topic + "-invalid"
admin = AdminClient(common.config(bootstrap, client_id="cfk-admin"))
out = {}


def name(key):
    """A topic's name, or a config resource as "topic/NAME" or "broker/ID"."""
    return "%s/%s" % (key.restype.name.lower(), key.name) if isinstance(key, ConfigResource) else key


def results(futures):
    """A call's futures by name: None for success, else the error."""
    return {name(k): (None if f.exception(20) is None else common.error(f.exception(20))) for k, f in futures.items()}


def topics():
    """The topics list_topics (Metadata) names: those of this script with
    their partitions, and every name."""
    md = admin.list_topics(timeout=10)
    ours = {
        name: {"error": common.error(t.error) if t.error else None, "partitions": [
            {"id": p.id, "leader": p.leader, "replicas": p.replicas, "isrs": p.isrs}
            for p in sorted(t.partitions.values(), key=lambda p: p.id)]}
        for name, t in md.topics.items() if name.startswith(topic)
    }
    return {"ours": ours, "names": sorted(md.topics)}


def configs(resources):
    """describe_configs' entries by "topic/NAME" or "broker/ID"."""
    got = {}
    for res, f in admin.describe_configs(resources, request_timeout=20).items():
        try:
            got[name(res)] = {e.name: {"value": e.value, "readOnly": e.is_read_only, "default": e.is_default,
                                 "sensitive": e.is_sensitive, "source": e.source}
                        for e in f.result(20).values()}
        except Exception as e:  # the test checks which
            got[name(res)] = common.error(e)
    return got


out["create"] = results(admin.create_topics([
    NewTopic(topic, 2, 1, config={"retention.ms": "3600000"}),
    NewTopic(other, 1, 1),
], operation_timeout=10))
out["createValidateOnly"] = results(admin.create_topics([NewTopic(validated, 3, 1)], validate_only=True))
out["createInvalidConfig"] = results(admin.create_topics([NewTopic(invalid, 1, 1, config={"cleanup.policy": "bogus"})]))
out["createAgain"] = results(admin.create_topics([NewTopic(topic, 2, 1)]))
md = admin.list_topics(timeout=10)
out["cluster"] = {"brokers": sorted(md.brokers), "controller": md.controller_id, "clusterId": md.cluster_id}
out["topics"] = topics()
broker = str(md.controller_id)

out["describeConfigs"] = configs([ConfigResource("topic", topic), ConfigResource("broker", broker)])
out["describeConfigsMissing"] = configs([ConfigResource("topic", topic + "-missing")])
out["alterConfigs"] = results(admin.alter_configs([
    ConfigResource("topic", topic, set_config={"retention.ms": "7200000", "cleanup.policy": "compact"}),
]))
out["alterConfigsInvalid"] = results(admin.alter_configs([
    ConfigResource("topic", other, set_config={"cleanup.policy": "bogus"}),
]))
out["alterBrokerConfigs"] = results(admin.alter_configs([
    ConfigResource("broker", broker, set_config={"log.cleaner.backoff.ms": "20000"}),
]))
out["alterBrokerReadOnly"] = results(admin.alter_configs([
    ConfigResource("broker", broker, set_config={"num.partitions": "5"}),
]))
out["describeConfigsAfter"] = configs([ConfigResource("topic", topic), ConfigResource("broker", broker)])

out["createPartitions"] = results(admin.create_partitions([NewPartitions(topic, 4)]))
out["createPartitionsValidateOnly"] = results(admin.create_partitions([NewPartitions(other, 3)], validate_only=True))
out["createPartitionsFewer"] = results(admin.create_partitions([NewPartitions(topic, 3)]))
out["topicsAfter"] = topics()

out["listGroups"] = sorted(g.id for g in admin.list_groups(timeout=10))
out["describeGroup"] = [
    {"id": g.id, "error": common.error(g.error) if g.error else None, "state": g.state,
     "protocolType": g.protocol_type, "protocol": g.protocol, "members": len(g.members),
     "broker": g.broker.id}
    for g in admin.list_groups(group, timeout=10)
]

out["deleteTopics"] = results(admin.delete_topics([topic, other], operation_timeout=10))
out["deleteTopicsAgain"] = results(admin.delete_topics([topic], operation_timeout=10))
out["topicsDeleted"] = topics()["ours"]
common.emit(out)
