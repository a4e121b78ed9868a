'use strict'
// node consume-compacted.js <broker> <topic> <last offset>
//
// Reads <topic> (one partition) from the beginning in a consumer group
// (consumer.run) until it has the record at <last offset>. Prints one JSON
// line: {"consumed":[{"offset","key","value"}...]} (value null: tombstone).
const { newKafka, run } = require('./common')

const [broker, topic, lastArg] = process.argv.slice(2)
const last = parseInt(lastArg, 10)
if (!broker || !topic || !(last >= 0)) {
  process.stderr.write('usage: node consume-compacted.js <broker> <topic> <last offset>\n')
  process.exit(2)
}

async function main () {
  const kafka = newKafka(broker)
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
    eachMessage: async ({ message }) => {
      const offset = Number(message.offset)
      consumed.push({
        offset,
        key: message.key === null ? null : message.key.toString(),
        value: message.value === null ? null : message.value.toString()
      })
      if (offset >= last) finish.resolve()
    }
  })
  await done
  await consumer.disconnect()
  process.stdout.write(JSON.stringify({ consumed }) + '\n')
}

run(main, 45000)
