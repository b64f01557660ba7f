#!/bin/sh
# Run HERE (the development machine), in the repository root: gathers what bench/device/run.sh
# needs on the GPU machine into .devcarry/ (ignored by git; carried by the device tool's `carry`):
#   node.xz            this machine's node binary, compressed (the GPU machine's image may have none)
#   mods.tar.xz        webgpu 0.6.2 (index.js and linux-x64 dawn.node only) and its dependencies
#   tfjs.cjs           @tensorflow/tfjs-core (every gradient registered) and tfjs-backend-webgpu 4.22.0, one file
#   bench.mjs          bench/webgpu-steps.ts bundled with theanine's sources (esbuild), one file
#   check.mjs          bench/device/check.ts bundled the same way (gpu:webgpu against the cpu device)
#   *.deb              the Vulkan loader (libvulkan1) and libglvnd's libraries, which the NVIDIA
#                      driver's Vulkan ICD (libGLX_nvidia.so.0) loads, for amd64, unpacked there with dpkg -x
# Needs: BENCH_MODULES=<a node_modules holding webgpu 0.6.2 and the two tfjs packages>.
set -eu
MODS=${BENCH_MODULES:?set BENCH_MODULES to a node_modules with webgpu 0.6.2, @tensorflow/tfjs-core and @tensorflow/tfjs-backend-webgpu}
grep -qx '/.devcarry/' .git/info/exclude 2>/dev/null || echo '/.devcarry/' >> "$(git rev-parse --git-common-dir)/info/exclude"
rm -rf .devcarry && mkdir -p .devcarry
xz -T2 -6 -c "$(command -v node)" > .devcarry/node.xz
tar -C "$MODS" -cJf .devcarry/mods.tar.xz \
  --exclude='webgpu/dist/darwin-*' --exclude='webgpu/dist/win32-*' --exclude='webgpu/dist/linux-arm64' \
  webgpu debug ms
# tfjs-core with every gradient registered and tfjs-backend-webgpu, as one CommonJS file
T=$(mktemp -d); printf '%s\n' "module.exports = require('@tensorflow/tfjs-core');" "require('@tensorflow/tfjs-core/dist/register_all_gradients');" "require('@tensorflow/tfjs-backend-webgpu');" > "$T/tfjs.cjs"
NODE_PATH="$MODS" node_modules/.bin/esbuild "$T/tfjs.cjs" --bundle --platform=node --format=cjs --log-level=error --outfile=.devcarry/tfjs.cjs
rm -rf "$T"
node_modules/.bin/esbuild bench/webgpu-steps.ts --bundle --platform=node --format=esm --log-level=error --ignore-annotations \
  --outfile=.devcarry/bench.mjs --external:webgpu \
  --banner:js="import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"
node_modules/.bin/esbuild bench/device/check.ts --bundle --platform=node --format=esm --log-level=error --ignore-annotations \
  --outfile=.devcarry/check.mjs --external:webgpu \
  --banner:js="import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"
cp bench/device/torch_steps.py .devcarry/
mkdir -p /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
apt-get $o update >/dev/null
(cd .devcarry && apt-get $o download libvulkan1 libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2 >/dev/null)
du -sh .devcarry/* && du -sh .devcarry
