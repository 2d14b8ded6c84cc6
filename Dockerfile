# lambdaclaw in a container: the gateway with its data in the volume /data.
#
#   docker build -t lambdaclaw .
#   docker run -d --name lambdaclaw -p 127.0.0.1:8080:8080 -v lambdaclaw:/data \
#     -e OPENAI_API_KEY lambdaclaw
#   docker logs lambdaclaw            # the first API key is printed once
#   docker exec lambdaclaw lambdaclaw doctor
#
# The binary is static (CGO_ENABLED=0, the SQLite driver is pure Go), so
# the image is distroless: no shell, no package manager, a non-root user.

# The builder is pinned to the Go version of go.mod.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY functions ./functions
COPY shared ./shared
ARG VERSION=dev
ARG COMMIT=unknown
ARG BUILD_DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${BUILD_DATE}" \
      -o /out/lambdaclaw ./functions/lambdaclaw \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lambdaclaw /usr/local/bin/lambdaclaw
# The data directory belongs to the image's non-root user (65532).
COPY --from=build --chown=65532:65532 /out/data /data
ENV LAMBDACLAW_HOME=/data \
    LAMBDACLAW_ADDR=0.0.0.0:8080
VOLUME /data
EXPOSE 8080
USER 65532:65532
# No shell or curl in a distroless image: the binary checks itself
# (GET /health of the server in this container; no provider is called).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/lambdaclaw", "doctor", "--health"]
ENTRYPOINT ["/usr/local/bin/lambdaclaw"]
CMD ["serve"]
