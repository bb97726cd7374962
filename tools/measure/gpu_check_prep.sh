#!/usr/bin/env bash
# Before the GPU cross-check's device call, on a machine with PyPI access: put bitsandbytes (the
# QLoRA cases' NF4 kernels; the device image has none and no network) into .whl/site, a folder
# .gitignore lists, for the call to carry. Only the CUDA 13 libraries are kept (the device's torch is
# cu130): the whole wheel (43 MB) would eat most of the 64 MiB the working tree may take.
#
#   bash tools/measure/gpu_check_prep.sh        # from the checkout that makes the device call
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
version="${BNB_VERSION:-0.50.2}"

download="$(mktemp -d)"
trap 'rm -rf "$download"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$download" "bitsandbytes==$version"
rm -rf .whl/site/bitsandbytes .whl/site/bitsandbytes-*.dist-info
mkdir -p .whl/site
# Python sources, the dist-info (transformers reads the version from it) and the CUDA 13 builds.
python3 - "$download"/bitsandbytes-*.whl .whl/site <<'EOF'
import re, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
keep_lib = re.compile(r"libbitsandbytes_(cuda13\d|cpu)\.so$")
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if not n.endswith(".so") or keep_lib.search(n)]
    z.extractall(target, names)
EOF
du -sh .whl/site
ls .whl/site/bitsandbytes/*.so
