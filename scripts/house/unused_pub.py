#!/usr/bin/env python3
"""Lists the public items of hazel's crates that nothing outside their crate uses.

Issue 13's rule: an item is `pub` only if it is part of the crate's interface, i.e. another
crate (or the bench harness, the fuzz targets, a user) uses it; everything else is
`pub(crate)` or private. This script finds candidates by name: for every item declared `pub`
(not `pub(crate)`/`pub(super)`) in `crates/<crate>/src`, it searches every Rust file outside
that directory (and in `bench/`, `fuzz/`, `python/`) for the item's name as a word. An item is reported

  - `unused`    when no file outside the crate's `src/` names it, or
  - `own tests` when only the crate's own `tests/`, `examples/` or `benches/` name it
    (listed for information: an integration test is outside the crate and needs `pub`).

Name matching is deliberately conservative: a common name (`new`, `len`, `Error`) used
anywhere outside counts as a use, so the list holds what is surely unused outside, not every
such item. Methods and fields are not checked (their names say too little). A `pub` item in a
module that is not itself `pub` all the way from the crate root (`pub(crate) mod lower;`) is
not public, unless a `pub use` in the crate names it, and is not listed.

Items that are deliberately public although nothing in the repository uses them outside
(a documented interface for users) are listed in `public_interface.txt` beside this script
as `crate::name` lines, each with a `# why` comment; they are not reported.

Usage: scripts/house/unused_pub.py [crate ...]   (default: every crate under crates/)
Exit status 1 when an `unused` item is reported, so the rule can be checked again later.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
ITEM = re.compile(
    r"^\s*pub\s+(?:unsafe\s+|const\s+|async\s+|extern\s+\"[^\"]*\"\s+)*"
    r"(fn|struct|enum|trait|const|static|type|mod|union|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)"
)
MACRO = re.compile(r"^\s*macro_rules!\s+([A-Za-z_][A-Za-z0-9_]*)")


def rust_files(base):
    return [p for p in base.rglob("*.rs") if "target" not in p.parts]


def strip_comments(text):
    """Drops `//` comments (doc comments included: a name in prose is not a use)."""
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


MOD_DECL = r"^\s*(pub(?:\([^)]*\))?\s+)?mod\s+{}\s*[;{{]"


def module_is_public(src, path):
    """Whether every module from the crate root down to the one `path` holds is `pub mod`."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("lib", "main", "mod"):
        parts.pop()
    for depth, name in enumerate(parts):
        parent = parts[:depth]
        candidates = [src / "lib.rs", src / "main.rs"] if not parent else [
            src.joinpath(*parent).with_suffix(".rs"),
            src.joinpath(*parent, "mod.rs"),
        ]
        declaration = re.compile(MOD_DECL.format(re.escape(name)), re.M)
        for candidate in candidates:
            if candidate.exists():
                m = declaration.search(candidate.read_text())
                if m:
                    if (m.group(1) or "").strip() != "pub":
                        return False
                    break
    return True


def reexported_names(src):
    """Every name a `pub use` in the crate mentions (a re-export makes an item public)."""
    names = set()
    for path in rust_files(src):
        for m in re.finditer(r"^\s*pub use ([^;]*);", strip_comments(path.read_text()), re.M):
            names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", m.group(1)))
    return names


def public_items(src):
    items = []
    reexported = reexported_names(src)
    for path in rust_files(src):
        hidden = not module_is_public(src, path)
        in_test_module = False
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.startswith("#[cfg(test)]"):
                in_test_module = True
            m = ITEM.match(line)
            if m and not in_test_module:
                kind, name = m.groups()
                if hidden and name not in reexported:
                    continue
                # `pub fn` inside an `impl` block is a method: skip (see the docstring).
                if kind == "fn" and line.startswith("    "):
                    continue
                if kind == "mod" and name == "tests":
                    continue
                items.append((name, kind, path.relative_to(ROOT), number))
    return items


def main():
    crates_dir = ROOT / "crates"
    wanted = sys.argv[1:] or sorted(p.name for p in crates_dir.iterdir() if (p / "src").is_dir())
    allow_file = pathlib.Path(__file__).with_name("public_interface.txt")
    allowed = set()
    if allow_file.exists():
        for line in allow_file.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(line)
    words = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    everything = {
        p: set(words.findall(strip_comments(p.read_text())))
        for base in (crates_dir, ROOT / "bench", ROOT / "fuzz", ROOT / "python")
        for p in rust_files(base)
    }
    reported = 0
    unused = 0
    for crate in wanted:
        src = crates_dir / crate / "src"
        own = crates_dir / crate
        lines = []
        for name, kind, path, number in public_items(src):
            if f"{crate}::{name}" in allowed:
                continue
            users = [p for p, names in everything.items() if not p.is_relative_to(src) and name in names]
            if any(not p.is_relative_to(own) for p in users):
                continue
            verdict = "own tests" if users else "unused"
            lines.append(f"  {verdict:9} {kind:6} {name}  ({path}:{number})")
            unused += verdict == "unused"
        if lines:
            print(f"{crate}: {len(lines)} public item(s) no other crate uses")
            print("\n".join(lines))
            reported += len(lines)
    if unused:
        print(f"\n{unused} unused item(s): make them pub(crate) (or private), or list a "
              f"deliberate interface item in {allow_file.relative_to(ROOT)} with the reason.")
    return 1 if unused else 0


if __name__ == "__main__":
    sys.exit(main())
