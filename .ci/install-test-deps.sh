#!/usr/bin/env bash
# Installs the external Kafka clients the integration tests drive:
# kcat (librdkafka) from Debian and kafkajs from npm. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
if ! command -v kcat >/dev/null; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kcat >/dev/null
fi
if [ -f cmd/kaas/testdata/kafkajs/package.json ] && [ ! -d cmd/kaas/testdata/kafkajs/node_modules/kafkajs ]; then
  (cd cmd/kaas/testdata/kafkajs && npm ci --no-audit --no-fund --silent)
fi
