# Shared by fresh-corpora.sh and unseen-corpora.sh (sourced, not run): the build, the output
# folder, and the measurement of the captured page files in both orders.

# corpora_setup OUTDIR RESULT: the script's two arguments. Moves to the repository root,
# builds pagebench there and sets `pb` (its path), `outdir` (OUTDIR, created, as an
# absolute path) and `result` (RESULT, as given).
corpora_setup() {
    local given=${1:?output folder for the page files}
    result=${2:?result file}
    mkdir -p "$given"
    outdir=$(cd "$given" && pwd)
    case $result in /*) ;; *) result="$PWD/$result" ;; esac
    cd "$(dirname "${BASH_SOURCE[0]}")/../.."
    cargo build --release -p pagebench
    pb="$PWD/${CARGO_TARGET_DIR:-target}/release/pagebench"
}

# corpora_measure SCRIPT RESULT CODECS MAX_PAGES NAME...: runs pagebench over
# $outdir/NAME.pages back to back and in sweeps (5 runs each), keeps each run's whole output
# in $outdir/run[--sweep].txt, and writes to RESULT (and stdout) the machine, the corpora,
# the medians over the runs and the compression ratios, without the folder's path.
corpora_measure() {
    local script=$1 result=$2 codecs=$3 max_pages=$4
    shift 4
    local names=("$@") files=() name order
    for name in "${names[@]}"; do files+=("$outdir/$name.pages"); done
    local pattern
    pattern="^($(echo "$codecs" | sed 's/,/|/g')) +[0-9]+ [|]"
    {
        echo "\$ bash benches/scripts/$script OUTDIR RESULT.txt"
        echo "\$ pagebench run --corpus ${names[*]/%/.pages} --codec $codecs --max-pages $max_pages --reps 5 --quiet --runs 5 [--sweep]"
        for order in "" --sweep; do
            echo
            echo "## ${order:-back to back}"
            "$pb" run --corpus "${files[@]}" --codec "$codecs" --max-pages "$max_pages" \
                --reps 5 --quiet --runs 5 $order 2>&1 \
                | tee "$outdir/run${order}.txt" \
                | sed -n '/^machine:/p; /^corpora/,/^codecs:/p; /^== over the/,$p' \
                | sed "s#$outdir/##g"
        done
        echo
        echo "## compression ratio (back to back, run 1; the same pages in every run)"
        echo "codec         pages | compressed bytes: min max mean | ratio, stored/original | incompressible pages, share"
        awk -v p="$pattern" '/==== run 2/{exit} /^== [a-z]+: /{print} $0 ~ p {print}' "$outdir/run.txt"
    } | tee "$result"
}
