# The operator's image: one static binary, a CA bundle for public registries, a non-root user,
# nothing else (no shell, no libc, no package manager).
#
# A standard multi-platform build compiles the binary inside a Rust image, natively for each
# target platform (QEMU emulates the ones the builder is not):
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t IMAGE .
#
# Offline, or without a container engine that can run a Rust image, the binary is compiled on
# the host and the same final stage packs it (scripts/build-operator-image.sh does this with
# buildah, which skips the unused `compile` stage and so never pulls its base image):
#
#   buildah build --build-arg BINARY=prebuilt --platform linux/amd64 -t IMAGE <context>
#     where <context>/dist/<arch>/ holds llama-stack-operator and ca-certificates.crt.
ARG BINARY=compile

FROM docker.io/library/rust:1.95-bookworm AS compile
RUN apt-get update && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The platform's own musl target: x86_64 on amd64, aarch64 on arm64.
RUN target="$(uname -m)-unknown-linux-musl" \
 && rustup target add "$target" \
 && cargo build --profile dist --locked --target "$target" --bin llama-stack-operator \
 && mkdir /out \
 && cp "target/$target/dist/llama-stack-operator" /out/llama-stack-operator \
 && cp /etc/ssl/certs/ca-certificates.crt /out/ca-certificates.crt

FROM scratch AS prebuilt
ARG TARGETARCH
COPY dist/${TARGETARCH}/ /out/

FROM ${BINARY} AS binary

FROM scratch
COPY --from=binary /out/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=binary /out/llama-stack-operator /usr/local/bin/llama-stack-operator
# 65532, as distroless' "nonroot": any non-zero UID works; no passwd entry is needed.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/llama-stack-operator"]
