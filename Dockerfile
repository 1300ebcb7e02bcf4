# The manager's image, in Metal3's style: the manager built static in a Go
# image, then alone on a distroless base as the non-root user 65532.
# make docker-build builds it with a container engine; make image builds the
# same image (/manager, user 65532, the same labels) without one, from
# bin/manager (hack/image).

ARG BUILD_IMAGE=docker.io/library/golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static:nonroot

FROM ${BUILD_IMAGE} AS builder
WORKDIR /workspace
# A module proxy of your own: docker build --build-arg GOPROXY=...
ARG GOPROXY
# The checksum database lacks the metal3-io and some k8s.io staging modules;
# go.sum pins them.
ENV GONOSUMDB=github.com/metal3-io,k8s.io

# The modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download

COPY main.go ./
COPY api/ api/
COPY baremetal/ baremetal/
COPY controllers/ controllers/
COPY internal/ internal/
COPY ipam/ ipam/
COPY networkdata/ networkdata/
COPY template/ template/
COPY webhooks/ webhooks/

ARG ARCH=amd64
ARG LDFLAGS
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${ARCH} go build -trimpath -ldflags "${LDFLAGS}" -o manager .

FROM ${BASE_IMAGE}
ARG TAG=dev
LABEL org.opencontainers.image.title="capm3-preprov" \
      org.opencontainers.image.description="DHCP-less pre-provisioning network data for Metal3 BareMetalHosts" \
      org.opencontainers.image.source="https://github.com/capm3-preprov/capm3-preprov" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${TAG}"
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532
ENTRYPOINT ["/manager"]
