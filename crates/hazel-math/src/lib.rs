//! Special functions and densities: each with a plain-value rule and a gradient rule beside it.
