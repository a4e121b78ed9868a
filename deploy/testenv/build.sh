#!/usr/bin/env bash
# Builds the test environment's binaries into deploy/testenv/bin/:
#   kube-apiserver  k8s.io/kubernetes/cmd/kube-apiserver at the version go.mod requires
#   etcd            embedded etcd (./cmd/etcd), fsync off
#   testenv         ./cmd/testenv (up / down / build)
# With --node, also the one-node cluster's binaries (package node): kube-controller-manager,
# kube-scheduler, kubelet, containerd, containerd-shim-runc-v2, ctr, coredns, pause.
# Idempotent: a no-op (about a second) when the binaries are current. Cold (empty Go caches)
# it takes minutes and needs ~2.5 GB of memory to link kube-apiserver; see deploy/README.md.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
mkdir -p bin
go build -o bin/testenv ./cmd/testenv
bin/testenv build "$@"
echo "build.sh: done in $(( $(date +%s) - start ))s"
ls -l bin/
