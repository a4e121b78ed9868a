#!/usr/bin/env bash
# Runs kafkajs's own jest suite (every src/**/*.spec.js of a kafkajs checkout)
# against kaas, for the record in docs/compatibility.md. Not part of CI: the
# npm package has no tests, so the suite comes from GitHub, which CI cannot
# reach. Usage (root: it needs a network namespace, for the fixed ports the
# suite dials):
#   git clone --depth 1 --branch v2.2.4 https://github.com/tulios/kafkajs /tmp/kafkajs
#   bash .ci/kafkajs-sweep.sh /tmp/kafkajs [jest args, e.g. src/admin]
# KAFKAJS_BROKERS=3 (default): three brokers in cluster mode against the test
# kube-apiserver (deploy/testenv/bin, go tool task testenv), each with the
# PLAINTEXT/SSL/SASL_SSL ports of one of the suite's docker-compose brokers
# (9092-9094, 9095-9097, 9098-9100). KAFKAJS_BROKERS=1: one local-dev broker
# with all nine ports; KAFKAJS_MEMORY=1 then keeps it in memory.
# The suite's docker-only pieces are replaced: certificates are made here,
# the SASL users of its JAAS file (test, bob, alice; testscram with its two
# SCRAM passwords) go to a credentials file, and scripts/addPartitions.sh
# (docker exec kafka-topics) becomes a kafkajs createPartitions call.
# Prints the failed tests; the jest log and JSON result stay in the work dir.
set -euo pipefail
src=${1:?usage: kafkajs-sweep.sh KAFKAJS_CHECKOUT [jest args]}
shift
src=$(cd "$src" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
self=$root/.ci/$(basename "$0")
. "$root/.ci/lib.sh"
brokers=${KAFKAJS_BROKERS:-3}

if [ -z "${KAFKAJS_SWEEP_NETNS:-}" ]; then
	work=$(mktemp -d /tmp/kafkajs-sweep.XXXXXX)
	echo "work dir: $work"
	cp -r "$src" "$work/kafkajs"
	cd "$work/kafkajs"
	npm install --no-audit --no-fund --ignore-scripts --no-save jest@^25.1.0 jest-circus@^25.1.0 \
		jest-extended@^0.11.2 jest-junit@^10.0.0 execa@^2.0.3 glob@^7.1.4 ip@^1.1.5 \
		jsonwebtoken@^9.0.0 mockdate@^2.0.5 semver@^6.2.0 uuid@^3.3.2 >"$work/npm.log" 2>&1
	cat >scripts/addPartitions.sh <<-'EOS'
	#!/bin/bash -e
	node -e "
	const { Kafka } = require('./index')
	const admin = new Kafka({ brokers: ['localhost:9092'], logLevel: 0 }).admin()
	admin.connect()
	  .then(() => admin.createPartitions({ topicPartitions: [{ topic: process.env.TOPIC, count: Number(process.env.PARTITIONS) }] }))
	  .then(() => admin.disconnect())
	  .catch(e => { console.error(e); process.exit(1) })
	"
	EOS
	(cd "$root" && go build -o "$work/kaas" ./cmd/kaas)
	tls=$work/tls
	mkdir -p "$tls"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.crt" -days 7 -subj /CN=kafkajs-sweep-ca 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -keyout "$tls/tls.key" -out "$tls/tls.csr" -subj /CN=localhost 2>/dev/null
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$tls/ext"
	openssl x509 -req -in "$tls/tls.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
		-out "$tls/tls.crt" -days 7 -extfile "$tls/ext" 2>/dev/null
	cred() { printf '%s' "$3" | "$work/kaas" scram-credential -mechanisms "$2" "$1"; }
	jq -s 'reduce .[] as $u ({}; . * $u)' \
		<(cred test SCRAM-SHA-256,SCRAM-SHA-512 testtest) \
		<(cred bob SCRAM-SHA-256,SCRAM-SHA-512 bobbob) \
		<(cred alice SCRAM-SHA-256,SCRAM-SHA-512 alicealice) \
		<(cred testscram SCRAM-SHA-256 'testtestscram=256') \
		<(cred testscram SCRAM-SHA-512 'testtestscram=512') >"$work/users.json"
	KAFKAJS_SWEEP_NETNS=$work exec unshare -n bash "$self" "$src" "$@"
fi

# In the network namespace: start the brokers, run jest, stop the brokers.
work=$KAFKAJS_SWEEP_NETNS
ip link set lo up
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
common=(--tls-dir "$work/tls" --sasl-enabled-mechanisms PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
	--sasl-credentials-file "$work/users.json" --sasl-max-failures 0
	--authorizer acl --allow-everyone-if-no-acl-found
	--default-partitions 2 --group-initial-rebalance-delay 0 --log-level warn)
if [ "$brokers" = 1 ]; then
	data=(--data-dir "$work/data")
	[ -n "${KAFKAJS_MEMORY:-}" ] && data=()
	"$work/kaas" --listeners "PLAINTEXT://:9092,P2://:9095,P3://:9098,SSL://:9093,S2://:9096,S3://:9099,SASL_SSL://:9094,SS2://:9097,SS3://:9100" \
		--listener-security-protocol-map "P2:PLAINTEXT,P3:PLAINTEXT,S2:SSL,S3:SSL,SS2:SASL_SSL,SS3:SASL_SSL" \
		--http-addr 127.0.0.1:18080 "${data[@]}" "${common[@]}" >"$work/kaas-0.log" 2>&1 &
	pids+=($!)
else
	env=$work/apiserver
	start_apiserver "$env" kafkajs
	for i in 0 1 2; do
		p=$((9092 + 3 * i))
		MY_POD_NAME=kaas-$i MY_POD_NAMESPACE=kafkajs MY_POD_UID=uid-kaas-$i KUBECONFIG=$env/kubeconfig \
			"$work/kaas" --listeners "PLAINTEXT://:$p,SSL://:$((p + 1)),SASL_SSL://:$((p + 2))" \
			--advertised-listeners "PLAINTEXT://localhost:$p,SSL://localhost:$((p + 1)),SASL_SSL://localhost:$((p + 2))" \
			--heartbeat-addr 127.0.0.1:$((19090 + i)) --advertised-heartbeat-addr 127.0.0.1:$((19090 + i)) \
			--http-addr 127.0.0.1:$((18080 + i)) --data-dir "$work/data" "${common[@]}" >"$work/kaas-$i.log" 2>&1 &
		pids+=($!)
	done
fi
for i in $(seq 0 $((brokers - 1))); do
	for _ in $(seq 200); do curl -sf "http://127.0.0.1:$((18080 + i))/readyz" >/dev/null && break; sleep 0.5; done
done
cd "$work/kafkajs"
rc=0
KAFKA_VERSION=2.4 NODE_ENV=test node_modules/.bin/jest --ci --forceExit --no-watchman --maxWorkers=3 \
	--json --outputFile="$work/result.json" "$@" >"$work/jest.log" 2>&1 || rc=$?
grep -E '^Tests:' "$work/jest.log" || true
jq -r '.testResults[] | . as $f | .assertionResults[] | select(.status=="failed") | ($f.name | sub(".*/kafkajs/"; "")) + " :: " + .fullName' \
	"$work/result.json" || true
exit "$rc"
