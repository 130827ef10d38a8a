//! CmdStan JSON data: parsing and validation against a program's data block.
