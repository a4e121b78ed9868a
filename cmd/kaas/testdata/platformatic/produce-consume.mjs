// Creates <topic> with 3 partitions, produces <n> keyed records with a
// header through an idempotent producer using <compression>, reads them back
// in a consumer group that commits each one, and lists the group's offsets.
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import { args, clientOptions, committedSum, main, print, readFor } from './common.mjs'

main(async () => {
  const a = args('produce-consume.mjs <broker> <topic> <n> <compression>')
  const n = parseInt(a.n, 10)
  const admin = new Admin(clientOptions(a.broker, 'pk-admin'))
  const created = await admin.createTopics({ topics: [a.topic], partitions: 3, replicas: 1 })

  const producer = new Producer({ ...clientOptions(a.broker, 'pk-producer'), serializers: stringSerializers, idempotent: true, acks: -1, compression: a.compression })
  const messages = []
  for (let i = 0; i < n; i++) {
    messages.push({ topic: a.topic, key: `key-${i % 10}`, value: `value-${String(i).padStart(5, '0')}`, headers: new Map([['seq', String(i)]]) })
  }
  const sent = await producer.send({ messages })
  await producer.close()

  const group = `g-${a.topic}`
  const consumer = new Consumer({ ...clientOptions(a.broker, 'pk-consumer'), groupId: group, deserializers: stringDeserializers, autocommit: false })
  const stream = await consumer.consume({ topics: [a.topic], mode: 'earliest' })
  const got = []
  for (const m of await readFor(stream, n, 5000)) {
    got.push({ key: m.key, value: m.value, seq: m.headers.get('seq'), partition: m.partition, offset: Number(m.offset) })
    await m.commit()
  }
  await consumer.close()
  const committed = await committedSum(admin, group)
  await admin.close()
  print({ created: created.map(t => ({ name: t.name, partitions: t.partitions })), sent: sent.offsets.length, consumed: got, committed })
})
