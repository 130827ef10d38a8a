#!/usr/bin/env bash
# Side-by-side benchmark of hazel and its peers (stanli, numpyro + JAX, nutpie + PyMC).
# Creates bench/peers/.venv (reusing system packages), installs the peers it can, builds hazel
# in release mode and runs bench/peers/peers.py. Arguments are passed on to peers.py
# (e.g. --chains 4 --warmup 1000 --draws 1000 --only eight_schools).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${HAZEL_PEERS_VENV:-$here/.venv}"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv --system-site-packages "$venv"
fi
py="$venv/bin/python"
# Each peer is optional: one that does not install is reported and left out of the table.
for packages in "numpy arviz" "stanli" "jax[cpu] numpyro" "pymc nutpie"; do
    # shellcheck disable=SC2086
    if ! "$py" -m pip install --quiet $packages; then
        echo "note: could not install: $packages (that peer is skipped)" >&2
    fi
done

(cd "$repo" && cargo build --release -p hazel-cli)
target="${CARGO_TARGET_DIR:-$repo/target}"
exec "$py" "$here/peers.py" --hazel "$target/release/hazel" --repo "$repo" "$@"
