# The kaas image, for builds with a registry (the golang builder image is pulled):
#   docker build -t kaas:dev \
#     --build-arg VERSION=$(git describe --tags --always --dirty) --build-arg REVISION=$(git rev-parse HEAD) .
# `go tool task image` builds the same image without pulling anything (deploy/image, a Go
# program writing an OCI archive); the two describe one image: keep the user, files, labels,
# environment, ports, volume and entrypoint here in step with deploy/image/build.go.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=
# Static: the final image has no libc and no loader.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
      -o /out/kaas ./cmd/kaas \
 && mkdir /out/data

FROM scratch
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.title="kaas" \
      org.opencontainers.image.description="Kafka-compatible broker for Kubernetes (StatefulSet on a shared ReadWriteMany volume)" \
      org.opencontainers.image.source="https://github.com/kaas-project/kaas" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# A numeric non-root user (Kubernetes' runAsNonRoot can only verify a number), named in
# /etc/passwd and /etc/group for tools that look it up.
COPY deploy/image/rootfs/etc/passwd deploy/image/rootfs/etc/group /etc/
COPY --from=build /out/kaas /kaas
# The shared volume's mount point, writable by the user when nothing is mounted.
COPY --from=build --chown=65532:65532 /out/data /data
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    KAAS_DATA_DIR=/data
USER 65532:65532
WORKDIR /
VOLUME ["/data"]
EXPOSE 9092 9094 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["/kaas"]
