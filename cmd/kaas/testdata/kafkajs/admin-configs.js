'use strict'
// node admin-configs.js <broker> <topic> <n>
//
// The topic and broker configs kafkajs's own test suite relies on:
//  - the broker's default.replication.factor and num.partitions, read with
//    admin.describeConfigs, and a topic created without either (<topic>-defaults)
//    described by admin.fetchTopicMetadata;
//  - message.timestamp.difference.max.ms (removed in Kafka 4, still sent by
//    kafkajs users): <topic> is created with a one-hour bound, then n records an
//    hour and a half old are produced (refused), then n current ones (written).
// Prints one JSON line:
//   {"brokerConfigs":{name:value},"defaults":{"partitions","replicas":[n...]},
//    "topicConfig":value,"old":{"error","type"},"current":[RecordMetadata...],"offsets":[...]}
const { ConfigResourceTypes, Partitioners } = require('kafkajs')
const { newKafka, parseArgs, messagesFor, run } = require('./common')

const { broker, topic, n } = parseArgs('node admin-configs.js <broker> <topic> <n>')

async function main () {
  const kafka = newKafka(broker)
  const admin = kafka.admin()
  await admin.connect()

  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.BROKER, name: '0', configNames: ['default.replication.factor', 'num.partitions'] }]
  })
  const brokerConfigs = {}
  for (const e of described.resources[0].configEntries) brokerConfigs[e.configName] = e.configValue

  await admin.createTopics({ topics: [{ topic: `${topic}-defaults` }], waitForLeaders: true })
  const md = await admin.fetchTopicMetadata({ topics: [`${topic}-defaults`] })
  const parts = md.topics[0].partitions
  const defaults = { partitions: parts.length, replicas: parts.map(p => p.replicas.length) }

  await admin.createTopics({
    topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'message.timestamp.difference.max.ms', value: '3600000' }] }],
    waitForLeaders: true
  })
  const tc = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['message.timestamp.difference.max.ms'] }]
  })
  const topicConfig = tc.resources[0].configEntries.length ? tc.resources[0].configEntries[0].configValue : null

  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false, retry: { retries: 0 } })
  await producer.connect()
  const oldTs = String(Date.now() - 90 * 60 * 1000)
  let old = null
  try {
    await producer.send({ topic, acks: -1, messages: messagesFor(n).map(m => ({ ...m, timestamp: oldTs })) })
  } catch (e) {
    old = { error: e.message, type: e.type || (e.originalError && e.originalError.type) || null }
  }
  const current = await producer.send({ topic, acks: -1, messages: messagesFor(n) })
  await producer.disconnect()

  const offsets = await admin.fetchTopicOffsets(topic)
  await admin.disconnect()
  process.stdout.write(JSON.stringify({ brokerConfigs, defaults, topicConfig, old, current, offsets }) + '\n')
}

run(main, 30000)
