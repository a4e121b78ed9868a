#!/usr/bin/env bash
# Runs @confluentinc/kafka-javascript's own integration suite (the jest
# specs of test/promisified, optionally the mocha specs of e2e) against kaas,
# for the record in docs/compatibility.md. Not part of CI: the npm package
# has no tests, so the suite comes from GitHub, which CI cannot reach.
# Usage (root: it needs network namespaces, for the fixed ports the suite
# dials):
#   git clone --recurse-submodules https://github.com/confluentinc/confluent-kafka-javascript /tmp/cjs
#   (install and build it from source as its CI does, CKJS_LINKING=dynamic)
#   bash .ci/confluent-js-sweep.sh /tmp/cjs [jest args, e.g. test/promisified/admin]
# The checkout must hold its built addon (build/Release/*.node): this script
# builds only kaas. Its package-lock.json names a private registry for a few
# packages, which npm reaches at registry.npmjs.org once the URLs say so.
# The suite runs once per group protocol, as its CI does (CJS_PROTOCOLS,
# default "classic consumer"; TEST_CONSUMER_GROUP_PROTOCOL for the suite),
# each against a fresh local-dev broker on localhost:9092 in its own network
# namespace, set up as that CI job's broker:
# - classic: test/docker/docker-compose.yml (cp-kafka 7.9.2 defaults: one
#   partition per auto-created topic);
# - consumer: test/docker/kraft/server.properties (4 partitions, rack
#   RACK1, KIP-848 session timeout 10 s over a 6 s minimum).
# Both have auto-creation, a SASL_PLAINTEXT listener on 9093 with PLAIN and
# the users of kafka_jaas.conf (admin/admin, a super user; testuser/testpass),
# and the ACL authorizer allowing what no ACL names. CJS_PARALLEL=1 runs the
# protocols at once; CJS_E2E=1 also runs the e2e mocha specs in the classic
# pass (mocha's default bdd interface: the checkout's `make e2e` passes
# --ui exports, which cannot load them). jest runs with --forceExit: the suite leaves clients' handles open
# and jest would otherwise wait on them after the last test. Prints one line per test (status, file, name), the failures with
# their first error line and the counts; result.json, jest.log and the
# broker's log stay in WORK/PROTOCOL.
set -euo pipefail
src=${1:?usage: confluent-js-sweep.sh CHECKOUT [jest args]}
shift
src=$(cd "$src" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
self=$root/.ci/$(basename "$0")

if [ -z "${CJS_SWEEP_NETNS:-}" ]; then
	if ! ls "$src"/build/Release/*.node >/dev/null 2>&1; then
		echo "${0##*/}: $src has no built addon (build/Release/*.node): build it from source first" >&2
		exit 1
	fi
	work=$(mktemp -d /tmp/confluent-js-sweep.XXXXXX)
	echo "work dir: $work"
	(cd "$root" && go build -o "$work/kaas" ./cmd/kaas)
	# PLAIN checks the SCRAM credential of kafka_jaas.conf's users.
	cred() { printf '%s' "$2" | "$work/kaas" scram-credential -mechanisms SCRAM-SHA-256 "$1"; }
	jq -s 'reduce .[] as $u ({}; . * $u)' <(cred admin admin) <(cred testuser testpass) >"$work/users.json"
	rc=0 runs=()
	for p in ${CJS_PROTOCOLS:-classic consumer}; do
		mkdir -p "$work/$p"
		if [ -n "${CJS_PARALLEL:-}" ]; then
			CJS_SWEEP_NETNS=$work CJS_PROTOCOL=$p unshare -n bash "$self" "$src" "$@" >"$work/$p/out.txt" 2>&1 &
			runs+=("$p:$!")
		else
			echo "== $p"
			CJS_SWEEP_NETNS=$work CJS_PROTOCOL=$p unshare -n bash "$self" "$src" "$@" || rc=1
		fi
	done
	for r in "${runs[@]}"; do
		wait "${r#*:}" || rc=1
		echo "== ${r%%:*}"
		cat "$work/${r%%:*}/out.txt"
	done
	exit "$rc"
fi

# In a network namespace: start the broker, run the suite, stop the broker.
work=$CJS_SWEEP_NETNS
proto=$CJS_PROTOCOL
out=$work/$proto
ip link set lo up
pids=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
case $proto in
classic) broker=(--default-partitions 1) ;;
consumer) broker=(--default-partitions 4 --rack RACK1 --group-consumer-session-timeout 10s --group-consumer-min-session-timeout 6s) ;;
*) echo "${0##*/}: unknown group protocol $proto" >&2; exit 1 ;;
esac
"$work/kaas" --listeners 'PLAINTEXT://:9092,SASL_PLAINTEXT://:9093' \
	--sasl-enabled-mechanisms PLAIN --sasl-plain-without-tls --sasl-credentials-file "$work/users.json" \
	--authorizer acl --allow-everyone-if-no-acl-found --super-users User:admin \
	--http-addr 127.0.0.1:18080 --data-dir "$out/data" --log-level warn "${broker[@]}" >"$out/kaas.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do curl -sf http://127.0.0.1:18080/readyz >/dev/null && break; sleep 0.5; done
curl -sf http://127.0.0.1:18080/readyz >/dev/null || { echo "${0##*/}: the broker is not ready" >&2; exit 1; }

cd "$src"
[ $# -gt 0 ] || set -- test/promisified/
rc=0
start=$(date +%s)
TEST_CONSUMER_GROUP_PROTOCOL=$proto NODE_OPTIONS=--max-old-space-size=1536 node_modules/.bin/jest --ci --forceExit --coverage=false \
	--json --outputFile="$out/result.json" "$@" >"$out/jest.log" 2>&1 || rc=$?
echo "suite: $(($(date +%s) - start)) s"
jq -r --arg d "$src/" '.testResults[] | . as $f | .assertionResults[] | "\(.status) \($f.name | ltrimstr($d)) :: \(.fullName)"' \
	"$out/result.json" || true
echo "failures:"
jq -r --arg d "$src/" '.testResults[] | . as $f | .assertionResults[] | select(.status == "failed")
	| "\($f.name | ltrimstr($d)) :: \(.fullName) :: \(.failureMessages[0] // "" | split("\n")[0])"' "$out/result.json" || true
# A file whose tests never ran (a failing hook or module) has no assertion results, only its message.
jq -r --arg d "$src/" '.testResults[] | select(.status == "failed" and (.assertionResults | length) == 0)
	| "\(.name | ltrimstr($d)) :: \(.message | split("\n") | map(select(length > 0)) | .[0:3] | join(" "))"' "$out/result.json" || true
jq -r '"passed: \(.numPassedTests), failed: \(.numFailedTests), skipped: \(.numPendingTests + .numTodoTests), files failed: \(.numFailedTestSuites)"' \
	"$out/result.json" || true
if [ "$proto" = classic ] && [ -n "${CJS_E2E:-}" ]; then
	e2e=0
	KAFKA_HOST=localhost:9092 node_modules/.bin/mocha --exit --timeout 120000 --reporter json \
		--reporter-option output="$out/e2e.json" e2e/*.spec.js >"$out/e2e.log" 2>&1 || e2e=$?
	echo "e2e failures:"
	jq -r '.failures[] | "\(.fullTitle) :: \(.err.message // "" | split("\n")[0])"' "$out/e2e.json" || true
	jq -r '"e2e passed: \(.stats.passes), failed: \(.stats.failures), skipped: \(.stats.pending)"' "$out/e2e.json" || true
	[ "$e2e" = 0 ] || rc=$e2e
fi
exit "$rc"
