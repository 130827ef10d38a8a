#!/usr/bin/env bash
# Builds `stan_methods` (stan_methods.cpp: Stan's own ADVI and Pathfinder services) for one
# Stan program against the Stan 2.35 headers, stanc and TBB that the `httpstan` 4.13 wheel
# ships (pip install httpstan==4.13.0 into a venv; no CmdStan needed).
#
#   scripts/approx/stan_reference/build.sh VENV_SITE_PACKAGES MODEL.stan OUT_DIR
#
# Writes OUT_DIR/<name>.hpp (stanc), OUT_DIR/<name>.o, OUT_DIR/driver.o (once) and the
# executable OUT_DIR/<name>. Each compile takes minutes and ~2 GB of memory.
set -euo pipefail
site=$(cd "$1" && pwd); model=$2; out=$3
here=$(cd "$(dirname "$0")" && pwd)
httpstan=$site/httpstan
name=$(basename "$model" .stan)
mkdir -p "$out"
flags=(-std=c++17 -O1 -DBOOST_DISABLE_ASSERTS -DBOOST_PHOENIX_NO_VARIADIC_EXPRESSION
       -DSTAN_THREADS -D_REENTRANT -D_GLIBCXX_USE_CXX11_ABI=0 -Wno-deprecated-declarations
       -I "$httpstan/include")
"$httpstan/stanc" --name="${name}_model" --o="$out/$name.hpp" "$model"
if [ ! -f "$out/driver.o" ]; then
  g++ "${flags[@]}" -c "$here/stan_methods.cpp" -o "$out/driver.o"
fi
g++ "${flags[@]}" -x c++ -c "$out/$name.hpp" -o "$out/$name.o"
g++ "$out/driver.o" "$out/$name.o" -L "$httpstan/lib" -ltbb -Wl,-rpath,"$httpstan/lib" \
  -o "$out/$name"
