#!/usr/bin/env bash
# On a bare GPU machine, with .gpu/ packed by scripts/gpu-carry.sh for one suite (.gpu/SUITE):
#   nmt    the back-translation GPU tests, then benchmarks/nmt/nmt_gpu.py
#   embed  the embedding GPU tests (GPU_TESTS: the test files; the embed suite's packages also
#          run tests/unit/test_paraid.py), then (PARTS, default all of "embeddings reference scale")
#          benchmarks/embed/embeddings.py (each averaging variant eager and as a CUDA graph; GRAPH=
#          leaves the graph rows out; RGRAPH=1 adds recurrent ones, with PASS_ROWS=400; VARIANTS,
#          EPOCHS, RECURRENT_EPOCHS, PASS_ROWS, LINKED pass through), embed_reference.py (the authors' code, --gpu 1) and
#          embed_scale.py (featurisation on every core, 1M and 10M pairs, generated on one
#          core while the GPU steps run; then SCALE_TRAIN seconds of steps, default 10, over
#          SCALE_EPOCHS epochs at most, default 1: the steps' rate at that size), all on cuda (REF_EPOCHS: the reference's epochs, 5);
#          and, only when PARTS names it, tf32: benchmarks/embed/embeddings.py with --tf32 (TF32_VARIANTS, default "gran-sp trigram");
#          prefetch: benchmarks/embed/embed_prefetch.py (an epoch's buffers read in a thread while the
#          steps run, against inline; PREFETCH_PAIRS, PREFETCH_EPOCHS; PREFETCH_ARGS more of its
#          flags, e.g. "--twitter --model trigram");
#          before: benchmarks/embed/embeddings.py as the embeddings part runs it, from the commit
#          packed as .gpu/before.tar.xz (gpu-carry.sh's BEFORE): a ratio on one card, one session
#   paraid the identifier's GPU tests, then (PARTS, default "default speed cross")
#          benchmarks/twitter/paraid_default.py (the default model, trained as the pipeline does, on
#          cuda), benchmarks/twitter/cross_speed.py, benchmarks/twitter/paraid.py --models extended cross on the URL
#          corpus train split and PIT-2015 dev (grouped 5-fold CV and a held-out fifth: F1,
#          training seconds, pairs/s)
# Results go to $OUT (default .gpu/out), packed as $OUT/out.tgz. Usage: scripts/gpu-check.sh [PART_TIMEOUT_S]
# The whole call ends within BUDGET seconds (default 540, under a device call's 600): each
# step gets at most PART_TIMEOUT_S (default 300) and never more than what is left, and a step
# with under 20 s left is skipped and says so, so a call always comes back with what ran.
set -uo pipefail
cd "$(dirname "$0")/.."
DEADLINE=$(( $(date +%s) + ${BUDGET:-540} ))
CAP=${1:-300}
# step NAME LOG CMD...: CMD under timeout, at most CAP and what the budget leaves, its output in
# $OUT/LOG; prints the return code, the seconds and the log's tail
step() {
  local name=$1 log=$2 left start rc; shift 2
  left=$(( DEADLINE - $(date +%s) - 10 ))
  (( left > CAP )) && left=$CAP
  if (( left < 20 )); then echo "$name: skipped, the budget is spent"; return 0; fi
  start=$(date +%s)
  timeout "$left" "$@" > "$OUT/$log" 2>&1; rc=$?
  echo "$name: rc $rc in $(( $(date +%s) - start )) s (limit $left s)"
  tail -c "${TAIL:-1500}" "$OUT/$log"; echo
}
OUT=$(realpath -m "${OUT:-.gpu/out}")
mkdir -p "$OUT" /tmp/paramill-site
# a device call brings back at most 8 files: on exit, everything under $OUT becomes one
# $OUT/out.tgz (PACK=0 leaves the files as they are)
pack() {
  [ "${PACK:-1}" = 1 ] || return 0
  local loose; loose=$(mktemp -d)
  find "$OUT" -mindepth 1 -maxdepth 1 -exec mv -t "$loose" {} +
  tar czf "$OUT/out.tgz" -C "$loose" . && rm -rf "$loose"
}
trap pack EXIT
tar -C /tmp/paramill-site -xJf .gpu/site.tar.xz
export PYTHONPATH="$PWD/src:/tmp/paramill-site/site" PYTHONUNBUFFERED=1
# paramill's own torch.load calls all say weights_only=True; the full unpickler is let in only
# where others' code (the authors' reference, the back-translation suite's OpenNMT-py) needs it
PY=${PYTHON:-python3}
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
SUITE=$(cat .gpu/SUITE 2>/dev/null || echo nmt)
THREADS=$(nproc)
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu: a dry run of the embed suite on a machine without a GPU
TESTS="-m gpu -p no:cacheprovider -p no:randomly -q -rs -o addopts="
if [ "$SUITE" = paraid ]; then
  cat .gpu-a/model.part-* .gpu/model.part-* | xz -d | tar -C /tmp/paramill-site/site -xf - || {
    echo "the MiniLM weights are incomplete: carry .gpu-a in a call just before this one"; exit 3; }
  export PARAMILL_SHARED_DATA="$PWD/.gpu/shared-data"
  [ "${SKIP_TESTS:-}" ] || step "gpu tests" pytest-gpu.txt "$PY" -m pytest $TESTS tests/unit/test_paraid.py
  for part in ${PARTS:-default speed cross}; do
    case $part in
      default) step default paraid_default.log "$PY" benchmarks/twitter/paraid_default.py --threads "$THREADS" \
          --out "$OUT/paraid_default.json" ;;
      speed) step speed cross_speed.log "$PY" benchmarks/twitter/cross_speed.py --score "${SCORE:-20000}" --train "${TRAIN:-5000}" \
          --out "$OUT/cross_speed.json" ;;
      cross) step cross paraid_cross.log "$PY" benchmarks/twitter/paraid.py --models extended cross --cross-epochs 1 \
          --datasets url pit --holdout "${HOLDOUT:-0.2}" --out "$OUT/paraid_cross.json" ;;
      *) echo "unknown part $part (default, speed, cross)" ;;
    esac
  done
  exit 0
