#!/usr/bin/env bash
# Runs franz-go's own pkg/kgo test suite against one kaas broker on a data
# dir, with a PLAINTEXT and a SASL_PLAINTEXT (SCRAM) listener: every test of
# the suite (unit tests and integration tests: produce and consume, classic
# and KIP-848 groups, transactions with TestTxnEtl, KIP-932 share groups
# with TestShareGroup* and their admin APIs in TestShareGroupOffsetsAdmin,
# the suite's SCRAM mode with SCRAM-SHA-256) but the ones listed in
# $excluded, whose reasons docs/compatibility.md gives; then TestSCRAMAuth
# and TestSCRAMAuthBadCredentials again with SCRAM-SHA-512.
# A skipped test fails the run. The franz-go version is the one go.mod requires;
# its module (with its tests) comes from the module cache.
# KGO_TEST_RECORDS bounds the records per run (default 20000).
# Usage: bash .ci/kgo.sh [TEST_REGEXP]; a regexp runs only the suite's tests
# it names (go test -run), on SCRAM-SHA-256, the exclusions still applying.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go mod download github.com/twmb/franz-go
src=$(go list -m -f '{{.Dir}}' github.com/twmb/franz-go)
cp -r "$src" "$work/franz-go"
chmod -R u+w "$work/franz-go"
go build -o "$work/kaas" ./cmd/kaas
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
sasl_port=$(free_port)
mkdir -p "$work/data"
echo kgo-secret | "$work/kaas" scram-credential kgo >"$work/users.json"
"$work/kaas" --listeners "PLAINTEXT://127.0.0.1:$port,SASL_PLAINTEXT://127.0.0.1:$sasl_port" \
	--http-addr "" --data-dir "$work/data" --sasl-credentials-file "$work/users.json" \
	--log-level warn >"$work/kaas.log" 2>&1 &
pid=$!
for p in "$port" "$sasl_port"; do
	for _ in $(seq 50); do
		if (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then break; fi
		sleep 0.2
	done
done
cd "$work/franz-go/pkg/kgo"
rc=0
run_kgo() { # label, test regexp, extra go test flags, --, env assignments
	local label=$1 tests=$2 flags=()
	shift 2
	while [ "$1" != -- ]; do flags+=("$1"); shift; done
	shift
	echo "== $label: $tests ${flags[*]}"
	local t0=$SECONDS
	env "$@" KGO_SEEDS="127.0.0.1:$port" KGO_TEST_RF=1 KGO_TEST_RECORDS="${KGO_TEST_RECORDS:-20000}" \
		go test . -run "$tests" "${flags[@]}" -count=1 -timeout 15m -v >"$work/kgo.log" 2>&1 || rc=$?
	echo "== $label: $((SECONDS - t0)) s"
	# Top-level results, failed or skipped subtests and the tests' own
	# messages (the client logs stay in the log).
	grep -E '^--- |^\s+--- (FAIL|SKIP)|^(ok|FAIL|PASS)|_test\.go:[0-9]+: ' "$work/kgo.log" | grep -v 'completed in\|deleting\|DELETING' || true
	if grep -q -- '--- SKIP' "$work/kgo.log"; then
		echo "kgo.sh: a test was skipped" >&2
		rc=1
	fi
}
# TestOAuthAuth: its token is signed with alg none, which kaas refuses.
# TestIssueProduceBrokerTooOldFailsRecords: skips itself, as against Kafka 4
# (ApiVersions lists Produce from v0, KAFKA-18659).
excluded='^(TestOAuthAuth|TestIssueProduceBrokerTooOldFailsRecords)$'
scram() { echo KGO_TEST_SCRAM_SEEDS="127.0.0.1:$sasl_port" KGO_TEST_SCRAM="kgo:kgo-secret:$1"; }
if [ -n "${1:-}" ]; then
	# shellcheck disable=SC2046
	run_kgo "selected, SCRAM-SHA-256" "$1" -skip "$excluded" -- $(scram 256)
else
	# shellcheck disable=SC2046
	run_kgo "the suite, SCRAM-SHA-256" '.' -skip "$excluded" -- $(scram 256)
	# shellcheck disable=SC2046
	run_kgo "SCRAM-SHA-512" '^(TestSCRAMAuth|TestSCRAMAuthBadCredentials)$' -- $(scram 512)
fi
if [ "$rc" != 0 ]; then
	echo "--- kaas log (tail) ---" >&2
	tail -n 40 "$work/kaas.log" >&2 || true
fi
exit "$rc"
