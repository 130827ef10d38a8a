#!/usr/bin/env bash
# Behaviour must not change under a clean-up (issue 13: "draws are byte-identical before and
# after, the corpus and the examples, same seeds"). `run` has one `hazel` binary write, with fixed
# seeds, everything below into a folder; `compare` diffs two such folders, ignoring only what a
# run cannot repeat (wall-clock times, a lock file's process id) and the folder's own name.
#
#   scripts/house/identity.sh run BIN OUTDIR      e.g. a binary built from main, then one from
#   scripts/house/identity.sh compare OUT_A OUT_B      the branch; exit status 1 on a difference
#
# What `run` covers:
#   - every bundled example (every data file): `sample` (4 chains, CSVs and printed summary),
#     `optimize` and `pathfinder`;
#   - a few corpus posteriors whose parameters use the constrained types (simplex, ordered,
#     positive_ordered, cholesky_factor_corr, corr_matrix, cov_matrix), and a model declaring
#     every constrained type (python/tests/models/constraints.stan): `sample`, shorter runs;
#   - every corpus posterior: `log-density` at its oracle points, as is, with constants and
#     without the Jacobian; `format`;
#   - every program of the syntax corpus and of the checker's invalid programs: `check`, `format`.
# Needs ../shared/posteriordb (or HAZEL_POSTERIORDB) for the corpus posteriors' data.
#
# `sample` runs with `--adaptation stan --init 2`, the defaults before `hazel sample`'s became
# low-rank adaptation from Pathfinder inits: baselines made before the change stay comparable
# (`compare` leaves these two flags out of the stored `hazel-run.json` arguments, which older
# baselines do not have), and a clean-up is still checked on Stan's adaptation, the one most
# tests pin. The new defaults' draws are the tests' and the benchmarks' to check.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DB=${HAZEL_POSTERIORDB:-$ROOT/../shared/posteriordb}

# The defaults `sample` had when the first baselines were made (see above).
OLD_DEFAULTS=(--adaptation stan --init 2)

# Posteriors sampled (besides the examples): constrained types, kept short.
SAMPLED="hmm_example-hmm_example low_dim_gauss_mix-low_dim_gauss_mix
  dogs-dogs_nonhierarchical Survey_data-Survey_model eight_schools-eight_schools_noncentered
  arK-arK kidiq-kidscore_momiq"

