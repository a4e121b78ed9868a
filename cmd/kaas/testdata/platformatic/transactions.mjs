// Consume-transform-produce in a transaction: reads <topic> (4 records) in a
// group, writes each transformed to <topic>-out and adds the group's offsets
// to the transaction, commits it; then a second transaction is aborted.
// Prints what read_committed and read_uncommitted consumers read of the
// output and the group's committed offsets.
import { Admin, Consumer, FetchIsolationLevels, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import { args, clientOptions, committedSum, main, print, readFor } from './common.mjs'

main(async () => {
  const a = args('transactions.mjs <broker> <topic>')
  const out = `${a.topic}-out`
  const group = `g-${a.topic}`
  const admin = new Admin(clientOptions(a.broker, 'pk-admin'))
  await admin.createTopics({ topics: [a.topic, out], partitions: 2, replicas: 1 })
  const seed = new Producer({ ...clientOptions(a.broker, 'pk-seed'), serializers: stringSerializers })
  await seed.send({ messages: [1, 2, 3, 4].map(i => ({ topic: a.topic, key: `k${i}`, value: `in${i}` })) })
  await seed.close()

  const consumer = new Consumer({ ...clientOptions(a.broker, 'pk-consumer'), groupId: group, deserializers: stringDeserializers, autocommit: false })
  const producer = new Producer({ ...clientOptions(a.broker, 'pk-txn'), serializers: stringSerializers, idempotent: true, transactionalId: `tx-${a.topic}` })
  const stream = await consumer.consume({ topics: [a.topic], mode: 'earliest' })
  const committedTxn = await producer.beginTransaction()
  await committedTxn.addConsumer(consumer)
  let n = 0
  for await (const m of stream) {
    await committedTxn.send({ messages: [{ topic: out, key: m.key, value: m.value.replace('in', 'out') }] })
    await committedTxn.addOffset(m)
    if (++n === 4) break
  }
  await committedTxn.commit()
  await stream.close()
  await consumer.close()

  const abortedTxn = await producer.beginTransaction()
  await abortedTxn.send({ messages: [{ topic: out, key: 'k0', value: 'aborted' }] })
  await abortedTxn.abort()
  await producer.close()

  const read = async (isolationLevel, want) => {
    const c = new Consumer({ ...clientOptions(a.broker, 'pk-reader'), groupId: `r${isolationLevel}-${a.topic}`, deserializers: stringDeserializers, isolationLevel })
    const values = (await readFor(await c.consume({ topics: [out], mode: 'earliest' }), want, 3000)).map(m => m.value)
    await c.close()
    return values.sort()
  }
  const committed = await committedSum(admin, group)
  await admin.close()
  print({
    readCommitted: await read(FetchIsolationLevels.READ_COMMITTED, 4),
    readUncommitted: await read(FetchIsolationLevels.READ_UNCOMMITTED, 5),
    committed
  })
})
