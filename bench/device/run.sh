#!/bin/sh
# Run THERE (the GPU machine), in the repository root, with .devcarry/ carried (prepare.sh):
#   device run: carry [".devcarry"], command "sh bench/device/run.sh"
# Prints and writes to $OUT: the machine (nvidia-smi, node, the WebGPU adapter), then
#   1. theanine gpu:webgpu and tfjs-webgpu on the same Dawn adapter (Vulkan on the NVIDIA driver):
#      matmul 4096 float32 GFLOP/s and the MLP, LSTM (Scan) and CNN training steps (BENCH_SIZE=large);
#   2. PyTorch (CUDA) on the same GPU: the same matmul and steps (torch_steps.py).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
C=.devcarry
log() { echo "$@" | tee -a "$OUT/bench.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$OUT/bench.txt"
# node: the machine's own where it has one, else the carried binary
if command -v node >/dev/null; then NODE=$(command -v node); else xz -dc $C/node.xz > /tmp/node && chmod +x /tmp/node && NODE=/tmp/node; fi
log "node $($NODE --version) ($NODE)"
# the Vulkan loader where the image has none; the NVIDIA driver's ICD
ldconfig -p | grep -q libvulkan.so.1 || { for f in $C/*.deb; do dpkg -x "$f" /; done; ldconfig; }
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/mods/node_modules && tar -C /tmp/mods/node_modules -xJf $C/mods.tar.xz
export XDG_RUNTIME_DIR=/tmp/xdg; mkdir -p $XDG_RUNTIME_DIR
export THEANINE_WEBGPU_MODULE=/tmp/mods/node_modules/webgpu/index.js BENCH_TFJS_DIR=/tmp/mods/node_modules BENCH_TFJS_BUNDLE=$PWD/$C/tfjs.cjs BENCH_SIZE=large BENCH_REPS=${BENCH_REPS:-20}
THEANINE_DEBUG=cli BENCH_CASES=matmul,mlp,lstm,cnn timeout 300 $NODE $C/bench.mjs 2>&1 | grep -v '^Warning: maxDynamic' | tee -a "$OUT/bench.txt"
PYTHONUNBUFFERED=1 timeout 180 python3 $C/torch_steps.py 2>&1 | tee -a "$OUT/bench.txt"
