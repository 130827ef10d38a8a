//! Output rows from the compiled output plan are bit-identical to the re-traced rows (the path
//! every row took before the plan): same values (NaN for NaN), same errors, and the
//! generated-quantities stream left at the same position, at many points, for programs that
//! exercise each plan kind (whole row static, generated quantities re-traced, no plan) and for
//! every posteriordb program of the corpus whose data are present.

use hazel_density::{LogDensity, Model, StreamRng};
use hazel_graph::{compile, CompileOptions, CompiledModel};
use hazel_rng::Purpose;

fn build(src: &str, data: &str) -> CompiledModel {
    let parsed = hazel_check::check_source("m.stan", src);
    let program = parsed
        .checked
        .as_ref()
        .unwrap_or_else(|| panic!("{}", parsed.render_diagnostics()));
    let data = hazel_data::DataFile::parse(data).expect("data");
    compile(program, &data, &CompileOptions::default()).expect("compile")
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// Compares the planned and the re-traced rows at `points` points (the origin, then uniform
/// in (-scale, scale)); returns how many points gave a row (not an error) on both paths.
fn compare(model: &CompiledModel, label: &str, points: usize, scale: f64) -> usize {
    let dim = model.dim();
    let cols = model.output_names().len();
    let mut ws = model.new_workspace();
    let mut point_rng = StreamRng::new(7, 0, Purpose::Init);
    let mut rows = 0;
    for k in 0..points {
        let q: Vec<f64> = (0..dim)
            .map(|_| {
                if k == 0 {
                    0.0
                } else {
                    point_rng.uniform_range(-scale, scale)
                }
            })
            .collect();
        // The same stream position on both paths, moved on between points.
        let mut rng_a = StreamRng::new(11, 3, Purpose::GeneratedQuantities);
        for _ in 0..k {
            rng_a.next_u64();
        }
        let mut rng_b = rng_a.clone();
        let mut planned = vec![0.0; cols];
        let mut traced = vec![0.0; cols];
        let a = model.write_output(&mut ws, &q, &mut rng_a, &mut planned);
        let b = model.write_output_retraced(&q, &mut rng_b, &mut traced);
        match (&a, &b) {
            (Ok(()), Ok(())) => {
                rows += 1;
                assert!(
                    same(&planned, &traced),
                    "{label}: rows differ at point {k}\n planned {planned:?}\n traced  {traced:?}"
                );
            }
            (Err(ea), Err(eb)) => assert_eq!(
                ea.is_fatal(),
                eb.is_fatal(),
                "{label}: errors differ at point {k}: {ea} / {eb}"
            ),
            _ => panic!("{label}: one path failed at point {k}: {a:?} / {b:?}"),
        }
        assert_eq!(
            rng_a.position(),
            rng_b.position(),
            "{label}: stream positions differ at point {k}"
        );
        assert_eq!(
            rng_a.next_u64(),
            rng_b.next_u64(),
            "{label}: streams differ"
        );
    }
    rows
}

const REGRESSION_DATA: &str = r#"{"N": 6, "K": 2, "x": [[1, 0.5], [1, -0.3], [1, 2.0], [1, 0.1], [1, -1.5], [1, 0.7]],
  "y": [1.2, 0.4, 3.1, 0.9, -1.0, 1.5], "c": [0, 1, 3, 0, 2, 5]}"#;

