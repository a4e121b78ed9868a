#!/usr/bin/env bash
# Runs librdkafka's own integration suite (tests/test-runner of a librdkafka
# checkout, its numbered tests) against a local-dev kaas broker, for the
# record in docs/compatibility.md. Not part of CI: the suite comes from
# GitHub, which CI cannot reach. Usage:
#   git clone --depth 1 https://github.com/confluentinc/librdkafka /tmp/librdkafka
#   bash .ci/librdkafka-sweep.sh /tmp/librdkafka [test numbers, e.g. 0011 0081]
# Needs Debian's build-essential libssl-dev libsasl2-dev zlib1g-dev
# libzstd-dev liblz4-dev rapidjson-dev (the stats tests). librdkafka is
# configured with --no-download (nothing is fetched, no --install-deps) and
# built in the checkout unless tests/test-runner is there already.
# Each test runs alone (test-runner -p1) in quick mode (-Q: only the
# sub-tests the suite marks quick run, the others count as passed unrun;
# RDK_QUICK=0 runs every sub-test) under a timeout
# (RDK_TIMEOUT, default 300 s), its topics named at random, against a broker
# as the suite's scenarios describe it (tests/scenarios: 4 partitions per
# auto-created topic; auto-creation off for the noautocreate tests, which
# get a second broker), with an ACL authorizer that allows what no ACL
# names, and a SASL_PLAINTEXT listener (the next port) with an empty SCRAM
# credentials file: 0081 creates and deletes ACLs and SCRAM credentials,
# which kaas keeps in that file and serves only with a SASL listener. The
# suite is told the broker is Kafka 4.2.0 (TEST_KAFKA_VERSION; test-runner's
# -V frees its argv at exit), so the KIP-932 share consumer tests run too.
# Not run: tests that need no broker (test-runner -L skips the TEST_F_LOCAL
# and mock-cluster ones) and those that need what one plaintext broker is
# not: SSL (0097), SASL/OIDC (0126 0135 0142), rack-aware replicas on
# several brokers (0101), Kafka's shell tools or Java client under
# KAFKA_PATH, or a trivup cluster (0052 0077 0098 0109 0115 0119 0128), a
# plugin library (0066), fork(2) in the runner (0079), the benchmark (0038),
# known issues and manual ones (0047 8000 8001).
# Prints each test's outcome and the failed tests; logs stay in the work dir.
set -euo pipefail
src=${1:?usage: librdkafka-sweep.sh LIBRDKAFKA_CHECKOUT [test numbers]}
shift
src=$(cd "$src" && pwd)
root=${KAAS_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
port=${RDK_PORT:-19092}
timeout_s=${RDK_TIMEOUT:-300}
quick=(-Q)
[ "${RDK_QUICK:-1}" = 0 ] && quick=()
skip=" 0038 0047 0052 0066 0077 0079 0097 0098 0101 0109 0115 0119 0126 0128 0135 0142 8000 8001 "

work=$(mktemp -d /tmp/librdkafka-sweep.XXXXXX)
echo "work dir: $work"
cd "$src"
if [ ! -x tests/test-runner ]; then
	./configure --no-download --disable-curl >"$work/configure.log" 2>&1
	make -j2 libs >"$work/make.log" 2>&1
	make -j2 -C tests build >"$work/make-tests.log" 2>&1
fi
(cd "$root" && go build -o "$work/kaas" ./cmd/kaas)
echo "librdkafka $(git -C "$src" describe --tags 2>/dev/null || echo "$(grep -o 'RD_KAFKA_VERSION *0x[0-9a-f]*' src/rdkafka.h)"), kaas $(git -C "$root" rev-parse --short HEAD)"

echo '{}' >"$work/users.json"
cat >"$work/test.conf" <<EOF
metadata.broker.list=127.0.0.1:$port
test.timeout.multiplier=2
test.topic.random=true
EOF

# start_kaas SCENARIO: a fresh broker as the suite's scenario describes,
# its share-record lock bound lowered as librdkafka's CI starts Kafka
# (group.share.min.record.lock.duration.ms=1000: 0173 sets a 3 s lock).
kaas_pid=
stop_kaas() {
	[ -n "$kaas_pid" ] || return 0
	kill "$kaas_pid" 2>/dev/null || true
	wait "$kaas_pid" 2>/dev/null || true
	kaas_pid=
}
trap stop_kaas EXIT
start_kaas() {
	local auto=true
	[ "$1" = noautocreate ] && auto=false
	"$work/kaas" --listeners "PLAINTEXT://127.0.0.1:$port,SASL_PLAINTEXT://127.0.0.1:$((port + 1))" --http-addr "" --data-dir "$work/data-$1" \
		--default-partitions 4 --auto-create-topics="$auto" --group-share-min-record-lock-duration 1s \
		--authorizer acl --allow-everyone-if-no-acl-found --sasl-credentials-file "$work/users.json" \
		--sasl-enabled-mechanisms SCRAM-SHA-256,SCRAM-SHA-512 --log-level warn >"$work/kaas-$1.log" 2>&1 &
	kaas_pid=$!
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
		sleep 0.2
	done
	echo "kaas did not start, see $work/kaas-$1.log" >&2
	return 1
}

all=$(grep -oE '_TEST\([0-9]{4}_' tests/test.c | grep -oE '[0-9]{4}' | sort -u)
# The noautocreate scenario's tests (their number's other tests run in
# the default scenario).
noauto=$(echo $(awk '/_TEST\([0-9][0-9][0-9][0-9]_/ { match($0, /[0-9][0-9][0-9][0-9]/); n = substr($0, RSTART, 4) }
	/\.scenario = "noautocreate"/ { print n }' tests/test.c | sort -u))
if [ $# -gt 0 ]; then
	all=$*
fi
mkdir -p "$work/logs"
passed=() failed=() skipped=()
cd tests
# run SCENARIO TEST...: each test alone against a fresh broker of the scenario.
run() {
	local scenario=$1 t log rc outcome
	shift
	start_kaas "$scenario"
	for t in "$@"; do
		if [[ $skip == *" $t "* ]]; then
			skipped+=("$t(list)")
			continue
		fi
		log=$work/logs/$t-$scenario.log
		rc=0
		LD_LIBRARY_PATH=$src/src:$src/src-cpp RDKAFKA_TEST_CONF=$work/test.conf TEST_KAFKA_VERSION=4.2.0 TESTS=$t \
			timeout "$timeout_s" ./test-runner -p1 -L "${quick[@]}" -s "$scenario" >"$log" 2>&1 || rc=$?
		if [ $rc -eq 0 ] && ! grep -qE 'Test [0-9]{4}_[A-Za-z0-9_]+ PASSED' "$log"; then
			# A number whose tests all belong to the other scenario counts there.
			[[ $scenario == noautocreate || " $noauto " != *" $t "* ]] && skipped+=("$t")
			outcome=skipped
		elif [ $rc -eq 0 ]; then
			passed+=("$t/$scenario")
			outcome=passed
		else
			failed+=("$t/$scenario")
			outcome="FAILED (exit $rc)"
			[ $rc -eq 124 ] && outcome="FAILED (timeout ${timeout_s}s)"
		fi
		echo "$t $scenario $outcome"
	done
	stop_kaas
}
# shellcheck disable=SC2086 # word lists
run default $all
# shellcheck disable=SC2086
run noautocreate $(comm -12 <(tr ' ' '\n' <<<"$all" | sort -u) <(tr ' ' '\n' <<<"$noauto"))
# Counts are of test-runner runs (number/scenario); 0045 runs in both.
echo "passed ${#passed[@]}, failed ${#failed[@]}, skipped ${#skipped[@]}"
echo "failed: ${failed[*]:-none}"
echo "skipped: ${skipped[*]:-none}"
