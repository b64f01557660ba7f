#!/bin/sh
# Run THERE (the GPU machine), in the repository root, with .devcarry/ carried (prepare.sh):
#   device run: carry [".devcarry"], command "sh bench/device/run-check.sh"
# Prints and writes to $OUT/check.txt: the GPU, then bench/device/check.ts (each graph on
# gpu:webgpu against the cpu device). Exits with the check's status.
set -u
. bench/device/setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/check.txt"
THEANINE_GPU_MODE=webgpu timeout 240 $NODE $C/check.mjs 2>&1 | grep -v '^Warning: maxDynamic' | tee -a "$OUT/check.txt"
