#!/usr/bin/env bash
# Build KenLM's lmplz and build_binary from the kenlm sdist on PyPI and put them in
# the virtualenv's bin/. Boost comes from Debian packages (installed when missing and
# we are root). Usage: scripts/build-kenlm.sh VENV_DIR
set -euo pipefail
venv=${1:?usage: build-kenlm.sh VENV_DIR}
version=${KENLM_VERSION:-0.3.0}
if [[ -x "$venv/bin/lmplz" && -x "$venv/bin/build_binary" ]]; then
  echo "kenlm: lmplz and build_binary already in $venv/bin"; exit 0
fi
need=(libboost-program-options-dev libboost-system-dev libboost-thread-dev libboost-test-dev
      zlib1g-dev libbz2-dev liblzma-dev cmake g++ make)
missing=()
for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "kenlm: installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "kenlm: missing Debian packages: ${missing[*]} (install them, e.g. sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! "$venv/bin/pip" download -q --no-deps --no-binary kenlm "kenlm==$version" -d "$work" \
     >"$work/download.log" 2>&1; then
  tail -5 "$work/download.log" >&2
  echo "kenlm: could not download the source of kenlm==$version from the package index (above)" >&2
  exit 1
fi
tar -xzf "$work"/kenlm-*.tar.gz -C "$work"
src=$(find "$work" -maxdepth 1 -type d -name 'kenlm-*' | head -1)
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DKENLM_MAX_ORDER=6 >"$work/cmake.log" 2>&1 \
  || { cat "$work/cmake.log" >&2; exit 1; }
cmake --build "$work/build" --target lmplz build_binary -j "$(nproc)" >"$work/build.log" 2>&1 \
  || { tail -50 "$work/build.log" >&2; exit 1; }
install -m 755 "$work/build/bin/lmplz" "$work/build/bin/build_binary" "$venv/bin/"
echo "kenlm: built lmplz and build_binary into $venv/bin"