fi
if [ "$SUITE" = embed ]; then
  export PARAMILL_SHARED_DATA="$PWD/.gpu/shared-data"
  "$PY" - <<'PYEOF' 2>&1 | tee "$OUT/env.txt"
import sys, torch, polars, pyarrow, sentence_transformers, sentencepiece
from paramill.run import device
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU",
      "polars", polars.__version__, "pyarrow", pyarrow.__version__,
      "sentencepiece", sentencepiece.__version__, "device.pick:", device.pick("auto"))
if int(pyarrow.__version__.split(".")[0]) < 14:  # the id store's page checksums need it
    sys.exit(f"pyarrow {pyarrow.__version__} here: paramill's Parquet page checksums need 14 or "
             "later; carry a newer pyarrow in .gpu/site.tar.xz")
PYEOF
  [ "${PIPESTATUS[0]}" = 0 ] || exit 3
  # the synthetic pairs of the scale part are made (one core, numpy) while the GPU steps run
  # (GENERATE=1: also in a call without the scale part, for the next call on the same machine)
  if [[ " ${PARTS:-scale} " == *" scale "* || "${GENERATE:-}" ]]; then
    "$PY" benchmarks/embed/embed_scale.py --sizes ${SIZES:-1000000 10000000} --data /tmp/scale-data \
      --generate-only > "$OUT/scale_data.log" 2>&1 &
    GENERATING=$!
  fi
  [ "${SKIP_TESTS:-}" ] || step "gpu tests" pytest-gpu.txt "$PY" -m pytest $TESTS ${GPU_TESTS:-tests/unit/test_embed.py}
  for part in ${PARTS:-embeddings reference scale}; do
    case $part in
      embeddings) step embeddings embeddings.log "$PY" benchmarks/embed/embeddings.py --device "$DEVICE" \
          --threads "$THREADS" --variants ${VARIANTS:-word word-sp trigram word-trigram gran-sp} \
          --epochs ${EPOCHS:-15} ${RECURRENT_EPOCHS:+--recurrent-epochs "$RECURRENT_EPOCHS"} \
          ${PASS_ROWS:+--recurrent-pass-rows "$PASS_ROWS"} ${LINKED:+--linked-negatives "$LINKED"} \
          ${GRAPH---cuda-graph} ${RGRAPH:+--recurrent-graph} --out "$OUT/embeddings.json" ;;
      tf32) step tf32 embeddings-tf32.log "$PY" benchmarks/embed/embeddings.py --device "$DEVICE" \
          --threads "$THREADS" --variants ${TF32_VARIANTS:-gran-sp trigram} --epochs ${EPOCHS:-15} \
          ${PASS_ROWS:+--recurrent-pass-rows "$PASS_ROWS"} ${GRAPH---cuda-graph} ${RGRAPH:+--recurrent-graph} \
          --tf32 --out "$OUT/embeddings-tf32.json" ;;
      before) rm -rf /tmp/paramill-before && mkdir -p /tmp/paramill-before \
          && tar -C /tmp/paramill-before -xJf .gpu/before.tar.xz || { echo "before: no .gpu/before.tar.xz"; continue; }
        PYTHONPATH="/tmp/paramill-before/src:/tmp/paramill-site/site" step before embeddings-before.log \
          "$PY" /tmp/paramill-before/benchmarks/embed/embeddings.py --device "$DEVICE" \
          --threads "$THREADS" --variants ${VARIANTS:-word word-sp trigram word-trigram gran-sp} \
          --epochs ${EPOCHS:-15} ${GRAPH---cuda-graph} --out "$OUT/embeddings-before.json" ;;
      reference) TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 step reference embed_reference.log "$PY" benchmarks/embed/embed_reference.py --device "$DEVICE" \
          --threads "$THREADS" --reference .gpu/reference --deps /tmp/paramill-site/site --epochs ${REF_EPOCHS:-5} \
          --out "$OUT/embed_reference.json" ;;
      scale) while [ "${GENERATING:-}" ] && kill -0 "$GENERATING" 2>/dev/null \
                   && (( $(date +%s) < DEADLINE - 40 )); do sleep 1; done
        [ "${GENERATING:-}" ] && cat "$OUT/scale_data.log"
        step scale embed_scale.log "$PY" benchmarks/embed/embed_scale.py --device "$DEVICE" --threads "$THREADS" \
          --sizes ${SIZES:-1000000 10000000} --units sp --train-seconds ${SCALE_TRAIN:-10} \
          --epochs ${SCALE_EPOCHS:-1} --data /tmp/scale-data \
          --out "$OUT/embed_scale.json" ;;
      prefetch) step prefetch embed_prefetch.log "$PY" benchmarks/embed/embed_prefetch.py --device "$DEVICE" \
          --threads "$THREADS" --pairs ${PREFETCH_PAIRS:-400000} --epochs ${PREFETCH_EPOCHS:-3} --rounds 1 \
          ${PREFETCH_ARGS:-} --out "$OUT/embed_prefetch.json" ;;
      *) echo "unknown part $part (embeddings, tf32, before, reference, scale, prefetch)" ;;
    esac
  done
  exit 0
