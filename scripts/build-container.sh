#!/usr/bin/env bash
# Build paramill's container and smoke-test it: `paramill --help` and a one-shard clean of
# the sample (snakemake builds work/shards/grammar-b: ingest + clean) inside the image.
#   scripts/build-container.sh apptainer   -> paramill.sif (for snakemake --sdm apptainer)
#   scripts/build-container.sh docker      -> image paramill:latest (docker or podman)
# Needs the tool and a reachable registry for the debian:bookworm base image. Not part of
# `make test`: it downloads the base image and the CUDA torch wheels (several GB).
set -euo pipefail
cd "$(dirname "$0")/.."
tool=${1:?usage: build-container.sh apptainer|docker}
smoke='paramill --help >/dev/null && rm -rf /tmp/smoke && mkdir /tmp/smoke &&
  cp -r /opt/paramill/{Snakefile,config.yaml,rules,configs,envs,report,data,profiles} /tmp/smoke/ &&
  cd /tmp/smoke && snakemake --cores 2 --sdm none work/shards/grammar-b && ls work/shards/grammar-b'
case "$tool" in
  apptainer|singularity)
    "$tool" build --force paramill.sif container/paramill.def
    "$tool" exec paramill.sif bash -c "$smoke"
    echo "container: paramill.sif built and smoke-tested" ;;
  docker|podman)
    "$tool" build -f container/Dockerfile -t paramill:latest .
    "$tool" run --rm paramill:latest bash -c "$smoke"
    echo "container: paramill:latest built and smoke-tested" ;;
  *) echo "unknown tool $tool (apptainer, singularity, docker, podman)" >&2; exit 2 ;;
esac
