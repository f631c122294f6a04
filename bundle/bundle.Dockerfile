# The bundle image. Generated from deploy/base by scripts/build-bundle.sh; do not edit.
FROM scratch
LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1
LABEL operators.operatorframework.io.bundle.manifests.v1=manifests/
LABEL operators.operatorframework.io.bundle.metadata.v1=metadata/
LABEL operators.operatorframework.io.bundle.package.v1=llama-stack-operator
LABEL operators.operatorframework.io.bundle.channels.v1=candidate-v0.1
LABEL operators.operatorframework.io.bundle.channel.default.v1=candidate-v0.1
COPY manifests /manifests/
COPY metadata /metadata/
