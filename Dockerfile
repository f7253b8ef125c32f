# joiner's image for those who build with Docker (or podman/buildah). Without
# a daemon, `make image` builds the same layout with hack/image, reproducibly.
#
#   docker build -t joiner:dev --build-arg VERSION=$(git describe --tags --always) .
#
# The binary is static (CGO_ENABLED=0) and runs as distroless' nonroot user
# 65532 on distroless/static, which carries CA certificates, /etc/passwd and
# tzdata and nothing else.
ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false -ldflags "-s -w -buildid= -X main.version=${VERSION}" -o /out/joiner ./cmd/joiner

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="joiner" \
      org.opencontainers.image.source="https://github.com/joiner-dev/joiner" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/joiner /joiner
USER 65532:65532
ENTRYPOINT ["/joiner"]
CMD ["controller"]