/// (label, program, the plan `output_plan_split` must report).
const PROGRAMS: &[(&str, &str, Option<bool>)] = &[
    (
        "static: transformed parameters and generated quantities without rngs",
        r#"
data { int N; int K; matrix[N, K] x; vector[N] y; }
parameters { vector[K] beta; real<lower=0> sigma; real<lower=-1, upper=2> rho; }
transformed parameters {
  vector[N] mu = x * beta;
  real<lower=0> s2 = square(sigma);
  real total = sum(mu) + log_sum_exp(mu) + dot_self(beta);
}
model { y ~ normal(mu, sigma); beta ~ normal(0, 2); sigma ~ exponential(1); }
generated quantities {
  vector[N] resid = y - mu;
  real ll = normal_lpdf(y | mu, sigma);
  array[N] real lls;
  for (n in 1:N) lls[n] = normal_lpdf(y[n] | mu[n], sigma);
  matrix[K, K] outer = beta * beta';
  int n_obs = N;
  real m = mean(resid) + sd(resid) + variance(resid);
}
"#,
        Some(false),
    ),
    (
        "split: rngs in generated quantities",
        r#"
data { int N; int K; matrix[N, K] x; vector[N] y; array[N] int c; }
parameters { vector[K] beta; real<lower=0> sigma; }
transformed parameters { vector[N] mu = x * beta; }
model { y ~ normal(mu, sigma); }
generated quantities {
  array[N] real y_rep = normal_rng(mu, sigma);
  array[N] int c_rep = poisson_log_rng(mu * 0.1);
  real z = normal_rng(0, 1);
  vector[K] b2 = multi_normal_rng(beta, diag_matrix(rep_vector(sigma, K)));
  int cat = categorical_rng(softmax(beta));
  real after = sum(y_rep) + z;
}
"#,
        Some(true),
    ),
    (
        "split: a branch on a parameter in generated quantities",
        r#"
data { int N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
model { y ~ normal(mu, sigma); }
generated quantities {
  real pos;
  int above = 0;
  if (mu > 0) pos = mu; else pos = -mu;
  for (n in 1:N) if (y[n] > mu) above += 1;
}
"#,
        Some(true),
    ),
    (
        "no plan: print in transformed parameters",
        r#"
data { int N; vector[N] y; }
parameters { real mu; }
transformed parameters { real m2 = 2 * mu; print("m2 = ", m2); }
model { y ~ normal(m2, 1); }
"#,
        None,
    ),
    (
        "no plan: transformed parameters branching on a parameter",
        r#"
data { int N; vector[N] y; }
parameters { real mu; }
transformed parameters { real a; if (mu > 0) a = mu; else a = 0; }
model { y ~ normal(mu, 1); }
generated quantities { real b = normal_rng(a, 1); }
"#,
        None,
    ),
    (
        "static: constrained parameter types",
        r#"
data { int N; }
parameters {
  simplex[3] theta;
  ordered[3] o;
  positive_ordered[2] po;
  cholesky_factor_corr[3] L;
  cov_matrix[2] S;
  corr_matrix[2] R;
  unit_vector[3] u;
  sum_to_zero_vector[4] z;
  real<offset=1, multiplier=2> a;
  vector<lower=-1, upper=[1, 2, 3]'>[3] b;
  cholesky_factor_cov[3, 2] Lc;
}
transformed parameters {
  matrix[3, 3] Omega = multiply_lower_tri_self_transpose(L);
  real ld = log_determinant(S);
}
model { }
generated quantities {
  vector[3] lt = log(theta);
  real sq = squared_distance(o, theta);
  complex zc = to_complex(a, b[1]);
  tuple(real, vector[2]) tp = (ld, po);
}
"#,
        Some(false),
    ),
    (
        "static: bounds on transformed parameters that fail at some points",
        r#"
data { int N; vector[N] y; }
parameters { real mu; }
transformed parameters { real<lower=0> m = mu + 0.5; }
model { y ~ normal(mu, 1); }
generated quantities { real<upper=1> g = mu; }
"#,
        Some(false),
    ),
];

#[test]
fn planned_rows_equal_retraced_rows() {
    for (label, src, expect) in PROGRAMS {
        let model = build(src, REGRESSION_DATA);
        assert_eq!(
            model.output_plan_split(),
            *expect,
            "{label}: output plan kind"
        );
        let rows = compare(&model, label, 40, 2.5);
        assert!(rows >= 10, "{label}: only {rows} points gave a row");
    }
}

/// The hierarchical regression of issue 14 (radon, non-centred intercepts and slopes): every
/// row comes from the graph.
#[test]
fn radon_rows_are_static() {
    let root = hazel_testdata::repo_root();
    let src =
        std::fs::read_to_string(root.join(
            "corpus/posteriordb/radon_mn-radon_variable_intercept_slope_noncentered/model.stan",
        ))
        .expect("radon program");
    let (j, n) = (85usize, 900usize);
    let county: Vec<String> = (0..n).map(|i| (i % j + 1).to_string()).collect();
    let floor: Vec<String> = (0..n).map(|i| ((i % 5 == 0) as u8).to_string()).collect();
    let y: Vec<String> = (0..n)
        .map(|i| format!("{}", ((i * 37) % 101) as f64 / 50.0 - 1.0))
        .collect();
    let data = format!(
        r#"{{"J": {j}, "N": {n}, "county_idx": [{}], "floor_measure": [{}], "log_radon": [{}]}}"#,
        county.join(","),
        floor.join(","),
        y.join(",")
    );
    let model = build(&src, &data);
    assert_eq!(model.output_plan_split(), Some(false));
    assert_eq!(compare(&model, "radon", 20, 2.0), 20);
}

/// Every posteriordb program of the corpus with its data: planned rows equal re-traced rows.
#[test]
fn corpus_rows_equal_retraced_rows() {
    let Some(pdb) = hazel_testdata::posteriordb() else {
        hazel_testdata::skip("corpus_rows_equal_retraced_rows");
        return;
    };
    let corpus = hazel_testdata::repo_root().join("corpus/posteriordb");
    let mut names: Vec<String> = std::fs::read_dir(&corpus)
        .expect("corpus")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("model.stan").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let (mut checked, mut planned, mut split) = (0, 0, 0);
    for name in &names {
        let data_path = pdb.join(name).join("data.json");
        let Ok(data) = std::fs::read_to_string(&data_path) else {
            continue;
        };
        let src = std::fs::read_to_string(corpus.join(name).join("model.stan")).expect("program");
        let parsed = hazel_check::check_source("model.stan", &src);
        let Some(program) = parsed.checked.as_ref() else {
            continue;
        };
        let Ok(data) = hazel_data::DataFile::parse(&data) else {
            continue;
        };
        let Ok(model) = compile(program, &data, &CompileOptions::default()) else {
            continue;
        };
        checked += 1;
        match model.output_plan_split() {
            Some(false) => planned += 1,
            Some(true) => split += 1,
            None => {}
        }
        compare(&model, name, 4, 1.0);
    }
    eprintln!("{checked} corpus programs: {planned} static rows, {split} split, rest re-traced");
    assert!(checked >= 100, "only {checked} corpus programs compiled");
    assert!(
        planned + split >= checked * 3 / 4,
        "only {planned} + {split} of {checked} programs have an output plan"
    );
}
