#!/usr/bin/env bash
# specviz's GPU check: every CUDA path, once, with one report file (tools/gpu_check.py says what runs).
#   tools/gpu_check.sh              on a machine with a GPU (no network needed; under 8 minutes)
#   tools/gpu_check.sh --dry-run    the same steps on CPU with tiny random-weight models
#   tools/gpu_check.sh --out FILE   where the report goes (default gpu-check/report.md)
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False
exec "${PYTHON:-python}" -m tools.gpu_check "$@"
