//! The fault probes of issue 11, each run through the `hazel` binary: every one gets a clear
//! error or Stan's behaviour, never a crash, a silent wrong answer or a confusing message.

mod common;
use common::*;

use hazel_output::read_stan_csv;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Writes `source` as `<dir>/<name>.stan` and returns its path.
fn program(dir: &Path, name: &str, source: &str) -> String {
    let path = dir.join(format!("{name}.stan"));
    std::fs::write(&path, source).expect("write program");
    path.to_string_lossy().into_owned()
}

/// Writes `json` as `<dir>/<name>.json` and returns its path.
fn json(dir: &Path, name: &str, json: &str) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, json).expect("write json");
    path.to_string_lossy().into_owned()
}

/// `hazel sample` on `model`, one chain into `dir/out`, plus `extra` options (seed 7 unless
/// they give one).
fn sample(dir: &Path, model: &str, extra: &[&str]) -> Output {
    let out = dir.join("out");
    let mut args = vec![
        "sample",
        model,
        "--output-dir",
        out.to_str().unwrap(),
        "--chains",
        "1",
    ];
    if !extra.contains(&"--seed") {
        args.extend_from_slice(&["--seed", "7"]);
    }
    args.extend_from_slice(extra);
    hazel(&args)
}

/// Fails with the output shown unless the run exited with status 1 (a clean error, not a
/// crash: a stack overflow aborts with 134, a panic exits with 101).
fn assert_clean_error(output: &Output) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    stderr
}

fn chain_file(dir: &Path, model: &str) -> PathBuf {
    dir.join("out").join(format!("{model}-1.csv"))
}

