//! Stan source to syntax tree: lexer, parser with error recovery, pretty-printer.
