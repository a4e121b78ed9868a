#!/usr/bin/env bash
# Runs sarama's own functional suite (its functional_*_test.go files, build tag
# `functional`) against one kaas broker behind toxiproxy, as the suite expects:
# toxiproxy proxies kafka1..kafka5 on 127.0.0.1:29091-29095, here every one of
# them in front of the same kaas listener, and kaas advertises 127.0.0.1:29091
# (kafka1, its broker id 1), so every client connection crosses the proxy.
# The sarama version is the one go.mod requires; its module (with its tests)
# comes from the module cache. toxiproxy is built from deploy/testenv/toxiproxy
# into deploy/testenv/bin/toxiproxy.
# By default every test of the functional_*_test.go files runs except those
# docs/compatibility.md lists as excluded; SARAMA_TESTS and SARAMA_SKIP (go test
# -run and -skip regexps) choose others. A skipped test fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
kaas_pid=""
proxy_pid=""
cleanup() {
	for p in $kaas_pid $proxy_pid; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

if [ ! -x deploy/testenv/bin/toxiproxy ]; then
	echo "sarama.sh: deploy/testenv/bin/toxiproxy is missing; go tool task sarama builds it (go tool task toxiproxy)" >&2
	exit 1
fi
go mod download github.com/IBM/sarama
src=$(go list -m -f '{{.Dir}}' github.com/IBM/sarama)
cp -r "$src" "$work/sarama"
chmod -R u+w "$work/sarama"
go build -o "$work/kaas" ./cmd/kaas

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
	for _ in $(seq 100); do
		if (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.2
	done
	echo "sarama.sh: nothing listens on port $1" >&2
	return 1
}
port=$(free_port)
api_port=$(free_port)
"$work/kaas" --kafka-addr "127.0.0.1:$port" --advertised-addr 127.0.0.1:29091 --broker-id 1 \
	--http-addr "" --auto-create-topics=false \
	--group-initial-rebalance-delay 0 --log-level warn >"$work/kaas.log" 2>&1 &
kaas_pid=$!
{
	sep=""
	echo "["
	for i in 1 2 3 4 5; do
		echo "$sep{\"name\": \"kafka$i\", \"listen\": \"127.0.0.1:$((29090 + i))\", \"upstream\": \"127.0.0.1:$port\"}"
		sep=","
	done
	echo "]"
} >"$work/proxies.json"
"$root/deploy/testenv/bin/toxiproxy" -host 127.0.0.1 -port "$api_port" -config "$work/proxies.json" >"$work/toxiproxy.log" 2>&1 &
proxy_pid=$!
wait_port "$port"
wait_port "$api_port"
for i in 1 2 3 4 5; do wait_port $((29090 + i)); done

# Tests the suite holds that need what one kaas broker is not (docs/compatibility.md,
# "sarama's functional suite", says why for each).
excluded='TestFuncAdminAlterPartitionReassignments|TestFuncAdminDescribeLogDirs|TestConsumerFetchFollowerFailover'
excluded+='|TestFuncAdminListConsumerGroupOffsets|TestFuncTxnProduceWithBrokerFailure|TestFuncIdempotentBufferedSequence'
excluded+='|TestJavaProducerCompressionRoundTrip|TestJavaConsumerCompressionRoundTrip|TestJavaMurmur2PartitionerInterop'
excluded+='|TestFuncJavaInteropCooperativeRebalance|TestReadOnlyAndAllCommittedMessages'
cd "$work/sarama"
functional=$(grep -ho '^func Test[A-Za-z0-9_]*' functional_*_test.go | sed 's/^func //' | paste -sd '|' -)
tests=${SARAMA_TESTS:-"^($functional)\$"}
skip=${SARAMA_SKIP-"^($excluded)\$"}
rc=0
TOXIPROXY_ADDR="http://127.0.0.1:$api_port" KAFKA_VERSION=4.0.0 \
	go test -tags functional . -run "$tests" -skip "$skip" -count=1 -timeout 30m -v >"$work/sarama.log" 2>&1 || rc=$?
grep -E '^--- |^    --- |^(ok|FAIL|panic)|Error( Trace)?:|Messages:' "$work/sarama.log" || true
if grep -q -- '--- SKIP' "$work/sarama.log"; then
	echo "sarama.sh: a test was skipped" >&2
	rc=1
fi
if [ -n "${SARAMA_LOG:-}" ]; then cp "$work/sarama.log" "$SARAMA_LOG"; cp "$work/kaas.log" "$SARAMA_LOG.kaas"; fi
if [ "$rc" != 0 ]; then
	echo "--- kaas log (tail) ---" >&2
	tail -n 40 "$work/kaas.log" >&2 || true
fi
exit "$rc"
