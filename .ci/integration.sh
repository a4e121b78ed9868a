#!/usr/bin/env bash
# The integration tests: ./cmd/kaas's tests each in a process of their own,
# KAAS_TEST_JOBS at a time (3 by default), then the other packages under
# ./cmd/... and ./deploy/image/... with go test.
#
# ./cmd/kaas's tests spend most of their time waiting (session timeouts,
# rebalance delays, fsyncs, a kube-apiserver starting), not computing: run
# one after another they keep a quarter of two cores busy. Side by side they
# finish in a fraction of the time. A process per test keeps them apart (no
# state of one test's process reaches another) and balances the load, as
# each worker takes the next test when its last one ends.
#
# KAAS_TEST_RUN (a go test -run pattern, default all) picks the tests:
#   KAAS_TEST_RUN=Kafkajs go tool task integration
# A failed test's output is printed after the others have run; the script
# fails if any test failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${KAAS_TEST_JOBS:-3}
run=${KAAS_TEST_RUN:-.}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out" "$work/tmp"

go test -c -o "$work/kaas.test" ./cmd/kaas
go build -buildvcs=false -o "$work/kaas" ./cmd/kaas

# The longest tests start first so that no worker is left with one of them
# at the end; the rest follow in the order go test lists them. A name here
# that no longer exists is ignored.
first=(TestSafeHandoffs TestCordonedBrokerCluster TestClusterGroupMembershipSurvivesCoordinatorKill
	TestChaosHealsUnderLoad TestElectionEpochs TestClusterTransactionalETLThroughKills TestClusterTransactions
	TestKafkaAclObjects TestBurrow TestClusterOnKubernetes TestExternalSarama)
(cd cmd/kaas && "$work/kaas.test" -test.list "$run") | grep -E '^(Test|Fuzz|Example)' >"$work/listed" || true
if [ ! -s "$work/listed" ]; then
	echo "${0##*/}: no test matches $run" >&2
	exit 1
fi
{
	for t in "${first[@]}"; do grep -Fx -- "$t" "$work/listed" || true; done
	grep -Fxv -f <(printf '%s\n' "${first[@]}") "$work/listed" || true
} >"$work/queue"

# run_one runs test $1 in its own process and prints one line: ok or FAIL,
# its name and its time.
run_one() {
	local name=$1 start rc=0 took
	start=$EPOCHREALTIME
	(cd "$root/cmd/kaas" && TMPDIR="$work/tmp" KAAS_TEST_BINARY="$work/kaas" \
		"$work/kaas.test" -test.run "^$name\$" -test.count=1 -test.timeout 15m) >"$work/out/$name.log" 2>&1 || rc=$?
	took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	if [ "$rc" -eq 0 ]; then
		printf 'ok    %-64s %7ss\n' "$name" "$took"
	else
		printf 'FAIL  %-64s %7ss\n' "$name" "$took"
		echo "$name" >>"$work/failed"
	fi
}
export -f run_one
export root work

start=$(date +%s)
xargs -P "$jobs" -I{} bash -c 'run_one "$1"' _ {} <"$work/queue"
echo "$(wc -l <"$work/queue") tests of ./cmd/kaas, $jobs at a time, in $(($(date +%s) - start)) s"

if [ -s "$work/failed" ]; then
	while read -r name; do
		echo "=== output of $name"
		cat "$work/out/$name.log"
	done <"$work/failed"
	echo "FAIL: $(wc -l <"$work/failed") of ./cmd/kaas's tests: $(tr '\n' ' ' <"$work/failed")"
	exit 1
fi

if [ "$run" = . ]; then
	others=$(go list ./cmd/... ./deploy/image/... | grep -vx 'github.com/kaas-project/kaas/cmd/kaas')
	# shellcheck disable=SC2086
	go test -count=1 -timeout 30m $others
fi
