#!/usr/bin/env bash
# Runs franz-go's own transaction test (pkg/kgo TestTxnEtl: GroupTransactSession
# consume-transform-produce over classic and KIP-848 groups, checked exactly once)
# against one kaas broker on a data dir. The franz-go version is the one go.mod
# requires; its module (with its tests) comes from the module cache.
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
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/data"
"$work/kaas" --kafka-addr "127.0.0.1:$port" --http-addr "" --data-dir "$work/data" --log-level warn >"$work/kaas.log" 2>&1 &
pid=$!
for _ in $(seq 50); do
	if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	sleep 0.2
done
cd "$work/franz-go/pkg/kgo"
rc=0
KGO_SEEDS="127.0.0.1:$port" KGO_TEST_RECORDS="${KGO_TEST_RECORDS:-20000}" \
	go test . -run '^TestTxnEtl$' -count=1 -timeout 15m -v >"$work/kgo.log" 2>&1 || rc=$?
grep -E '^\s*--- |^(ok|FAIL|PASS)|_test\.go:[0-9]+: ' "$work/kgo.log" | grep -v 'completed in\|deleting\|DELETING' || true
exit "$rc"
