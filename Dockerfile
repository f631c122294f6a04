# Static, non-root image of llama-stack-operator.
# Build: docker build -t llama-stack-operator .   (CI builds the same static musl binary without a container engine)
FROM docker.io/library/rust:1.95-bookworm AS build
RUN rustup target add x86_64-unknown-linux-musl && apt-get update && apt-get install -y --no-install-recommends musl-tools && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --target x86_64-unknown-linux-musl --bin llama-stack-operator \
 && cp target/x86_64-unknown-linux-musl/release/llama-stack-operator /llama-stack-operator

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /llama-stack-operator /usr/local/bin/llama-stack-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/llama-stack-operator"]
