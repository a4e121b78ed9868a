'use strict'
// node txn-produce.js <broker> <topic> <n>
//
// Covers kafkajs's transactional producer: creates <topic> (3 partitions),
// then with one transactionalId commits a transaction of n messages
// ("committed-<i>") that also commits offset 5 of <topic>-0 for group
// <topic>-group (AddOffsetsToTxn, TxnOffsetCommit), and aborts a second one of n
// messages ("aborted-<i>") that would commit offset 7. Prints one JSON line:
//   {"created":bool,"committed":[RecordMetadata...],"aborted":[RecordMetadata...]}
// The Go test reads the topic read_committed with franz-go.
const { Partitioners } = require('kafkajs')
const { newKafka, parseArgs, run } = require('./common')

const { broker, topic, n } = parseArgs('node txn-produce.js <broker> <topic> <n>')

function messages (prefix) {
  const out = []
  for (let i = 0; i < n; i++) {
    out.push({ key: `key-${i % 10}`, value: `${prefix}-${i}` })
  }
  return out
}

// transact runs one transaction writing prefix's messages in batches of 50
// and committing offset for the group, then commits or aborts it.
async function transact (producer, prefix, offset, commit) {
  const txn = await producer.transaction()
  const meta = []
  const msgs = messages(prefix)
  for (let i = 0; i < n; i += 50) {
    meta.push(...await txn.send({ topic, acks: -1, messages: msgs.slice(i, i + 50) }))
  }
  await txn.sendOffsets({
    consumerGroupId: `${topic}-group`,
    topics: [{ topic, partitions: [{ partition: 0, offset: String(offset) }] }]
  })
  if (commit) {
    await txn.commit()
  } else {
    await txn.abort()
  }
  return meta
}

async function main () {
  const kafka = newKafka(broker)
  const admin = kafka.admin()
  await admin.connect()
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions: 3, replicationFactor: 1 }],
    waitForLeaders: true
  })
  await admin.disconnect()

  const producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: false,
    transactionalId: `${topic}-txn`,
    idempotent: true,
    maxInFlightRequests: 1
  })
  await producer.connect()
  const committed = await transact(producer, 'committed', 5, true)
  const aborted = await transact(producer, 'aborted', 7, false)
  await producer.disconnect()

  process.stdout.write(JSON.stringify({ created, committed, aborted }) + '\n')
}

run(main, 40000)
