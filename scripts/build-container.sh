#!/usr/bin/env bash
# Build paramill's container and smoke-test it: `paramill --help` and a one-shard clean of
# the sample (snakemake builds work/shards/grammar-b: ingest + clean) inside the image.
#   scripts/build-container.sh apptainer   -> paramill.sif (for snakemake --sdm apptainer)
#   scripts/build-container.sh docker      -> image paramill:latest (docker or podman)
# Needs the tool and the debian:bookworm base image: from a registry, or made from Debian's
# own packages where no registry is reachable:
#   debootstrap --variant=minbase bookworm /tmp/rootfs http://deb.debian.org/debian
#   tar -C /tmp/rootfs -c . | podman import - docker.io/library/debian:bookworm
#   BUILD_ARGS=--pull=never scripts/build-container.sh podman
# BUILD_ARGS go to `docker/podman build` as they are; SMOKE_IN_BUILD=1 runs the smoke test
# as a build step (for hosts that can build but not start containers). Not part of
# `make test`: it downloads the CUDA torch wheels (several GB) and compiles KenLM.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=${1:?usage: build-container.sh apptainer|docker}
smoke='paramill --help >/dev/null && rm -rf /tmp/smoke && mkdir /tmp/smoke &&
  cp -r /opt/paramill/{Snakefile,config.yaml,rules,configs,envs,report,data,profiles} /tmp/smoke/ &&
  cd /tmp/smoke && snakemake --cores 2 work/shards/grammar-b && ls work/shards/grammar-b'
case "$tool" in
  apptainer|singularity)
    "$tool" build --force paramill.sif container/paramill.def
    "$tool" exec paramill.sif bash -c "$smoke"
    echo "container: paramill.sif built and smoke-tested" ;;
  docker|podman)
    # shellcheck disable=SC2086
    "$tool" build ${BUILD_ARGS:-} -f container/Dockerfile -t paramill:latest .
    if [[ -n "${SMOKE_IN_BUILD:-}" ]]; then
      # where containers cannot be started (no OCI runtime rights) but builds can run steps
      # (--isolation=chroot): the smoke test as a build step on top of the image
      # (exec form: the base's /bin/sh is dash, which has no $'...' quoting)
      printf 'FROM localhost/paramill:latest\nRUN ["bash", "-c", %s]\n' \
        "$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$smoke")" \
        | "$tool" build ${BUILD_ARGS:-} -t paramill-smoke -f - .
    else
      "$tool" run --rm paramill:latest bash -c "$smoke"
    fi
    echo "container: paramill:latest built and smoke-tested" ;;
  *) echo "unknown tool $tool (apptainer, singularity, docker, podman)" >&2; exit 2 ;;
esac
