'use strict'
// node produce-offsets.js <broker> <topic> <n> [--idempotent] [--gzip]
//
// Covers kafkajs produce without consumer groups: creates <topic> (3
// partitions), produces n keyed messages with acks=-1, and reads the
// partitions' offsets back with admin.fetchTopicOffsets. Prints one JSON line:
//   {"created":bool,"produced":[RecordMetadata...],"offsets":[{"partition","offset","high","low"}...]}
// The Go test then reads the records themselves with franz-go.
const { CompressionTypes, Partitioners } = require('kafkajs')
const { newKafka, parseArgs, messagesFor, run } = require('./common')

const { broker, topic, n, flags } = parseArgs('node produce-offsets.js <broker> <topic> <n> [--idempotent] [--gzip]')

async function main () {
  const kafka = newKafka(broker)

  const admin = kafka.admin()
  await admin.connect()
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions: 3, replicationFactor: 1 }],
    waitForLeaders: true
  })

  const idempotent = flags.has('--idempotent')
  const producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: false,
    idempotent,
    maxInFlightRequests: idempotent ? 1 : undefined
  })
  await producer.connect()
  const messages = messagesFor(n)
  const produced = []
  const compression = flags.has('--gzip') ? CompressionTypes.GZIP : CompressionTypes.None
  for (let i = 0; i < n; i += 50) {
    produced.push(...await producer.send({ topic, acks: -1, compression, messages: messages.slice(i, i + 50) }))
  }
  await producer.disconnect()

  const offsets = await admin.fetchTopicOffsets(topic)
  await admin.disconnect()

  process.stdout.write(JSON.stringify({ created, produced, offsets }) + '\n')
}

run(main, 30000)
