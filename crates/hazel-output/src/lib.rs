//! Stan CSV: writer (CmdStan layout, flushed per draw) and reader.
