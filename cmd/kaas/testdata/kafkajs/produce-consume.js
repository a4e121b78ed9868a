'use strict'
// node produce-consume.js <broker> <topic> <n>
//
// Creates <topic> (3 partitions) with the admin client, produces n keyed
// messages with acks=-1, then reads them back with a consumer in a consumer
// group (consumer.run). Prints one JSON line:
//   {"created":bool,"partitions":3,"produced":[RecordMetadata...],
//    "consumed":[{"partition","offset","key","value"}...]}
const { Partitioners } = require('kafkajs')
const { newKafka, parseArgs, messagesFor, run } = require('./common')

const { broker, topic, n } = parseArgs('node produce-consume.js <broker> <topic> <n>')

async function main () {
  const kafka = newKafka(broker)

  const admin = kafka.admin()
  await admin.connect()
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions: 3, replicationFactor: 1 }],
    waitForLeaders: true
  })
  const meta = await admin.fetchTopicMetadata({ topics: [topic] })
  await admin.disconnect()

  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false })
  await producer.connect()
  const messages = messagesFor(n)
  const produced = []
  for (let i = 0; i < n; i += 50) {
    produced.push(...await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 50) }))
  }
  await producer.disconnect()

  const consumer = kafka.consumer({
    groupId: `kaas-kafkajs-${topic}`,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
    rebalanceTimeout: 10000,
    maxWaitTimeInMs: 250,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 }
  })
  const consumed = []
  let finish
  const done = new Promise((resolve, reject) => {
    finish = { resolve, reject }
  })
  consumer.on(consumer.events.CRASH, ev => {
    finish.reject(new Error(`consumer crashed (restart=${ev.payload.restart}): ${ev.payload.error && ev.payload.error.stack}`))
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      consumed.push({
        partition,
        offset: Number(message.offset),
        key: message.key === null ? null : message.key.toString(),
        value: message.value === null ? null : message.value.toString()
      })
      if (consumed.length >= n) finish.resolve()
    }
  })
  await done
  // Linger a little so duplicates past n would be seen too.
  await new Promise(resolve => setTimeout(resolve, 300))
  await consumer.disconnect()

  process.stdout.write(JSON.stringify({ created, partitions: meta.topics[0].partitions.length, produced, consumed }) + '\n')
}

run(main, 45000)