#[test]
fn a_program_without_parameters_runs_the_fixed_param_sampler() {
    let dir = scratch_dir("fixed-param");
    let model = program(
        &dir,
        "sim",
        "data { int N; }\n\
         generated quantities { real y = normal_rng(0, 1); int n = N; }\n",
    );
    let data = json(&dir, "sim", r#"{"N": 3}"#);
    let output = sample(
        &dir,
        &model,
        &["--data", &data, "--warmup", "10", "--draws", "5"],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("Model contains no parameters; running fixed_param sampler"),
        "{stderr}"
    );
    let path = chain_file(&dir, "sim");
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(file.contains("\n#     algorithm = fixed_param\n"), "{file}");
    assert!(!file.contains("Adaptation terminated"), "{file}");
    assert!(!file.contains("engine = nuts"), "{file}");
    let csv = read_stan_csv(&path).unwrap();
    assert_eq!(csv.column_names, ["lp__", "accept_stat__", "y", "n"]);
    // No warmup: exactly the requested draws, with CmdStan's zero statistics.
    assert_eq!(csv.draws.len(), 5);
    for row in &csv.draws {
        assert_eq!((row[0], row[1], row[3]), (0.0, 0.0, 3.0));
    }
    // Generated quantities are drawn afresh at every iteration.
    assert_ne!(csv.draws[0][2], csv.draws[1][2]);
    // The summary reads the two-statistic layout.
    assert!(
        text(&output.stdout).contains("\ny "),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn fixed_param_can_be_asked_for_and_keeps_the_parameters_at_their_initial_values() {
    let dir = scratch_dir("fixed-param-asked");
    let model = program(
        &dir,
        "m",
        "parameters { real mu; } model { mu ~ normal(0, 1); }\n\
         generated quantities { real z = normal_rng(mu, 1); }\n",
    );
    let inits = json(&dir, "inits", r#"{"mu": 1.5}"#);
    let output = sample(
        &dir,
        &model,
        &[
            "--algorithm",
            "fixed_param",
            "--init",
            &inits,
            "--draws",
            "4",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let csv = read_stan_csv(&chain_file(&dir, "m")).unwrap();
    assert_eq!(csv.column_names, ["lp__", "accept_stat__", "mu", "z"]);
    assert_eq!(csv.draws.len(), 4);
    assert!(csv.draws.iter().all(|row| row[2] == 1.5));
}

const RECURSIVE: &str = "functions {\n\
  real depth(int n) { if (n <= 0) return 0; return 1 + depth(n - 1); }\n\
}\n\
data { int D; }\n\
transformed data { real d = depth(D); }\n\
parameters { real x; }\n\
model { x ~ normal(d, 1); }\n";

#[test]
fn deep_user_function_recursion_works() {
    let dir = scratch_dir("recursion-3000");
    let model = program(&dir, "rec", RECURSIVE);
    let data = json(&dir, "rec", r#"{"D": 3000}"#);
    let output = sample(
        &dir,
        &model,
        &["--data", &data, "--warmup", "20", "--draws", "5"],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
}

#[test]
fn runaway_recursion_stops_with_an_error_naming_the_function() {
    let dir = scratch_dir("recursion-1e6");
    let model = program(&dir, "rec", RECURSIVE);
    let data = json(&dir, "rec", r#"{"D": 1000000}"#);
    let stderr = assert_clean_error(&sample(&dir, &model, &["--data", &data]));
    assert!(
        stderr.contains("user function 'depth' recursed more than 100000 calls deep"),
        "{stderr}"
    );
}

/// `target += t + t + … + t` with `n` terms of `-5e-6 * square(x)`, i.e. `−n·5e-6·x²`.
fn flat_sum_program(n: usize) -> String {
    let terms = vec!["-5e-6 * square(x)"; n].join(" + ");
    format!("parameters {{ real x; }}\nmodel {{\n  target += {terms};\n}}\n")
}

#[test]
fn a_flat_sum_of_100000_terms_is_not_nesting() {
    let dir = scratch_dir("flat-sum");
    let model = program(&dir, "sum", &flat_sum_program(100_000));
    let check = hazel(&["check", &model]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    let format = hazel(&["format", &model]);
    assert!(format.status.success(), "{}", text(&format.stderr));
    // The whole pipeline: its log density is −0.5·x² (a standard normal).
    let points = json(&dir, "points", "[[2.0]]");
    let density = hazel(&["log-density", &model, "--points", &points]);
    let stdout = text(&density.stdout);
    assert!(density.status.success(), "{}", text(&density.stderr));
    let value: serde_json::Value = serde_json::from_str(&stdout).expect("json output");
    let lp = value.to_string();
    assert!(
        lp.contains("-2.0000000000") || lp.contains("-1.9999999999"),
        "{stdout}"
    );
    // Random inits: Pathfinder's few thousand evaluations of this deliberately slow density
    // (the default inits) would only lengthen the test.
    let run = sample(
        &dir,
        &model,
        &["--warmup", "20", "--draws", "5", "--init", "2", "--quiet"],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
}

#[test]
fn an_operator_chain_beyond_250000_operators_is_a_clear_error() {
    let dir = scratch_dir("chain-limit");
    let terms = vec!["x"; 250_002].join("+");
    let model = program(
        &dir,
        "long",
        &format!("parameters {{ real x; }}\nmodel {{ target += {terms}; }}\n"),
    );
    let stderr = assert_clean_error(&hazel(&["check", &model]));
    assert!(
        stderr.contains("expression is too long (more than 250000 operators in a row)"),
        "{stderr}"
    );
    // The snippet shows a window of the 500,000-character line, not all of it.
    assert!(stderr.len() < 2_000, "{}", stderr.len());
}

#[test]
fn real_nesting_keeps_its_limit_with_a_clear_error() {
    let dir = scratch_dir("deep-parens");
    let nested = format!("{}x{}", "(".repeat(300), ")".repeat(300));
    let model = program(
        &dir,
        "deep",
        &format!("parameters {{ real x; }}\nmodel {{ target += {nested}; }}\n"),
    );
    let output = hazel(&["check", &model]);
    let stderr = assert_clean_error(&output);
    assert!(stderr.contains("nested too deeply"), "{stderr}");
}

const NORMAL: &str = "parameters { real mu; real<lower=0> sigma; }\n\
model { mu ~ normal(0, 1); sigma ~ normal(0, 1); }\n\
generated quantities { real twice = 2 * mu; }\n";

#[test]
fn numeric_arguments_are_range_checked() {
    let dir = scratch_dir("numeric-args");
    let model = program(&dir, "m", NORMAL);
    for (args, expected) in [
        (&["--warmup", "18446744073709551615"][..], "--warmup"),
        (&["--draws", "3000000000"][..], "--draws"),
        (&["--seed", "4294967296"][..], "from 0 to 4294967295"),
        (&["--seed", "-2"][..], "from 0 to 4294967295"),
        (&["--adapt-delta", "1"][..], "strictly between 0 and 1"),
        (&["--adapt-delta", "NaN"][..], "strictly between 0 and 1"),
        (&["--max-depth", "0"][..], "between 1 and 62"),
        (&["--max-depth", "-3"][..], "between 1 and 62"),
        (&["--max-depth", "100"][..], "between 1 and 62"),
        (&["--warmup", "-1"][..], "--warmup"),
        (&["--threads", "-1"][..], "one per core"),
        (&["--thin", "0"][..], "--thin"),
        (&["--chains", "0"][..], "--chains"),
        (&["--init", "-1"][..], "--init"),
    ] {
        let output = sample(&dir, &model, args);
        let stderr = text(&output.stderr);
        assert!(!output.status.success(), "{args:?} was accepted: {stderr}");
        assert_ne!(
            output.status.code(),
            Some(101),
            "{args:?} panicked: {stderr}"
        );
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn seed_minus_one_is_a_seed_from_the_clock() {
    let dir = scratch_dir("seed-minus-one");
    let model = program(&dir, "m", NORMAL);
    let output = sample(
        &dir,
        &model,
        &["--warmup", "20", "--draws", "5", "--seed", "-1"],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("pass --seed"), "{stderr}");
}

#[test]
fn zero_draws_says_so() {
    let dir = scratch_dir("zero-draws");
    let model = program(&dir, "m", NORMAL);
    let output = sample(&dir, &model, &["--warmup", "20", "--draws", "0"]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("--draws 0"), "{stderr}");
}

#[test]
fn a_misspelt_name_in_an_init_file_is_an_error() {
    let dir = scratch_dir("init-typo");
    let model = program(&dir, "m", NORMAL);
    let inits = json(&dir, "inits", r#"{"mu": 0.5, "sigmaa": 1}"#);
    let stderr = assert_clean_error(&sample(&dir, &model, &["--init", &inits]));
    assert!(
        stderr.contains("`sigmaa` is not a parameter of the model (did you mean `sigma`?)"),
        "{stderr}"
    );
    let far = json(&dir, "far", r#"{"completely_else": 1}"#);
    let stderr = assert_clean_error(&sample(&dir, &model, &["--init", &far]));
    assert!(stderr.contains("its parameters: mu, sigma"), "{stderr}");
    // A previous run's other outputs (transformed parameters, generated quantities, `lp__`)
    // are not parameters but belong to the model: ignored.
    let previous = json(
        &dir,
        "previous",
        r#"{"mu": 0.5, "sigma": 1, "twice": 1, "lp__": -3}"#,
    );
    let output = sample(
        &dir,
        &model,
        &["--init", &previous, "--warmup", "20", "--draws", "5"],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
}

#[test]
fn a_runtime_error_names_the_model_line() {
    let dir = scratch_dir("runtime-line");
    let model = program(
        &dir,
        "rt",
        "parameters { real mu; }\n\
         model {\n\
         \x20 mu ~ normal(0, 1);\n\
         \x20 target += normal_lpdf(mu | 0, -1);\n\
         }\n",
    );
    let stderr = assert_clean_error(&sample(&dir, &model, &[]));
    assert!(stderr.contains("Scale parameter is -1"), "{stderr}");
    assert!(stderr.contains("line 4"), "{stderr}");
}

#[test]
fn a_rejected_proposal_has_one_prefix_and_its_line() {
    let dir = scratch_dir("rejected-prefix");
    let model = program(
        &dir,
        "rej",
        "parameters { real x; }\n\
         model {\n\
         \x20 if (x > 1) target += normal_lpdf(x | 0, -1);\n\
         \x20 x ~ normal(0, 1);\n\
         }\n",
    );
    let output = sample(&dir, &model, &["--warmup", "100", "--draws", "20"]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let rejections: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("rejected proposal"))
        .collect();
    assert!(!rejections.is_empty(), "{stderr}");
    for line in rejections {
        assert_eq!(line.matches("rejected proposal").count(), 1, "{line}");
        assert!(line.contains("line 3"), "{line}");
    }
}

#[test]
fn the_init_failure_counts_agree_with_the_message() {
    let dir = scratch_dir("init-counts");
    let model = program(
        &dir,
        "nan",
        "parameters { real x; }\nmodel { target += log(-1 - x * x); }\n",
    );
    let stderr = assert_clean_error(&sample(&dir, &model, &[]));
    assert!(
        stderr.contains("initialization failed after 100 attempts: log density is NaN"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(0 rejected by the model, 100 with a non-finite log density, 0 with a non-finite gradient)"),
        "{stderr}"
    );
    let rejecting = program(
        &dir,
        "reject",
        "parameters { real x; }\nmodel { reject(\"never\"); }\n",
    );
    let stderr = assert_clean_error(&sample(&dir, &rejecting, &[]));
    assert!(
        stderr.contains("the model rejected the point: never"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(100 rejected by the model, 0 with"),
        "{stderr}"
    );
}

#[test]
fn bounds_in_the_wrong_order_are_stans_error() {
    let dir = scratch_dir("bound-order");
    let cases = [
        (
            "param",
            "parameters {\n  real<lower=1, upper=0> x;\n}\nmodel { }\n",
            "`x`: the lower bound 1 must be less than the upper bound 0",
        ),
        (
            "data",
            "data {\n  real<lower=1, upper=0> y;\n}\nparameters { real x; }\nmodel { x ~ normal(0, 1); }\n",
            "`y`: the lower bound 1 must be less than or equal to the upper bound 0",
        ),
        (
            "tp",
            "parameters { real x; }\ntransformed parameters {\n  real<lower=2, upper=1> t = 1.5;\n}\nmodel { x ~ normal(0, 1); }\n",
            "`t`: the lower bound 2 must be less than or equal to the upper bound 1",
        ),
    ];
    let data = json(&dir, "y", r#"{"y": 0.5}"#);
    for (name, source, expected) in cases {
        let model = program(&dir, name, source);
        let stderr = assert_clean_error(&sample(&dir, &model, &["--data", &data]));
        assert!(stderr.contains(expected), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("{name}.stan:")),
            "{name}: {stderr}"
        );
        assert!(!stderr.contains("NaN"), "{name}: {stderr}");
    }
}
