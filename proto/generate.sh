#!/usr/bin/env bash
# Regenerates proto/heartbeatpb from heartbeat.proto with the plugin versions
# pinned as Go tools in go.mod and Debian's protoc (apt-get install protobuf-compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -o "$bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc
PATH="$bin:$PATH" protoc -I proto \
  --go_out=. --go_opt=module=github.com/kaas-project/kaas \
  --go-grpc_out=. --go-grpc_opt=module=github.com/kaas-project/kaas \
  proto/heartbeat.proto
