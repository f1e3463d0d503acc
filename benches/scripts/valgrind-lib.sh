# Shared by the scripts that run pagebench under valgrind (branch-sim.sh, ops-per-page.sh);
# sourced, not run.

# valgrind_args NAME PAGEBENCH CORPUS PAGES TOOL...: checks that each TOOL is installed,
# PAGEBENCH is executable, CORPUS readable and PAGES a count above 0; otherwise says which,
# as NAME, and exits with status 2.
valgrind_args() {
    local name=$1 pb=$2 corpus=$3 pages=$4 tool
    shift 4
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "$name: $tool not found" >&2; exit 2; }
    done
    [ -x "$pb" ] || { echo "$name: $pb is not an executable file" >&2; exit 2; }
    [ -r "$corpus" ] || { echo "$name: cannot read $corpus" >&2; exit 2; }
    case $pages in ''|*[!0-9]*|0) echo "$name: PAGES must be a number above 0" >&2; exit 2 ;; esac
}
