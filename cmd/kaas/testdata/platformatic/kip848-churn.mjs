// Runs four KIP-848 consumers (groupProtocol "consumer") of one group over
// <topic> (6 partitions) while <n> records are produced: three join and
// leave at different times, the fourth stays until every record is
// processed (or 30 s), each commits every record it processes. Prints how
// often each record was processed and the group as ListGroups shows it.
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import { args, clientOptions, main, print } from './common.mjs'

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

main(async () => {
  const a = args('kip848-churn.mjs <broker> <topic> <n>')
  const n = parseInt(a.n, 10)
  const group = `g-${a.topic}`
  const admin = new Admin(clientOptions(a.broker, 'pk-admin'))
  await admin.createTopics({ topics: [a.topic], partitions: 6, replicas: 1 })
  const producer = new Producer({ ...clientOptions(a.broker, 'pk-producer'), serializers: stringSerializers, idempotent: true })
  const processed = new Map()
  const assigned = {}

  // member joins after startMs and leaves at stopMs; stopMs 0: once every
  // record is processed (at most 30 s after it joined).
  const member = async (id, startMs, stopMs) => {
    await sleep(startMs)
    const c = new Consumer({ ...clientOptions(a.broker, id), groupId: group, groupProtocol: 'consumer', deserializers: stringDeserializers, autocommit: false })
    const stream = await c.consume({ topics: [a.topic], mode: 'committed', fallbackMode: 'earliest' })
    let timer
    if (stopMs > 0) {
      timer = setTimeout(() => stream.close(), stopMs - startMs)
    } else {
      const deadline = Date.now() + 30000
      timer = setInterval(() => {
        if (processed.size >= n || Date.now() > deadline) stream.close()
      }, 100)
    }
    for await (const m of stream) {
      processed.set(m.value, (processed.get(m.value) ?? 0) + 1)
      await m.commit()
    }
    clearTimeout(timer)
    clearInterval(timer)
    assigned[id] = c.assignments
    await c.close()
  }
  const produce = async () => {
    for (let i = 0; i < n; i++) {
      await producer.send({ messages: [{ topic: a.topic, key: `k${i}`, value: `v${i}` }] })
      if (i % 50 === 49) await sleep(100)
    }
  }
  await Promise.all([produce(), member('a', 0, 3000), member('b', 0, 7000), member('c', 1000, 5000), member('d', 2500, 0)])
  const groups = await admin.listGroups({ types: ['consumer'] })
  await producer.close()
  await admin.close()
  const counts = {}
  for (let i = 0; i < n; i++) counts[`v${i}`] = processed.get(`v${i}`) ?? 0
  print({ counts, assigned, group: groups.get(group) })
})
