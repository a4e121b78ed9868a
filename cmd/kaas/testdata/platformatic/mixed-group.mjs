// Joins the consumer group `kaas-mixed-<topic>`, which a franz-go KIP-848
// consumer already runs, with the group protocol <protocol> (consumer:
// KIP-848; classic: JoinGroup and SyncGroup), reads until it has at least
// <n> records, committing each before the next, then leaves. Prints
// everything it read: {"consumed":[{partition, offset, key, value}...]}.
import { Consumer, stringDeserializers } from '@platformatic/kafka'
import { args, clientOptions, main, print } from './common.mjs'

main(async () => {
  const a = args('mixed-group.mjs <broker> <topic> <n> <protocol>')
  const n = parseInt(a.n, 10)
  const consumer = new Consumer({
    ...clientOptions(a.broker, 'pk-mixed'),
    groupId: `kaas-mixed-${a.topic}`,
    groupProtocol: a.protocol,
    deserializers: stringDeserializers,
    autocommit: false,
    maxWaitTime: 100
  })
  const stream = await consumer.consume({ topics: [a.topic], mode: 'committed', fallbackMode: 'earliest' })
  const consumed = []
  for await (const m of stream) {
    consumed.push({ partition: m.partition, offset: Number(m.offset), key: m.key, value: m.value })
    await m.commit()
    if (consumed.length >= n) break
  }
  await stream.close()
  await consumer.close()
  print({ consumed })
})
