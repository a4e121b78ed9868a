'use strict'
// node sasl-produce.js <broker> <topic> <n> <ca.crt> <mechanism> <user> <password>
//
// Connects over TLS (trusting ca.crt) with SASL <mechanism> (plain,
// scram-sha-256, scram-sha-512), produces n messages with acks=-1 and
// prints {"produced":n}. A failed authentication exits 1 with the error.
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')
const { run } = require('./common')

const [broker, topic, nArg, ca, mechanism, username, password] = process.argv.slice(2)
const n = parseInt(nArg, 10)
if (!password || !(n > 0)) {
  process.stderr.write('usage: node sasl-produce.js <broker> <topic> <n> <ca.crt> <mechanism> <user> <password>\n')
  process.exit(2)
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
    retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 500 }
  })
  const producer = kafka.producer({ allowAutoTopicCreation: true })
  await producer.connect()
  const messages = []
  for (let i = 0; i < n; i++) messages.push({ key: `k-${i}`, value: `v-${i}` })
  await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  process.stdout.write(JSON.stringify({ produced: n }) + '\n')
}

run(main, 30000)
