#!/usr/bin/env bash
# Byte-compares what two `hazel` binaries write for the same runs: every chain's CSV (timing
# comment lines aside), the summary printed on stdout, and a resumed run against an
# uninterrupted one. Used to show that a refactoring changes no draw and no byte of output.
#
#   scripts/draw_contract/csv_identity.sh OLD_HAZEL NEW_HAZEL [WORK_DIR]
#
# Needs ../shared/posteriordb beside the checkout (or HAZEL_POSTERIORDB) for the corpus cases;
# they are skipped with a message when it is missing. Exit status 0 when everything matches.
set -euo pipefail
old="$(realpath "$1")"
new="$(realpath "$2")"
work="${3:-$(mktemp -d)}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
pdb="${HAZEL_POSTERIORDB:-$repo/../shared/posteriordb}"
cd "$repo"
mkdir -p "$work"
failures=0
cases=0

# Each case: a name, then the `hazel sample` arguments (without --output-dir).
run_case() {
    local name="$1"
    shift
    cases=$((cases + 1))
    for which in old new; do
        local bin="$old"
        [[ $which == new ]] && bin="$new"
        rm -rf "$work/$which/$name"
        mkdir -p "$work/$which/$name"
        "$bin" sample "$@" --quiet --output-dir "$work/$which/$name" \
            >"$work/$which/$name/summary.txt" 2>"$work/$which/$name/stderr.txt" || true
        # Timing lines depend on the machine, and the output-dir path on the side.
        for f in "$work/$which/$name"/*.csv; do
            [[ -e $f ]] || continue
            grep -v -e 'Elapsed Time' -e 'seconds (Sampling)' -e 'seconds (Total)' \
                -e '^#   file = ' "$f" >"$f.cmp"
        done
        rm -f "$work/$which/$name/hazel-run.json"
    done
    local diffs
    if diffs="$(diff -r -x '*.csv' -x '.hazel.lock' -x '*.checkpoint.json' "$work/old/$name" "$work/new/$name")"; then
        echo "same: $name ($(ls "$work/new/$name"/*.csv 2>/dev/null | wc -l) chain files)"
    else
        echo "DIFFERENT: $name"
        echo "$diffs" | head -20
        failures=$((failures + 1))
    fi
}

for example in bernoulli eight_schools logistic_regression missing_data poisson_gamma truncated_normal; do
    run_case "$example" "examples/$example/model.stan" --data "examples/$example/data.json" \
        --seed 11 --chains 2 --warmup 300 --draws 300
done
run_case bnn examples/bnn/model.stan --data examples/bnn/data.json \
    --seed 5 --chains 2 --warmup 100 --draws 100
run_case eight_schools_dense_thin_warmup examples/eight_schools/model.stan \
    --data examples/eight_schools/data.json --seed 3 --chains 3 --warmup 150 --draws 200 \
    --metric dense --thin 3 --save-warmup --adapt-delta 0.9 --max-depth 7 --init 0.5
run_case bernoulli_fixed_param examples/bernoulli/model.stan \
    --data examples/bernoulli/data.json --seed 4 --chains 2 --draws 50 --algorithm fixed_param
printf '{"theta": 0.3}\n' >"$work/bernoulli_init.json"
run_case bernoulli_init_file examples/bernoulli/model.stan \
    --data examples/bernoulli/data.json --seed 9 --chains 2 --warmup 100 --draws 100 \
    --init "$work/bernoulli_init.json"
cat >"$work/no_parameters.stan" <<'STAN'
generated quantities {
  real y = normal_rng(0, 1);
  int k = poisson_rng(3);
}
STAN
run_case no_parameters "$work/no_parameters.stan" --seed 2 --chains 2 --draws 40
run_case warmup_only examples/bernoulli/model.stan --data examples/bernoulli/data.json \
    --seed 8 --chains 2 --warmup 50 --draws 0

if [[ -d $pdb ]]; then
    for program in arK-arK dogs-dogs GLM_Poisson_Data-GLM_Poisson_model \
        earnings-logearn_interaction gp_pois_regr-gp_pois_regr; do
        if [[ -f corpus/posteriordb/$program/model.stan && -f $pdb/$program/data.json ]]; then
            run_case "$program" "corpus/posteriordb/$program/model.stan" \
                --data "$pdb/$program/data.json" --seed 21 --chains 2 --warmup 200 --draws 200
        else
            echo "skipped: $program (not in the corpus or posteriordb)"
        fi
    done
else
    echo "skipped: corpus programs ($pdb not found)"
fi

# Resume: a run killed after iteration 120 and resumed by the new binary writes what the new
# binary's uninterrupted run writes (and, by the cases above, what the old binary writes).
cases=$((cases + 1))
resume_args=(examples/eight_schools/model.stan --data examples/eight_schools/data.json
    --seed 13 --chains 2 --warmup 100 --draws 100 --checkpoint-every-iters 25 --quiet)
for which in whole resumed; do
    rm -rf "$work/resume/$which"
    mkdir -p "$work/resume/$which"
done
"$old" sample "${resume_args[@]}" --output-dir "$work/resume/whole" >"$work/resume/whole.txt"
HAZEL_TEST_ABORT_AFTER_ITERATION=120 "$new" sample "${resume_args[@]}" \
    --output-dir "$work/resume/resumed" >/dev/null 2>&1 || true
"$new" sample --resume "$work/resume/resumed" --quiet >"$work/resume/resumed.txt"
resume_same=1
# The summary printed after the resume covers every draw of every chain, as the whole run's.
cmp -s "$work/resume/whole.txt" "$work/resume/resumed.txt" || resume_same=0
for f in "$work/resume/whole"/*.csv; do
    g="$work/resume/resumed/$(basename "$f")"
    if ! diff <(grep -v -e Elapsed -e 'seconds (' -e '^#   file = ' "$f") \
        <(grep -v -e Elapsed -e 'seconds (' -e '^#   file = ' "$g") >/dev/null; then
        resume_same=0
    fi
done
if [[ $resume_same == 1 ]]; then
    echo "same: resume (old uninterrupted run vs new killed-and-resumed run: files and summary)"
else
    echo "DIFFERENT: resume"
    failures=$((failures + 1))
fi

echo "$((cases - failures)) passed, $failures failed"
[[ $failures == 0 ]]
