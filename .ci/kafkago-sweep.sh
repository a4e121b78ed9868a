#!/usr/bin/env bash
# Runs segmentio/kafka-go's own test suite (every package of the module the
# project requires, from the Go module cache) against one kaas broker, for
# the record in docs/compatibility.md. Not part of CI: its root package
# takes about four minutes, past CI's budget. Usage (root: it needs a
# network namespace, for the fixed ports the suite dials):
#   bash .ci/kafkago-sweep.sh [go test args, e.g. -run TestConn]
# The broker mimics the suite's Kafka 4.0 docker-compose: PLAINTEXT on 9092,
# SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) on 9093 with its
# users, the ACL authorizer with its super users, broker id 1. Three
# subtests of TestReaderConsumerGroup are skipped: their helper getOffsets
# calls a nil function and panics, whatever the broker, taking the package
# down. Prints the failed tests; the go test log stays in the work dir.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
self=$root/.ci/$(basename "$0")

if [ -z "${KAFKAGO_SWEEP_NETNS:-}" ]; then
	work=$(mktemp -d /tmp/kafkago-sweep.XXXXXX)
	echo "work dir: $work"
	version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/segmentio/kafka-go)
	(cd "$root" && go mod download github.com/segmentio/kafka-go)
	cp -r "$(go env GOMODCACHE)/github.com/segmentio/kafka-go@$version" "$work/kafka-go"
	chmod -R u+w "$work/kafka-go"
	(cd "$root" && go build -o "$work/kaas" ./cmd/kaas)
	(cd "$work/kafka-go" && GOFLAGS=-mod=mod go test -count=1 -run '^$' ./... >"$work/build.log" 2>&1)
	cred() { printf '%s' "$3" | "$work/kaas" scram-credential -mechanisms "$2" "$1"; }
	jq -s 'reduce .[] as $u ({}; . * $u)' \
		<(cred adminscram256 SCRAM-SHA-256 admin-secret-256) \
		<(cred adminscram512 SCRAM-SHA-512 admin-secret-512) \
		<(cred adminplain SCRAM-SHA-256 admin-secret) >"$work/users.json"
	KAFKAGO_SWEEP_NETNS=$work exec unshare -n bash "$self" "$@"
fi

# In the network namespace: start the broker, run the suite, stop it.
work=$KAFKAGO_SWEEP_NETNS
ip link set lo up
"$work/kaas" --data-dir "$work/data" --broker-id 1 \
	--listeners 'PLAIN://:9092,SASL://:9093' --advertised-listeners 'PLAIN://localhost:9092,SASL://localhost:9093' \
	--listener-security-protocol-map 'PLAIN:PLAINTEXT,SASL:SASL_PLAINTEXT' \
	--sasl-enabled-mechanisms PLAIN,SCRAM-SHA-256,SCRAM-SHA-512 --sasl-plain-without-tls \
	--sasl-credentials-file "$work/users.json" --sasl-max-failures 0 \
	--authorizer acl --allow-everyone-if-no-acl-found \
	--super-users 'User:adminscram256;User:adminscram512;User:adminplain' \
	--group-initial-rebalance-delay 0 --http-addr 127.0.0.1:18080 --log-level warn >"$work/kaas.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true' EXIT
for _ in $(seq 200); do curl -sf http://127.0.0.1:18080/readyz >/dev/null && break; sleep 0.5; done
cd "$work/kafka-go"
rc=0
KAFKA_VERSION=4.0.0 KAFKA_SKIP_NETTEST=1 GOFLAGS=-mod=mod go test -count=1 -timeout 20m -v \
	-skip 'TestReaderConsumerGroup/(verify_offset_committed|consumer_group_commits_on_close)' \
	"$@" ./... >"$work/test.log" 2>&1 || rc=$?
grep -E '^(ok|FAIL)\s' "$work/test.log" | grep -v '^ok' || true
grep -E -- '--- FAIL' "$work/test.log" || true
echo "passed: $(grep -c -- '--- PASS' "$work/test.log"), failed: $(grep -c -- '--- FAIL' "$work/test.log"), skipped: $(grep -c -- '--- SKIP' "$work/test.log") (tests and subtests)"
exit "$rc"
