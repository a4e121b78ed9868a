'use strict'
// Shared setup for the kafkajs scripts run by cmd/kaas/external_test.go.
// Results go to stdout as one JSON line; kafkajs logs go to stderr.
const { Kafka, logLevel } = require('kafkajs')

function stderrLogCreator () {
  return ({ namespace, label, log }) => {
    const { message, timestamp, logger, ...rest } = log
    process.stderr.write(`kafkajs ${label} [${namespace}] ${message} ${JSON.stringify(rest)}\n`)
  }
}

// newKafka is a client of broker; opts override the settings below.
function newKafka (broker, opts = {}) {
  return new Kafka({
    clientId: 'kaas-kafkajs-test',
    brokers: [broker],
    logLevel: process.env.KAFKAJS_LOG_LEVEL === 'debug' ? logLevel.DEBUG : logLevel.WARN,
    logCreator: stderrLogCreator,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
    ...opts
  })
}

// parseArgs reads `<broker> <topic> <n> [--flag ...]`.
function parseArgs (usage) {
  const args = process.argv.slice(2)
  const pos = args.filter(a => !a.startsWith('--'))
  const flags = new Set(args.filter(a => a.startsWith('--')))
  const n = parseInt(pos[2], 10)
  if (pos.length !== 3 || !(n > 0)) {
    process.stderr.write(`usage: ${usage}\n`)
    process.exit(2)
  }
  return { broker: pos[0], topic: pos[1], n, flags }
}

// messagesFor is what every script produces: n messages over 10 keys.
function messagesFor (n) {
  const messages = []
  for (let i = 0; i < n; i++) {
    messages.push({ key: `key-${i % 10}`, value: `value-${i}` })
  }
  return messages
}

// run runs main with a hard deadline; any failure exits 1 with a reason.
function run (main, deadlineMs) {
  const timer = setTimeout(() => {
    process.stderr.write(`FAIL: timed out after ${deadlineMs} ms\n`)
    process.exit(1)
  }, deadlineMs)
  main().then(() => {
    clearTimeout(timer)
    process.exit(0)
  }, err => {
    process.stderr.write(`FAIL: ${err && err.stack ? err.stack : err}\n`)
    if (err && err.originalError) process.stderr.write(`caused by: ${err.originalError.stack || err.originalError}\n`)
    process.exit(1)
  })
}

module.exports = { newKafka, parseArgs, messagesFor, run }