fi
export TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1
"$PY" - <<'PYEOF' 2>&1 | tee "$OUT/env.txt"
from paramill.nmt.onmt_import import import_onmt
import_onmt()
import torch, ctranslate2, polars, pyonmttok, onmt, sys
from paramill.nmt import engine
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
print("ctranslate2", ctranslate2.__version__, "sees", ctranslate2.get_cuda_device_count(), "GPU(s)")
print("cuBLAS 12 for CTranslate2:", engine.cuda_library_problem() or "loads")
print("engine auto picks:", engine.select("auto").describe() if not engine.cuda_library_problem() else "(needs a bundle; see tests)")
PYEOF
[ "${SKIP_TESTS:-}" ] || step "gpu tests" pytest-gpu.txt "$PY" -m pytest $TESTS tests/unit/test_nmt.py
cd .gpu && TAIL=3000 step benchmark nmt_gpu.log "$PY" ../benchmarks/nmt/nmt_gpu.py --data work/nmt/data \
  --src-spm work/nmt/spm/cs.model --tgt-spm work/nmt/spm/en.model --shards 'work/shards/*/shard-*.parquet' \
  --steps ${STEPS:-300} --precision ${PRECISION:-fp32 fp16} --bucket-size 2048 --batch-tokens 4096 \
  --sentences 1000 --batch 64 256 --length 24 --sample-sources 32 --out "$OUT/nmt_gpu.json"
