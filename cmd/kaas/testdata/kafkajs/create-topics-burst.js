'use strict'
// node create-topics-burst.js <broker> <prefix> <n>
//
// Creates n topics (<prefix>-0 ... <prefix>-(n-1), one partition each) with n
// concurrent admin.createTopics calls, as a test suite or a provisioning tool
// does, then lists the topics. Prints one JSON line:
//   {"created":<calls answered true>,"errors":[message...],"listed":<topics of the prefix listed>}
const { newKafka, parseArgs, run } = require('./common')

const { broker, topic: prefix, n } = parseArgs('node create-topics-burst.js <broker> <prefix> <n>')

async function main () {
  // Longer than the broker's admin timeout (15 s), so every call gets the
  // broker's answer rather than a client-side timeout.
  const admin = newKafka(broker, { requestTimeout: 90000 }).admin()
  await admin.connect()
  const names = Array.from({ length: n }, (_, i) => `${prefix}-${i}`)
  const results = await Promise.allSettled(names.map(topic =>
    admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: false })))
  const created = results.filter(r => r.status === 'fulfilled' && r.value === true).length
  const errors = results.filter(r => r.status === 'rejected').map(r => {
    const e = r.reason
    const inner = (e.errors || []).map(x => x.message).join('; ')
    return inner ? `${e.message}: ${inner}` : e.message
  })
  const listed = (await admin.listTopics()).filter(t => t.startsWith(`${prefix}-`)).length
  await admin.disconnect()
  process.stdout.write(JSON.stringify({ created, errors: [...new Set(errors)], listed }) + '\n')
}

run(main, 240000)
