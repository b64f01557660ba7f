#!/bin/sh
# Run THERE (the GPU machine), in the repository root, with .devcarry/ carried (prepare.sh):
#   device run: carry [".devcarry"], command "sh bench/device/run.sh"
# Prints and writes to $OUT: the machine (nvidia-smi, node, the WebGPU adapter), then
#   1. theanine gpu:webgpu and tfjs-webgpu on the same Dawn adapter (Vulkan on the NVIDIA driver):
#      matmul 4096 float32 GFLOP/s and the MLP, LSTM (Scan) and CNN training steps (BENCH_SIZE=large);
#   2. PyTorch (CUDA) on the same GPU: the same matmul and steps (torch_steps.py).
set -u
. bench/device/setup.sh
log() { echo "$@" | tee -a "$OUT/bench.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$OUT/bench.txt"
log "node $($NODE --version) ($NODE)"
export THEANINE_WEBGPU_MODULE=/tmp/mods/node_modules/webgpu/index.js BENCH_TFJS_DIR=/tmp/mods/node_modules BENCH_TFJS_BUNDLE=$PWD/$C/tfjs.cjs BENCH_SIZE=large BENCH_REPS=${BENCH_REPS:-20}
THEANINE_DEBUG=cli BENCH_CASES=matmul,mlp,lstm,cnn timeout 300 $NODE $C/bench.mjs 2>&1 | grep -v '^Warning: maxDynamic' | tee -a "$OUT/bench.txt"
PYTHONUNBUFFERED=1 timeout 180 python3 $C/torch_steps.py 2>&1 | tee -a "$OUT/bench.txt"
