'use strict'
// node sasl-produce-consume.js <broker> <topic> <group> <n> <ca.crt> <mechanism> <user> <password> <denied-topic>
//
// Over TLS (trusting ca.crt) with SASL <mechanism>: produces n messages to
// <topic>, reads them back in consumer group <group>, then tries to produce
// to <denied-topic>. Prints {"produced":n,"consumed":n,"denied":"<error type>"}.
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')
const { errorCodes } = require('kafkajs/src/protocol/error')
const { run } = require('./common')

const [broker, topic, group, nArg, ca, mechanism, username, password, deniedTopic] = process.argv.slice(2)
const n = parseInt(nArg, 10)
if (!deniedTopic || !(n > 0)) {
  process.stderr.write('usage: node sasl-produce-consume.js <broker> <topic> <group> <n> <ca.crt> <mechanism> <user> <password> <denied-topic>\n')
  process.exit(2)
}

// errorType digs the Kafka error type out of kafkajs's wrappers; some of
// them keep only the protocol error's message, found in kafkajs's own table.
function errorType (err) {
  for (let e = err; e; e = e.originalError || e.cause) {
    if (e.type) return e.type
    const known = errorCodes.find(c => c.message === e.message)
    if (known) return known.type
  }
  return String(err && err.message)
}

async function main () {
  const kafka = new Kafka({
    clientId: 'kaas-kafkajs-sasl-test',
    brokers: [broker],
    ssl: { ca: [fs.readFileSync(ca, 'utf8')] },
    sasl: { mechanism, username, password },
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 }
  })
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const messages = []
  for (let i = 0; i < n; i++) messages.push({ key: `k-${i}`, value: `v-${i}` })
  await producer.send({ topic, acks: -1, messages })

  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 1000, rebalanceTimeout: 10000, maxWaitTimeInMs: 250 })
  let consumed = 0
  let finish
  const done = new Promise((resolve, reject) => { finish = { resolve, reject } })
  consumer.on(consumer.events.CRASH, ev => finish.reject(ev.payload.error))
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async () => {
      consumed++
      if (consumed >= n) finish.resolve()
    }
  })
  await done
  await consumer.disconnect()

  let denied = 'none'
  try {
    await producer.send({ topic: deniedTopic, acks: -1, messages: [{ value: 'x' }] })
  } catch (err) {
    denied = errorType(err)
  }
  await producer.disconnect()
  process.stdout.write(JSON.stringify({ produced: n, consumed, denied }) + '\n')
}

run(main, 60000)