run() {
    local bin out
    bin=$(realpath "$1")
    out=$(realpath -m "$2")
    mkdir -p "$out"/sample "$out"/method "$out"/density "$out"/syntax
    echo "$ROOT" >"$out"/.root
    echo "$DB" >"$out"/.db
    cd "$ROOT"
    for model in examples/*/model.stan; do
        local ex
        ex=$(basename "$(dirname "$model")")
        for data in examples/"$ex"/data*.json; do
            local tag
            tag=$ex-$(basename "$data" .json)
            "$bin" sample "$model" --data "$data" --seed 4711 "${OLD_DEFAULTS[@]}" --quiet \
                --output-dir "$out/sample/$tag" >"$out/sample/$tag.stdout" 2>&1
            echo "rc=$?" >>"$out/sample/$tag.stdout"
            for method in optimize pathfinder; do
                mkdir -p "$out/method/$tag-$method"
                "$bin" "$method" "$model" --data "$data" --seed 4711 \
                    --output-dir "$out/method/$tag-$method" \
                    >"$out/method/$tag-$method.stdout" 2>&1
                echo "rc=$?" >>"$out/method/$tag-$method.stdout"
            done
        done
    done
    for name in $SAMPLED; do
        local model=corpus/posteriordb/$name/model.stan data=$DB/$name/data.json
        local args=()
        [ -f "$data" ] && args=(--data "$data")
        "$bin" sample "$model" "${args[@]}" --seed 11 "${OLD_DEFAULTS[@]}" --warmup 300 --draws 200 --quiet \
            --output-dir "$out/sample/$name" >"$out/sample/$name.stdout" 2>&1
        echo "rc=$?" >>"$out/sample/$name.stdout"
    done
    "$bin" sample python/tests/models/constraints.stan --data python/tests/models/constraints.json \
        --seed 11 "${OLD_DEFAULTS[@]}" --warmup 300 --draws 200 --quiet \
        --output-dir "$out/sample/constraints" >"$out/sample/constraints.stdout" 2>&1
    echo "rc=$?" >>"$out/sample/constraints.stdout"
    for dir in corpus/posteriordb/*/; do
        local name
        name=$(basename "$dir")
        [ -f "$dir/model.stan" ] && [ -f "$dir/oracle.json" ] || continue
        python3 -c "import json,sys; o=json.load(open(sys.argv[1])); json.dump([p['q'] for p in o['points']], open(sys.argv[2], 'w'))" \
            "$dir/oracle.json" "$out/density/$name.points.json" || continue
        local args=()
        [ -f "$DB/$name/data.json" ] && args=(--data "$DB/$name/data.json")
        for variant in "" --include-constants --no-jacobian; do
            "$bin" log-density "$dir/model.stan" "${args[@]}" --points "$out/density/$name.points.json" \
                $variant >"$out/density/$name$variant.txt" 2>&1
            echo "rc=$?" >>"$out/density/$name$variant.txt"
        done
        "$bin" format "$dir/model.stan" >"$out/density/$name.format" 2>&1
        echo "rc=$?" >>"$out/density/$name.format"
    done
    for file in crates/hazel-syntax/tests/corpus/valid/*.stan crates/hazel-check/tests/invalid/*.stan; do
        local tag=${file//\//_}
        "$bin" check "$file" >"$out/syntax/$tag.check" 2>&1
        echo "rc=$?" >>"$out/syntax/$tag.check"
        "$bin" format "$file" >"$out/syntax/$tag.format" 2>&1
        echo "rc=$?" >>"$out/syntax/$tag.format"
    done
}

# A copy of a run's folder without wall-clock times and with its own path replaced.
normalized() {
    local from to
    from=$(realpath "$1")
    to=$2
    rm -rf "$to"
    cp -r "$from" "$to"
    # A run's lock file holds its process id.
    find "$to" -name .hazel.lock -delete
    # The checkout and the posteriordb folder a run used (the CSVs record the working
    # directory and data paths), so that two checkouts of the same code compare equal.
    local root="" db=""
    [ -f "$to/.root" ] && root=$(cat "$to/.root") && rm "$to/.root"
    [ -f "$to/.db" ] && db=$(cat "$to/.db") && rm "$to/.db"
    # Wall-clock lines of the CSVs (CmdStan's `Elapsed Time`, Pathfinder's PSIS time), a
    # checkpoint's seconds, and its CSV byte count (which the width of those lines changes;
    # the CSVs themselves are compared).
    find "$to" -type f | while read -r file; do
        sed -i -E -e "s|$from|OUT|g" ${db:+-e "s|$db|DB|g"} ${root:+-e "s|$root|ROOT|g"} -e '/^#.*[0-9] seconds \([A-Za-z -]+\)$/d' \
            -e 's/"(warmup|sampling)_secs":[0-9.e+-]+/"\1_secs":T/g' \
            -e 's/"csv_bytes":[0-9]+/"csv_bytes":N/' "$file"
    done
    # The old defaults passed explicitly (see OLD_DEFAULTS) among the stored arguments.
    find "$to" -name hazel-run.json | while read -r file; do
        sed -i -z -E 's/\n *"--adaptation",\n *"stan",\n *"--init",\n *"2",//' "$file"
    done
}

compare() {
    local tmp
    tmp=$(mktemp -d)
    normalized "$1" "$tmp/a"
    normalized "$2" "$tmp/b"
    local files
    files=$(cd "$tmp/a" && find . -type f | wc -l)
    if diff -r "$tmp/a" "$tmp/b"; then
        echo "identical: $files files (wall-clock times and the folder's path left out)"
        rm -rf "$tmp"
    else
        echo "DIFFERENT (normalized copies kept in $tmp)"
        return 1
    fi
}

case "${1:-}" in
run) run "$2" "$3" ;;
compare) compare "$2" "$3" ;;
*)
    sed -n '2,20p' "$0"
    exit 2
    ;;
esac
