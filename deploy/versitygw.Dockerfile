# syntax=docker/dockerfile:1
#
# versitygw, the S3 gateway of the deployment (posix backend on a volume). `go install
# pkg@version` builds the pinned release with its own go.mod, independent of splathost's.

FROM golang:1.26 AS build
ENV CGO_ENABLED=0
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go install -trimpath -ldflags="-s -w" github.com/versity/versitygw/cmd/versitygw@v1.8.0

# alpine: busybox wget runs the compose healthcheck against versitygw's --health path.
FROM alpine:3.22
RUN apk add --no-cache ca-certificates \
    && addgroup -S -g 10001 vgw \
    && adduser -S -D -H -u 10001 -G vgw vgw \
    && mkdir -p /data \
    && chown vgw:vgw /data
COPY --from=build /go/bin/versitygw /usr/local/bin/versitygw
# A new named volume mounted on /data copies this ownership, so the gateway can write it.
VOLUME /data
USER 10001:10001
EXPOSE 7070
ENTRYPOINT ["/usr/local/bin/versitygw"]
CMD ["--port", ":7070", "--health", "/health", "posix", "/data"]
