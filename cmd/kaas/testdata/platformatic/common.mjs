// Shared setup for the @platformatic/kafka scripts run by
// cmd/kaas/platformatic_test.go. Each script prints one JSON line of results
// to stdout; errors go to stderr with the broker's error codes.

// args reads the positional arguments named in usage, or exits with it.
export function args (usage) {
  const names = usage.split(' ').slice(1).map(s => s.replace(/[<>]/g, ''))
  const pos = process.argv.slice(2)
  if (pos.length !== names.length) {
    process.stderr.write(`usage: ${usage}\n`)
    process.exit(2)
  }
  return Object.fromEntries(names.map((n, i) => [n, pos[i]]))
}

// clientOptions are every client's settings: one broker, fast retries.
export function clientOptions (broker, clientId) {
  return { clientId, bootstrapBrokers: [broker], retries: 10, retryDelay: 200, timeout: 10000 }
}

// print writes the result line: bigints as strings, maps as objects.
export function print (result) {
  process.stdout.write(JSON.stringify(result, (_, v) => {
    if (typeof v === 'bigint') return v.toString()
    if (v instanceof Map) return Object.fromEntries(v)
    if (v instanceof Set) return [...v]
    return v
  }) + '\n')
}

// errorCodes are the broker's error names (apiId) in e and its causes.
export function errorCodes (e) {
  const codes = []
  const walk = (x) => {
    if (!x || typeof x !== 'object') return
    if (x.apiId) codes.push(x.apiId)
    for (const c of x.errors ?? []) walk(c)
    if (x.cause) walk(x.cause)
  }
  walk(e)
  return codes
}

// describeError is e's message and those of its first causes, with the
// broker's error names.
export function describeError (e) {
  const codes = errorCodes(e)
  const messages = []
  for (let x = e; x && typeof x === 'object' && messages.length < 6; x = x.errors?.[0] ?? x.cause) messages.push(x.message)
  return `${messages.join(' <- ')}${codes.length ? ' [' + codes.join(', ') + ']' : ''}`
}

// main runs f and exits non-zero with the error described on stderr.
export function main (f) {
  f().then(() => process.exit(0), (e) => {
    process.stderr.write(`${describeError(e)}\n${e.stack}\n`)
    process.exit(1)
  })
}

// committedSum is the sum of group's committed offsets (each partition's
// next offset to read: the records the group has processed).
export async function committedSum (admin, group) {
  const offsets = await admin.listConsumerGroupOffsets({ groups: [group] })
  let sum = 0n
  for (const t of offsets[0].topics) for (const p of t.partitions) sum += p.committedOffset
  return sum
}

// readFor consumes stream until want messages arrived or ms passed with
// none; it closes the stream and returns the messages.
export async function readFor (stream, want, ms) {
  const got = []
  let timer
  const idle = () => { clearTimeout(timer); timer = setTimeout(() => stream.close(), ms) }
  idle()
  for await (const m of stream) {
    got.push(m)
    if (got.length >= want) break
    idle()
  }
  clearTimeout(timer)
  await stream.close()
  return got
}
