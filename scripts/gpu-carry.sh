#!/usr/bin/env bash
# Pack what a bare GPU machine (Python 3.12 with torch, sentencepiece, pyarrow, numpy, but not
# polars, CTranslate2, OpenNMT-py, pyonmttok, rapidfuzz, ...) needs to run paramill's GPU tests
# and benchmarks/nmt_gpu.py, into .gpu/ (ignored by git):
#   .gpu/site.tar.xz  the missing packages (cp312 manylinux wheels, unpacked, shared objects
#                     stripped of symbols: CTranslate2 43 MB -> 14 MB, polars 54 MB -> 29 MB)
#   .gpu/work/        the sample's NMT data, SentencePiece models and shards (from `make run`)
# On the GPU machine: scripts/gpu-check.sh. Spacy, fastText and pyahocorasick are not packed:
# only OpenNMT-py transforms paramill never uses import them (paramill.nmt.onmt_import).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-work}
PY=${PYTHON:-.venv/bin/python}
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
rm -rf .gpu && mkdir -p .gpu/wheels .gpu/site
PACKAGES="ctranslate2==4.8.5 OpenNMT-py==3.5.1 pyonmttok==1.38.1 polars==2.1.0 polars-runtime-32==2.1.0
rapidfuzz zstandard configargparse jsonschema jsonschema-specifications referencing rpds-py"
for p in $PACKAGES; do
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .gpu/wheels "$p"
done
for w in .gpu/wheels/*.whl; do "$PY" -m zipfile -e "$w" .gpu/site; done
find .gpu/site -name '*.so*' -type f -exec strip --strip-unneeded {} +
tar -C .gpu -cf - site | xz -9e -T0 > .gpu/site.tar.xz
rm -rf .gpu/site .gpu/wheels
mkdir -p .gpu/work/nmt
cp -r "$WORK/nmt/data" "$WORK/nmt/spm" .gpu/work/nmt/
mkdir -p .gpu/work/shards && cp -r "$WORK"/shards/* .gpu/work/shards/
du -sh .gpu/*
