'use strict'
// node mixed-group.js <broker> <topic> <n>
//
// A kafkajs consumer (the classic group protocol) joins the consumer group
// `kaas-mixed-<topic>`, which a KIP-848 consumer already runs, reads until it
// has at least n messages, committing each as it goes, then leaves. Prints
// one JSON line of everything it read:
//   {"consumed":[{"partition","offset","key","value"}...]}
const { newKafka, parseArgs, run } = require('./common')

const { broker, topic, n } = parseArgs('node mixed-group.js <broker> <topic> <n>')

async function main () {
  const kafka = newKafka(broker)
  const consumer = kafka.consumer({
    groupId: `kaas-mixed-${topic}`,
    sessionTimeout: 10000,
    heartbeatInterval: 500,
    rebalanceTimeout: 10000,
    maxWaitTimeInMs: 100,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 }
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
    autoCommitThreshold: 1,
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
  await consumer.disconnect() // commits what was consumed, then leaves
  process.stdout.write(JSON.stringify({ consumed }) + '\n')
}

run(main, 60000)
