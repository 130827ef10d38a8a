//! User initial values: constrained values written by `write_output` at a point `q`, given
//! back as CmdStan JSON, must unconstrain to `q` (Stan's inverse transforms).

use hazel_density::{LogDensity, Model, StreamRng};
use hazel_graph::{compile, CompileOptions};

const PROGRAM: &str = r#"
data { int K; }
parameters {
  real<lower=0> sigma;
  real<lower=-1, upper=3> rho;
  vector<offset=2, multiplier=3>[2] z;
  simplex[K] theta;
  ordered[3] cuts;
  array[2] positive_ordered[2] po;
  cholesky_factor_corr[3] L;
  matrix<lower=0>[2, 3] M;
}
model { }
"#;

/// Nested JSON (row-major nesting) of a variable whose values are in CSV order (first index
/// fastest).
fn nested(dims: &[usize], flat: &[f64], offset: usize, stride: usize) -> String {
    if dims.is_empty() {
        return format!("{:.17e}", flat[offset]);
    }
    let items: Vec<String> = (0..dims[0])
        .map(|i| nested(&dims[1..], flat, offset + i * stride, stride * dims[0]))
        .collect();
    format!("[{}]", items.join(","))
}

#[test]
fn written_values_unconstrain_to_the_same_point() {
    let parsed = hazel_check::check_source("m.stan", PROGRAM);
    let program = parsed.checked.expect("parses");
    let data = hazel_data::DataFile::parse(r#"{"K": 4}"#).expect("data");
    let model = compile(&program, &data, &CompileOptions::default()).expect("compiles");
    let dim = model.dim();
    assert_eq!(dim, 1 + 1 + 2 + 3 + 3 + 4 + 3 + 6);
    let q: Vec<f64> = (0..dim)
        .map(|i| ((i * 29) % 17) as f64 / 17.0 - 0.4)
        .collect();
    let names = model.output_names();
    let mut out = vec![0.0; names.len()];
    let mut ws = model.new_workspace();
    let mut rng = StreamRng::new(1, 0, hazel_rng::Purpose::GeneratedQuantities);
    model
        .write_output(&mut ws, &q, &mut rng, &mut out)
        .expect("writes");
    // Group columns by variable and rebuild JSON.
    let vars: [(&str, Vec<usize>); 8] = [
        ("sigma", vec![]),
        ("rho", vec![]),
        ("z", vec![2]),
        ("theta", vec![4]),
        ("cuts", vec![3]),
        ("po", vec![2, 2]),
        ("L", vec![3, 3]),
        ("M", vec![2, 3]),
    ];
    let mut pos = 0;
    let mut fields = Vec::new();
    for (name, dims) in &vars {
        let n: usize = dims.iter().product();
        fields.push(format!(
            "\"{name}\": {}",
            nested(dims, &out[pos..pos + n], 0, 1)
        ));
        pos += n;
    }
    assert_eq!(pos, out.len());
    let json = format!("{{{}}}", fields.join(","));
    let inits = hazel_data::DataFile::parse(&json).expect("inits parse");
    let back = model
        .unconstrain_inits(&inits, || 0.0)
        .expect("unconstrains");
    for (i, (a, b)) in back.iter().zip(&q).enumerate() {
        assert!((a - b).abs() < 1e-9, "coordinate {i}: {a} vs {b}");
    }
    // Missing parameters are filled.
    let partial = hazel_data::DataFile::parse(r#"{"sigma": 2.0}"#).expect("parse");
    let q2 = model
        .unconstrain_inits(&partial, || 0.25)
        .expect("unconstrains");
    assert!((q2[0] - 2.0f64.ln()).abs() < 1e-15);
    assert!(q2[1..].iter().all(|&v| v == 0.25));
}
