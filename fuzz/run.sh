#!/usr/bin/env bash
# Runs every fuzz target for SECONDS seconds each (default 60) and prints, per target, the
# executions and the findings (crash-*, leak-*, timeout-*, oom-* artifacts written by this
# run). Exits non-zero if any target found something.
#
#   bash fuzz/run.sh 10                  # every target, 10 s each (what CI runs)
#   bash fuzz/run.sh 900 lzo_vs_c        # one target for 15 minutes
#   FUZZ_ARGS='-jobs=2 -workers=2' ...   # extra libFuzzer flags
#
# Every target is seeded from its committed corpus (seeds/<target>/) the first time its
# corpus directory is created.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# Seed corpus: the committed, minimised inputs of `seeds/<target>/` (which include the
# reference streams of wkdm/tests/data and lzo/tests/data), copied the first time a target's
# corpus directory is created; corpora live in fuzz/corpus (ignored).
seed() {
    local target=$1 dir="corpus/$1"
    [ -d "$dir" ] && return 0
    mkdir -p "$dir"
    if [ -d "seeds/$target" ]; then
        cp seeds/"$target"/* "$dir"/
    fi
    return 0
}

# Builds every target once (a no-op when up to date); `cargo fuzz run` then reuses it.
cargo +nightly fuzz build
status=0
printf '%-20s %14s %8s %10s  %s\n' target executions seconds findings artifacts
for t in "${targets[@]}"; do
    seed "$t"
    mkdir -p "artifacts/$t"
    before=$(find "artifacts/$t" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
    log="artifacts/$t.log"
    start=$SECONDS
    # Targets that run threads: a joined thread frees std's per-thread records in its
    # thread-local destructors, which may run after the join has returned, so libFuzzer's
    # per-input leak check sees them as leaks (LeakSanitizer names std::thread::Thread::new
    # and __cxa_thread_atexit_impl), and so does LeakSanitizer's own check at exit, which
    # -detect_leaks=0 leaves on (it wrote an empty input as a finding after minutes of
    # fuzzing). The leak checks stay on for every other target.
    extra="" asan="${ASAN_OPTIONS:-}"
    case $t in
        pagestore_sources) extra="-detect_leaks=0" asan="${asan:+$asan:}detect_leaks=0" ;;
    esac
    # libFuzzer exits non-zero on a finding; the artifact count below is what we report.
    # shellcheck disable=SC2086
    ASAN_OPTIONS="$asan" cargo +nightly fuzz run "$t" -- -max_total_time="$seconds" -print_final_stats=1 \
        $extra ${FUZZ_ARGS:-} >"$log" 2>&1 || true
    elapsed=$((SECONDS - start))
    after=$(find "artifacts/$t" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
    new=$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after") | sed '/^$/d')
    count=$(printf '%s' "$new" | grep -c . || true)
    # With -jobs/-fork several workers print stats: sum them.
    execs=$({ grep -o 'stat::number_of_executed_units: [0-9]*' "$log" || true; } | awk '{s += $2} END {print s + 0}')
    printf '%-20s %14s %8s %10s  %s\n' "$t" "$execs" "$elapsed" "$count" "$(echo $new)"
    if [ "$count" -gt 0 ]; then
        status=1
        grep -m1 -A3 'panicked at\|ERROR: AddressSanitizer\|ERROR: libFuzzer' "$log" | sed 's/^/    /' || true
    fi
done
exit $status
