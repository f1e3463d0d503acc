#!/usr/bin/env bash
# Fails if the consumer crate, built with cargo's default release profile, holds a SIMD
# intrinsic as a function of its own. That happens when an intrinsic is compiled outside the
# function that enables its target feature (in a closure, or a helper the compiler did not
# inline there), and then every use of it is a call: the decoders ran several times slower.
# Checked with the stable compiler and with the minimum supported one (1.85), whose closures
# do not inherit their enclosing function's target features.
#
#   bash benches/consumer/check-inlined.sh
set -euo pipefail
cd "$(dirname "$0")"
command -v nm >/dev/null || { echo "check-inlined: needs nm (binutils)" >&2; exit 1; }
dir="${CARGO_TARGET_DIR:-target}"
status=0
for toolchain in stable 1.85; do
    out="$dir/consumer-$toolchain"
    CARGO_TARGET_DIR="$out" cargo "+$toolchain" build -q --release
    # `_xgetbv` is feature detection's own call, made once; it is not on a hot path.
    calls=$(nm -C "$out/release/pagecodec-consumer" | grep 'core::core_arch::' | grep -v '_xgetbv' || true)
    if [ -n "$calls" ]; then
        echo "check-inlined: intrinsics compiled as functions with Rust $toolchain:" >&2
        echo "$calls" >&2
        status=1
    else
        echo "check-inlined: Rust $toolchain: every intrinsic inlined"
    fi
done
exit "$status"
