// Drives the Admin client's calls against <topic> and prints each call's
// result, or the broker's error names when it failed: topics and partitions,
// offsets and record deletion, configs, log dirs, group offsets, client
// quotas, and ACLs (the broker runs without an authorizer).
import { Admin, ConfigResourceTypes, Producer, stringSerializers } from '@platformatic/kafka'
import { args, clientOptions, errorCodes, main, print } from './common.mjs'

main(async () => {
  const a = args('admin.mjs <broker> <topic>')
  const admin = new Admin(clientOptions(a.broker, 'pk-admin'))
  const results = {}
  const step = async (name, f) => {
    try {
      results[name] = { value: await f() }
    } catch (e) {
      results[name] = { error: errorCodes(e), message: e.message }
    }
  }
  const topicConfig = (keys) => admin.describeConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: a.topic, configurationKeys: keys }] })
  const offsets = (timestamp) => admin.listOffsets({ topics: [{ name: a.topic, partitions: [0, 1, 2, 3].map(partitionIndex => ({ partitionIndex, timestamp })) }] })
  const group = `g-${a.topic}`

  await step('createTopics', () => admin.createTopics({ topics: [a.topic], partitions: 2, replicas: 1, configs: [{ name: 'retention.ms', value: '3600000' }] }))
  await step('createTopicsAgain', () => admin.createTopics({ topics: [a.topic], partitions: 2, replicas: 1 }))
  await step('createPartitions', () => admin.createPartitions({ topics: [{ name: a.topic, count: 4 }] }))
  await step('metadata', () => admin.metadata({ topics: [a.topic] }))
  const producer = new Producer({ ...clientOptions(a.broker, 'pk-producer'), serializers: stringSerializers })
  await producer.send({ messages: [...Array(8).keys()].map(i => ({ topic: a.topic, partition: i % 4, value: `v${i}` })) })
  await producer.close()
  await step('latestOffsets', () => offsets(-1n))
  await step('deleteRecords', () => admin.deleteRecords({ topics: [{ name: a.topic, partitions: [{ partition: 0, offset: 1n }] }] }))
  await step('earliestOffsets', () => offsets(-2n))
  await step('describeConfigs', () => topicConfig(['retention.ms', 'cleanup.policy']))
  await step('incrementalAlterConfigs', () => admin.incrementalAlterConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: a.topic, configs: [{ name: 'retention.ms', configOperation: 0, value: '7200000' }] }] }))
  await step('afterIncrementalAlter', () => topicConfig(['retention.ms']))
  await step('alterConfigs', () => admin.alterConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: a.topic, configs: [{ name: 'segment.ms', value: '600000' }] }] }))
  await step('afterAlter', () => topicConfig(['retention.ms', 'segment.ms']))
  await step('describeLogDirs', () => admin.describeLogDirs({ topics: [{ name: a.topic, partitions: [0, 1] }] }))
  await step('alterGroupOffsets', () => admin.alterConsumerGroupOffsets({ groupId: group, topics: [{ name: a.topic, partitionOffsets: [{ partition: 0, offset: 1n }, { partition: 1, offset: 2n }] }] }))
  await step('groupOffsets', () => admin.listConsumerGroupOffsets({ groups: [group] }))
  await step('deleteGroupOffsets', () => admin.deleteConsumerGroupOffsets({ groupId: group, topics: [{ name: a.topic, partitionIndexes: [0] }] }))
  await step('groupOffsetsAfterDelete', () => admin.listConsumerGroupOffsets({ groups: [group] }))
  await step('listGroups', () => admin.listGroups({}))
  await step('deleteGroups', () => admin.deleteGroups({ groups: [group] }))
  await step('listGroupsAfterDelete', () => admin.listGroups({}))
  await step('alterClientQuotas', () => admin.alterClientQuotas({ entries: [{ entities: [{ entityType: 'client-id', entityName: `q-${a.topic}` }], ops: [{ key: 'producer_byte_rate', value: 1048576, remove: false }] }] }))
  await step('describeClientQuotas', () => admin.describeClientQuotas({ components: [{ entityType: 'client-id', matchType: 0, match: `q-${a.topic}` }] }))
  await step('createAcls', () => admin.createAcls({ creations: [{ resourceType: 2, resourceName: a.topic, resourcePatternType: 3, principal: 'User:alice', host: '*', operation: 3, permissionType: 3 }] }))
  await step('deleteTopics', () => admin.deleteTopics({ topics: [a.topic] }))
  await step('listTopicsAfterDelete', () => admin.listTopics())
  await admin.close()
  print(results)
})
