# Sourced THERE by run.sh and run-check.sh: node (the machine's own, else the carried one) in
# $NODE, the Vulkan loader and libglvnd's libraries (the NVIDIA driver's Vulkan ICD,
# libGLX_nvidia.so.0, loads them; without them Dawn finds no adapter: "Found no drivers"), the
# driver's ICD file, webgpu 0.6.2 under /tmp/mods, and the variables the benches read.
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
C=.devcarry
if command -v node >/dev/null; then NODE=$(command -v node); else xz -dc $C/node.xz > /tmp/node && chmod +x /tmp/node && NODE=/tmp/node; fi
for f in $C/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/mods/node_modules && tar -C /tmp/mods/node_modules -xJf $C/mods.tar.xz
export XDG_RUNTIME_DIR=/tmp/xdg; mkdir -p $XDG_RUNTIME_DIR
export THEANINE_WEBGPU_MODULE=/tmp/mods/node_modules/webgpu/index.js
