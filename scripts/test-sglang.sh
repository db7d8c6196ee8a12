#!/usr/bin/env bash
# Run the SGLang plugin's tests against a real SGLang: build (or reuse) a virtual environment with SGLang and
# chatparse, then run tests/integrations/test_sglang.py. CI does not install SGLang (about 11 GB); this is how
# to run them. Needs no GPU and no model weights (importing SGLang's serving layer takes ~15 s on a CPU).
#
#   scripts/test-sglang.sh                 # venv in ../sglang-venv (outside the repo), sglang 0.5.23
#   SGLANG_VENV=/path SGLANG_SPEC='sglang==0.5.23' scripts/test-sglang.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${SGLANG_VENV:-$(cd .. && pwd)/sglang-venv}
spec=${SGLANG_SPEC:-sglang==0.5.23}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import sglang" 2>/dev/null; then
    echo "+ installing $spec into $venv (several minutes, ~11 GB)"
    "$venv/bin/pip" install -q "$spec"
fi
# chatparse without its dependencies' pins (SGLang pins its own transformers and pydantic), its own
# dependencies, and the test tools. The editable install also installs chatparse's sglang.srt.plugins entry
# point once pyproject.toml declares it.
"$venv/bin/pip" install -q -e . --no-deps
"$venv/bin/pip" install -q "regex>=2024.11.6" "docstring-parser>=0.16" "rich>=13.7" pytest pytest-xdist hypothesis
"$venv/bin/python" -c "import sglang; print('SGLang', sglang.__version__)"
set -x
"$venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider -p no:warnings tests/integrations/test_sglang.py "$@"
