//! Lowering: the tracing interpreter that turns a program and its data into a graph.

pub mod builtins;
pub mod complex;
pub mod complex_linalg;
pub mod constraints;
pub mod containers;
pub mod exec;
pub mod gp;
pub mod linalg;
pub mod multivariate;
pub mod ode;
pub mod params;
pub mod sparse;
pub mod support;
pub mod trace;
pub mod value;
pub mod vectorize;
