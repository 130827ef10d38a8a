//! Lowering: the tracing interpreter that turns a program and its data into a graph.

pub mod builtins;
pub mod complex;
pub mod complex_linalg;
pub mod constraints;
pub mod containers;
pub mod dae;
pub mod dist2;
pub mod exec;
pub mod fn_graph;
pub mod glm;
pub mod gp;
pub mod hof;
pub mod integrate;
pub mod linalg;
pub mod multivariate;
pub mod nary;
pub mod ode;
pub mod params;
pub mod solve;
pub mod sparse;
pub mod support;
pub mod trace;
pub mod value;
pub mod vectorize;
