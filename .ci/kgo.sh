#!/usr/bin/env bash
# Runs tests of franz-go's own pkg/kgo suite against one kaas broker on a data
# dir, with a PLAINTEXT and a SASL_PLAINTEXT (SCRAM) listener:
#   TestTxnEtl                  GroupTransactSession consume-transform-produce over
#                               classic and KIP-848 groups, checked exactly once;
#   TestSCRAMAuth               the suite's SCRAM mode (KGO_TEST_SCRAM, KGO_TEST_SCRAM_SEEDS),
#   TestSCRAMAuthBadCredentials with SCRAM-SHA-256 and again with SCRAM-SHA-512;
#   TestShareGroup, TestShareGroupETL, TestShareGroupAckOnClose
#                               KIP-932 share groups, their GROUP configs set through
#                               IncrementalAlterConfigs.
# A skipped test fails the run. The franz-go version is the one go.mod requires;
# its module (with its tests) comes from the module cache.
# KGO_TEST_RECORDS bounds the records per run (default 20000).
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
run_kgo() { # label, test regexp, then env assignments
	local label=$1 tests=$2
	shift 2
	echo "== $label: $tests"
	env "$@" KGO_SEEDS="127.0.0.1:$port" KGO_TEST_RECORDS="${KGO_TEST_RECORDS:-20000}" \
		go test . -run "$tests" -count=1 -timeout 15m -v >"$work/kgo.log" 2>&1 || rc=$?
	grep -E '^\s*--- |^(ok|FAIL|PASS)|_test\.go:[0-9]+: ' "$work/kgo.log" | grep -v 'completed in\|deleting\|DELETING' || true
	if grep -q -- '--- SKIP' "$work/kgo.log"; then
		echo "kgo.sh: a test was skipped" >&2
		rc=1
	fi
}
run_kgo "share groups" '^(TestShareGroup|TestShareGroupETL|TestShareGroupAckOnClose)$'
for alg in 256 512; do
	tests='^(TestSCRAMAuth|TestSCRAMAuthBadCredentials)$'
	if [ "$alg" = 256 ]; then tests='^(TestTxnEtl|TestSCRAMAuth|TestSCRAMAuthBadCredentials)$'; fi
	run_kgo "SCRAM-SHA-$alg" "$tests" KGO_TEST_SCRAM_SEEDS="127.0.0.1:$sasl_port" KGO_TEST_SCRAM="kgo:kgo-secret:$alg"
done
if [ "$rc" != 0 ]; then
	echo "--- kaas log (tail) ---" >&2
	tail -n 40 "$work/kaas.log" >&2 || true
fi
exit "$rc"
