// Connects over TLS (trusting <ca>) with SASL <mechanism> (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512, or OAUTHBEARER with <password> as the
// token), produces <n> records with acks=-1 to
// <topic> and reads them back; prints the values read. A failed
// authentication exits 1 with the error. OAUTHBEARER reads the broker's
// answer with the client's validator, which fails on the RFC 7628 error
// challenge Kafka answers a refused token with.
import { readFileSync } from 'node:fs'
import { Consumer, Producer, saslOAuthBearer, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import { args, clientOptions, main, print, readFor } from './common.mjs'

main(async () => {
  const a = args('sasl-produce.mjs <broker> <topic> <n> <ca> <mechanism> <user> <password>')
  const n = parseInt(a.n, 10)
  const secure = {
    ...clientOptions(a.broker, 'pk-sasl'),
    retries: 1,
    tls: { ca: readFileSync(a.ca, 'utf8'), servername: 'localhost' },
    sasl: a.mechanism === 'OAUTHBEARER'
      ? { mechanism: a.mechanism, token: a.password, authBytesValidator: saslOAuthBearer.jwtValidateAuthenticationBytes }
      : { mechanism: a.mechanism, username: a.user, password: a.password }
  }
  const producer = new Producer({ ...secure, serializers: stringSerializers, acks: -1, autocreateTopics: true })
  const messages = []
  for (let i = 0; i < n; i++) messages.push({ topic: a.topic, key: `k-${i}`, value: `v-${i}` })
  await producer.send({ messages })
  await producer.close()
  const consumer = new Consumer({ ...secure, groupId: `g-${a.topic}`, deserializers: stringDeserializers })
  const read = await readFor(await consumer.consume({ topics: [a.topic], mode: 'earliest' }), n, 5000)
  await consumer.close()
  print({ read: read.map(m => m.value) })
})
