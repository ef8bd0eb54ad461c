#!/usr/bin/env bash
# `make check-frameworks`: the TACIT exports through the real lmms-eval and VLMEvalKit, with a tiny
# random-weight LLaVA on the CPU, compared with vrforge's own scorer on the same saved answers.
#
# The frameworks need torchvision, which does not install beside the project's CPU torch, so they
# get a venv of their own outside the repository (FRAMEWORKS_VENV, ~5.5 GB; reused when present).
# Steps: the project's venv builds a 4-puzzle release and exports it; the frameworks' venv builds
# the tiny model, runs lmms-eval's CLI on the group and VLMEvalKit's dataset, inference and scoring
# (single pass and circular); the project's venv re-scores the saved answers and compares.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${FRAMEWORKS_VENV:-../frameworks-venv}
PROJECT=.venv/bin/python
if ! "$VENV/bin/python" -c "import lmms_eval, vlmeval, decord, torchvision" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  printf 'torch==2.14.1\ntorchvision==0.29.1\n' > "$VENV/constraints.txt"
  "$VENV/bin/pip" install -q torch==2.14.1 torchvision==0.29.1
  # decord: imported by lmms-eval's llava_hf but not declared; filelock 4 breaks lmms-eval 0.7.3.
  "$VENV/bin/pip" install -q -c "$VENV/constraints.txt" lmms-eval==0.7.3 ms-vlmeval==0.0.20 decord 'filelock<4'
fi
WORK=${CHECK_FRAMEWORKS_WORK:-$(mktemp -d)}
echo "check-frameworks: working in $WORK"
"$PROJECT" .ci/check_frameworks.py prepare "$WORK"
"$VENV/bin/python" .ci/check_frameworks.py tiny-llava "$WORK"
# lmms-eval exits 0 even when the run failed: the compare step checks its results file instead.
set +e
HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 "$VENV/bin/lmms-eval" --model llava_hf \
  --model_args "pretrained=$WORK/llava,device=cpu,device_map=cpu,dtype=float32" \
  --include_path "$WORK/lmms_tasks" --tasks tacit_choice --batch_size 1 \
  --output_path "$WORK/lmms-out" --log_samples > "$WORK/lmms-eval.log" 2>&1
echo $? > "$WORK/lmms-eval.rc"
set -e
"$VENV/bin/python" .ci/check_frameworks.py vlmevalkit "$WORK"
"$PROJECT" .ci/check_frameworks.py compare "$WORK"
