#!/usr/bin/env bash
# Installs the external programs the integration tests drive: kcat
# (librdkafka), an MIT Kerberos KDC and its tools, prometheus and promtool,
# kafka-python (python3-kafka, for Debian's /usr/bin/python3) with its
# snappy, lz4 and zstd codecs and confluent-kafka-python
# (python3-confluent-kafka, over Debian's librdkafka), LinkedIn Burrow and the
# ZooKeeper it needs from Debian; kafkajs and @platformatic/kafka from npm;
# confluent-kafka-go (librdkafka 2.11) from the Go module proxy.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then
    $SUDO apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

# apt_install_no_start installs packages whose maintainer scripts would start
# a system service: a policy-rc.d forbids service starts during the install
# (unless the machine has its own).
apt_install_no_start() {
  if [ -e /usr/sbin/policy-rc.d ]; then
    apt_install "$@"
    return
  fi
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod 755 /usr/sbin/policy-rc.d
  local status=0
  apt_install "$@" || status=$?
  $SUDO rm -f /usr/sbin/policy-rc.d
  return "$status"
}

if ! command -v kcat >/dev/null; then
  apt_install kcat
fi
# cmd/kaas's GSSAPI tests run their own MIT Kerberos realm: krb5kdc and
# kdb5_util (krb5-kdc), kadmin.local (krb5-admin-server), kinit (krb5-user,
# which librdkafka runs) and Cyrus SASL's GSSAPI plugin for librdkafka.
# Their maintainer scripts would start the system's krb5kdc and kadmind,
# which have no realm here.
if [ ! -x /usr/sbin/krb5kdc ] || [ ! -x /usr/sbin/kadmin.local ] || ! command -v kinit >/dev/null ||
  ! compgen -G '/usr/lib/*/sasl2/libgssapiv2.so*' >/dev/null; then
  apt_install_no_start krb5-kdc krb5-admin-server krb5-user libsasl2-modules-gssapi-mit
fi
# cmd/kaas's TestBurrow runs LinkedIn Burrow (/usr/bin/Burrow) and the
# ZooKeeper it requires (java with Debian's zookeeper.jar and slf4j-simple,
# from libzookeeper-java and libslf4j-java), each on its own loopback port;
# the packages' own services are not started.
if [ ! -x /usr/bin/Burrow ] || ! command -v java >/dev/null ||
  [ ! -f /usr/share/java/zookeeper.jar ] || [ ! -f /usr/share/java/slf4j-simple.jar ]; then
  apt_install_no_start burrow zookeeper
fi
# protoc regenerates proto/heartbeatpb (CI checks the committed code is current).
if ! command -v protoc >/dev/null; then
  apt_install protobuf-compiler
fi
# runc runs the container image in deploy/image's test (a real OCI runtime).
if ! command -v runc >/dev/null; then
  apt_install runc
fi
# kubectl drives the cluster tests against the real test apiserver.
if ! command -v kubectl >/dev/null; then
  apt_install kubernetes-client
fi

# ip (iproute2) and iptables build the network namespaces and the partitions
# of cmd/kaas's network-partition test (TestNetworkPartitionFencesIsolatedBroker).
if ! command -v ip >/dev/null; then
  apt_install iproute2
fi
if ! command -v iptables >/dev/null; then
  apt_install iptables
fi

# The CNI plugins (bridge, host-local, loopback) give the one-node cluster's pods their
# network (deploy/testenv/node, go tool task node-e2e); unshare (util-linux) gives the
# node its own network namespace.
if [ ! -x /usr/lib/cni/bridge ] || [ ! -x /usr/lib/cni/host-local ] || [ ! -x /usr/lib/cni/loopback ]; then
  apt_install containernetworking-plugins
fi

# prometheus and promtool check and scrape /metrics in cmd/kaas's metrics tests.
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  apt_install prometheus
fi

# kafka-python drives cmd/kaas's TestExternalKafkaPython; Debian packages it
# (and the codec libraries its producer compresses with) for /usr/bin/python3,
# which the tests call by path (python3 on PATH may be another interpreter).
if ! /usr/bin/python3 -c 'import kafka, snappy, lz4.frame, zstandard' 2>/dev/null; then
  apt_install python3-kafka python3-snappy python3-lz4 python3-zstandard
fi
# confluent-kafka-python drives cmd/kaas's TestExternalConfluentKafka*
# (librdkafka's transactional producer, consumer group and AdminClient),
# for the same /usr/bin/python3.
if ! /usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null; then
  apt_install python3-confluent-kafka
fi

# cmd/kaas's TestExternalLibrdkafka* build cmd/kaas/testdata/confluentgo, a
# module of its own over confluent-kafka-go (its static librdkafka, cgo):
# fetch that module ahead from the Go module proxy (the build needs no other).
if ! command -v gcc >/dev/null; then
  apt_install gcc libc6-dev
fi
(cd cmd/kaas/testdata/confluentgo && go mod download github.com/confluentinc/confluent-kafka-go/v2)

# The npm projects of the JavaScript clients' scripts (kafkajs,
# @platformatic/kafka), exactly as locked. A project's node_modules is
# reinstalled whenever its package-lock.json changed since the last install
# (a stamp records it).
npm_project() { # dir package
  local dir=$1 pkg=$2
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt_install nodejs npm
  fi
  if [ ! -f "$dir/node_modules/$pkg/package.json" ] || ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.kaas-lock-stamp"; then
    # --loglevel=error: @platformatic/kafka's helpers declare Node.js 22 and
    # warn on 20, where everything the scripts use runs.
    (cd "$dir" && npm ci --no-audit --no-fund --silent --loglevel=error)
    cp "$dir/package-lock.json" "$dir/node_modules/.kaas-lock-stamp"
  fi
  echo "node $(node --version), $pkg $(node -p "require('./$dir/node_modules/$pkg/package.json').version")"
}
npm_project cmd/kaas/testdata/kafkajs kafkajs
npm_project cmd/kaas/testdata/platformatic @platformatic/kafka

kcat -V | head -n 4 | tail -n 1
echo "kafka-python $(/usr/bin/python3 -c 'import kafka; print(kafka.__version__)')"
echo "confluent-kafka-go $(cd cmd/kaas/testdata/confluentgo && go list -m -f '{{.Version}}' github.com/confluentinc/confluent-kafka-go/v2)"
echo "confluent-kafka-python $(/usr/bin/python3 -c 'import confluent_kafka as c; print(c.version()[0], "over librdkafka", c.libversion()[0])')"
