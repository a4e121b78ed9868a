#!/usr/bin/env bash
# Runs sarama's own functional suite (its functional_*_test.go files, build tag
# `functional`) against kaas behind toxiproxy, as the suite expects: toxiproxy
# proxies kafka1..kafka5 on 127.0.0.1:29091-29095, and broker N advertises
# 127.0.0.1:2909N (the kafkaN proxy), so every client connection crosses the
# proxy.
# SARAMA_BROKERS=1 (default): one kaas broker in local-dev mode (broker id 1,
# in memory) behind all five proxies.
# SARAMA_BROKERS=3: three kaas brokers in cluster mode (kaas-1..kaas-3, broker
# ids 1-3, one data dir as the shared volume) against the test kube-apiserver
# (deploy/testenv/bin, go tool task testenv), behind kafka1..kafka3; kafka4 and
# kafka5 lead to brokers 1 and 2 (bootstrap only: no broker advertises them).
# A `docker` on PATH (.ci/sarama-docker.sh) stops, starts and prints the log
# of kafka-1..kafka-3 as the suite's `docker compose stop/start/logs` calls ask
# (SARAMA_STOP_SIGNAL=KILL: stop is a crash instead of Docker's SIGTERM).
# The sarama version is the one go.mod requires; its module (with its tests)
# comes from the module cache. toxiproxy is built from deploy/testenv/toxiproxy
# into deploy/testenv/bin/toxiproxy.
# With one broker, every test of the functional_*_test.go files runs by
# default except those docs/compatibility.md lists as excluded; with three,
# the tests that stop a broker or read its log (the ones excluded with one),
# and SARAMA_TESTS=all runs every test of the files but those excluded with
# three. SARAMA_TESTS and SARAMA_SKIP (go test -run and -skip regexps) choose
# others.
# A skipped test fails the run. SARAMA_LOG=FILE keeps the suite's log in FILE
# and the brokers' logs next to it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. .ci/lib.sh
brokers=${SARAMA_BROKERS:-1}
case $brokers in 1 | 3) ;; *)
	echo "sarama.sh: SARAMA_BROKERS must be 1 or 3" >&2
	exit 1
	;;
