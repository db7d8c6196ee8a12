#!/usr/bin/env bash
# Run the vLLM plugin's tests against a real vLLM: build (or reuse) a virtual environment with vLLM and
# chatparse, then run tests/integrations/test_vllm.py and the token-level runners (tests/test_tokens.py, which
# adds the plugin as a runner when vLLM imports). CI does not install vLLM (about 9 GB); this is how to run
# them. Needs no GPU and no model weights.
#
#   scripts/test-vllm.sh                 # venv in ../vllm-venv (outside the repo), vLLM 0.33.*
#   VLLM_VENV=/path VLLM_SPEC='vllm==0.33.0' scripts/test-vllm.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VLLM_VENV:-$(cd .. && pwd)/vllm-venv}
spec=${VLLM_SPEC:-vllm==0.33.*}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import vllm" 2>/dev/null; then
    echo "+ installing $spec into $venv (a few minutes, ~9 GB)"
    "$venv/bin/pip" install -q "$spec"
fi
# chatparse without the dev extras' transformers pin (vLLM pins its own transformers), plus the test tools.
"$venv/bin/pip" install -q -e . pytest pytest-xdist hypothesis jinja2 "openai>=1.40"
"$venv/bin/python" -c "import vllm; print('vLLM', vllm.__version__)"
set -x
"$venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider tests/integrations/test_vllm.py tests/test_tokens.py "$@"
