"""kafka-python's KafkaAdminClient against kaas.

usage: admin.py BOOTSTRAP TOPIC GROUP

GROUP is a consumer group that committed offsets and whose members left.
Creates TOPIC (2 partitions, retention.ms set) and TOPIC-b, and prints what
every admin call answered: topics, configs, partitions, groups, offsets,
deletions, and the errors of a topic created twice and a partition count
lowered. A producer sending to TOPIC-auto has the broker create it (its
Metadata v1 asks for that); describe_topics of TOPIC-missing (Metadata v5,
no auto-creation) does not.
"""
import sys

from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import KafkaError
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

import common

common.setup()
bootstrap, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
other = topic + "-b"
admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpy-admin")
out = {"apiVersion": list(admin.config["api_version"])}


def topic_errors(resp):
    return {t: code for t, code, *_ in resp.topic_errors}


def describe(topics):
    return {
        t["topic"]: {"error": t["error_code"], "internal": t["is_internal"], "partitions": sorted(
            [{"partition": p["partition"], "leader": p["leader"], "replicas": p["replicas"], "error": p["error_code"]}
             for p in t["partitions"]], key=lambda p: p["partition"])}
        for t in admin.describe_topics(topics)
    }


def refused(call):
    """The error a call raised (the admin client raises the first error of
    the controller's answer)."""
    try:
        call()
    except KafkaError as e:
        return {"error": type(e).__name__, "errno": e.errno}
    return None


def configs(resources):
    got = {}
    for resp in admin.describe_configs(resources):
        for code, _msg, rtype, name, entries in resp.resources:
            got["%d/%s" % (rtype, name)] = {
                "error": code,
                "configs": {e[0]: e[1] for e in entries},
                "readOnly": sorted(e[0] for e in entries if e[2]),
            }
    return got


out["create"] = topic_errors(admin.create_topics([
    NewTopic(topic, 2, 1, topic_configs={"retention.ms": "3600000"}),
    NewTopic(other, 1, 1),
]))
out["createAgain"] = refused(lambda: admin.create_topics([NewTopic(topic, 2, 1)]))
producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="kpy-auto")
md = producer.send(topic + "-auto", value=b"v").get(timeout=10)
out["autoCreated"] = {"topic": md.topic, "partition": md.partition, "offset": md.offset}
producer.close()
out["listTopics"] = sorted(admin.list_topics())
out["describeTopics"] = describe([topic, other, topic + "-auto", topic + "-missing"])
cluster = admin.describe_cluster()
out["cluster"] = {"brokers": [b["node_id"] for b in cluster["brokers"]], "controller": cluster["controller_id"]}
broker = str(cluster["brokers"][0]["node_id"])
out["describeConfigs"] = configs([
    ConfigResource(ConfigResourceType.TOPIC, topic),
    ConfigResource(ConfigResourceType.BROKER, broker, configs={"num.partitions": None, "log.cleaner.backoff.ms": None}),
])
alter = admin.alter_configs([
    ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "7200000", "cleanup.policy": "compact"}),
])
out["alterConfigs"] = {"%d/%s" % (rtype, name): code for code, _msg, rtype, name in alter.resources}
out["describeConfigsAfter"] = configs([ConfigResource(ConfigResourceType.TOPIC, topic)])

grow = admin.create_partitions({topic: NewPartitions(4)})
out["createPartitions"] = {t: code for t, code, _ in grow.topic_errors}
out["createPartitionsFewer"] = refused(lambda: admin.create_partitions({topic: NewPartitions(3)}))
out["describeTopicsAfter"] = describe([topic])

out["listGroups"] = sorted([list(g) for g in admin.list_consumer_groups()])
out["describeGroups"] = [
    {"group": g.group, "error": g.error_code, "state": g.state, "protocolType": g.protocol_type,
     "protocol": g.protocol, "members": len(g.members)}
    for g in admin.describe_consumer_groups([group, "kpy-no-such-group"])
]
out["groupOffsets"] = {
    common.tp_key(tp.topic, tp.partition): om.offset for tp, om in admin.list_consumer_group_offsets(group).items()
}
out["deleteGroups"] = {g: err.errno for g, err in admin.delete_consumer_groups([group])}
out["listGroupsAfter"] = sorted([list(g) for g in admin.list_consumer_groups()])

out["deleteTopics"] = {t: code for t, code in admin.delete_topics([topic, other, topic + "-auto"]).topic_error_codes}
out["listTopicsAfter"] = sorted(admin.list_topics())
admin.close()
common.emit(out)