esac
work=$(mktemp -d)
pids=()
cleanup() {
	if [ "$brokers" = 3 ]; then
		for i in 1 2 3; do
			p=$(cat "$work/cluster/kafka-$i.pid" 2>/dev/null) && kill -KILL "$p" 2>/dev/null || true
		done
	fi
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

for b in toxiproxy $([ "$brokers" = 3 ] && echo testenv etcd kube-apiserver); do
	if [ ! -x "deploy/testenv/bin/$b" ]; then
		echo "sarama.sh: deploy/testenv/bin/$b is missing; go tool task toxiproxy / go tool task testenv build it" >&2
		exit 1
	fi
done
# The suite's proxies listen on fixed ports: another run of it on this
# machine holds them. The probe binds as toxiproxy does (SO_REUSEADDR, Go's
# default for listeners), so only a live listener counts as taken, not the
# TIME_WAIT connections the previous stage's proxies left on those ports.
for i in 1 2 3 4 5; do
	if ! python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(("127.0.0.1",int(sys.argv[1])))' $((29090 + i)) 2>/dev/null; then
		echo "sarama.sh: port $((29090 + i)) (proxy kafka$i) is taken: is another run of sarama's suite on this machine?" >&2
		exit 1
	fi
done
go mod download github.com/IBM/sarama
src=$(go list -m -f '{{.Dir}}' github.com/IBM/sarama)
cp -r "$src" "$work/sarama"
chmod -R u+w "$work/sarama"
go build -o "$work/kaas" ./cmd/kaas

api_port=$(free_port)
upstream=()
if [ "$brokers" = 1 ]; then
	port=$(free_port)
	"$work/kaas" --kafka-addr "127.0.0.1:$port" --advertised-addr 127.0.0.1:29091 --broker-id 1 \
		--http-addr "" --auto-create-topics=false \
		--group-initial-rebalance-delay 0 --log-level warn >"$work/kaas.log" 2>&1 &
	pids+=($!)
	wait_port "$port"
	upstream=("$port" "$port" "$port" "$port" "$port")
	logs=("$work/kaas.log")
else
	env=$work/apiserver
	cluster=$work/cluster
	mkdir -p "$cluster" "$work/data" "$work/bin"
	start_apiserver "$env" sarama
	# One launcher per docker-compose service; the docker shim runs it on
	# `docker compose start`. --drain-timeout stays under Docker's 10 s stop
	# grace, as deploy/ keeps it under the pod's termination grace.
	for i in 1 2 3; do
		port=$(free_port)
		http=127.0.0.1:$(free_port)
		hb=127.0.0.1:$(free_port)
		upstream+=("$port")
		echo "$http" >"$cluster/kafka-$i.http"
		cat >"$cluster/kafka-$i.run" <<-EOS
		export MY_POD_NAME=kaas-$i MY_POD_NAMESPACE=sarama MY_POD_UID=uid-kaas-$i-\$(date +%s%N) KUBECONFIG=$env/kubeconfig TZ=UTC
		exec "$work/kaas" --kafka-addr 127.0.0.1:$port --advertised-addr 127.0.0.1:$((29090 + i)) \\
			--http-addr $http --heartbeat-addr $hb --advertised-heartbeat-addr $hb \\
			--data-dir "$work/data" --auto-create-topics=false --group-initial-rebalance-delay 0 \\
			--drain-timeout 8s --log-format json --log-level info
		EOS
		logs+=("$cluster/kafka-$i.log")
	done
	upstream+=("${upstream[0]}" "${upstream[1]}")
	ln -s "$root/.ci/sarama-docker.sh" "$work/bin/docker"
	export SARAMA_CLUSTER_DIR=$cluster PATH=$work/bin:$PATH
	# The brokers are not children of this shell: the shim starts them.
	starts=()
	for i in 1 2 3; do
		docker compose start "kafka-$i" &
		starts+=($!)
	done
	for p in "${starts[@]}"; do wait "$p"; done
fi
{
	sep=""
	echo "["
	for i in 1 2 3 4 5; do
		echo "$sep{\"name\": \"kafka$i\", \"listen\": \"127.0.0.1:$((29090 + i))\", \"upstream\": \"127.0.0.1:${upstream[$((i - 1))]}\"}"
		sep=","
	done
	echo "]"
} >"$work/proxies.json"
"$root/deploy/testenv/bin/toxiproxy" -host 127.0.0.1 -port "$api_port" -config "$work/proxies.json" >"$work/toxiproxy.log" 2>&1 &
pids+=($!)
wait_port "$api_port"
for i in 1 2 3 4 5; do wait_port $((29090 + i)); done
# Listening ports alone could be another toxiproxy's: ask this one.
if [ "$(curl -sf "http://127.0.0.1:$api_port/proxies" | jq '[.[] | select(.enabled)] | length')" != 5 ]; then
	echo "sarama.sh: toxiproxy did not open its five proxies:" >&2
	tail -n 20 "$work/toxiproxy.log" >&2
	exit 1
fi

# Tests the suite holds that need what these kaas brokers are not
# (docs/compatibility.md, "sarama's functional suite", says why for each).
docker_tests='TestFuncAdminListConsumerGroupOffsets|TestFuncTxnProduceWithBrokerFailure|TestFuncIdempotentBufferedSequence'
excluded='TestFuncAdminAlterPartitionReassignments|TestFuncAdminDescribeLogDirs|TestConsumerFetchFollowerFailover'
if [ "$brokers" = 1 ]; then
	excluded+="|$docker_tests"
else
	excluded+='|TestFuncAdminListOffsets|TestFuncAdminDeleteRecords'
fi
excluded+='|TestJavaProducerCompressionRoundTrip|TestJavaConsumerCompressionRoundTrip|TestJavaMurmur2PartitionerInterop'
excluded+='|TestFuncJavaInteropCooperativeRebalance|TestReadOnlyAndAllCommittedMessages'
cd "$work/sarama"
functional=$(grep -ho '^func Test[A-Za-z0-9_]*' functional_*_test.go | sed 's/^func //' | paste -sd '|' -)
tests=${SARAMA_TESTS:-}
if [ -z "$tests" ] && [ "$brokers" = 3 ]; then tests="^($docker_tests)\$"; fi
if [ -z "$tests" ] || [ "$tests" = all ]; then tests="^($functional)\$"; fi
skip=${SARAMA_SKIP-"^($excluded)\$"}
rc=0
TOXIPROXY_ADDR="http://127.0.0.1:$api_port" KAFKA_VERSION=4.0.0 \
	go test -tags functional . -run "$tests" -skip "$skip" -count=1 -timeout 30m -v >"$work/sarama.log" 2>&1 || rc=$?
grep -E '^--- |^    --- |^(ok|FAIL|panic)|Error( Trace)?:|Messages:' "$work/sarama.log" || true
if grep -q -- '--- SKIP' "$work/sarama.log"; then
	echo "sarama.sh: a test was skipped" >&2
	rc=1
fi
if [ -n "${SARAMA_LOG:-}" ]; then
	cp "$work/sarama.log" "$SARAMA_LOG"
	for l in "${logs[@]}"; do cp "$l" "$SARAMA_LOG.$(basename "$l")"; done
fi
if [ "$rc" != 0 ]; then
	# A failed test's own lines (t.Errorf, t.Logf: "file_test.go:N: ..."),
	# which the summary above leaves out.
	for name in $(grep -oE -- '--- FAIL: [^ ]+' "$work/sarama.log" | awk '{print $3}' | sort -u); do
		echo "--- $name: its test lines (last 40) ---" >&2
		awk -v n="$name" '/^=== (RUN|CONT|NAME|PAUSE) / { on = ($3 == n) } on && /_test\.go:[0-9]+:/' "$work/sarama.log" | tail -n 40 >&2
	done
	for l in "${logs[@]}"; do
		echo "--- $(basename "$l") (tail) ---" >&2
		tail -n 40 "$l" >&2 || true
	done
fi
exit "$rc"
