//! Syntax tree to checked program: scopes, block rules, types, the built-in signature table.
