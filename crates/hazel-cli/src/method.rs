//! What `optimize`, `laplace`, `variational`, `pathfinder` and `generate-quantities` share:
//! the common options (program, data, seed, init, output directory), building the model,
//! finding initial points, turning unconstrained points into output rows (generated quantities
//! from the run's stream), reading points back from CSV or JSON, and the CSV header.

use crate::front::{check_program, compile_model, model_name, read_data};
use crate::sample::{clock_seed, parse_init, parse_seed, InitArg, Seed};
use clap::Args;
use hazel_density::{LogDensity, Model};
use hazel_graph::{CompileOptions, CompiledModel};
use hazel_nuts::init::initialize;
use hazel_nuts::Init;
use hazel_output::{MethodHeader, MethodSetting};
use hazel_rng::{Purpose, StreamRng};
use std::path::{Path, PathBuf};

/// The options every method takes.
#[derive(Args, Debug, Clone)]
pub struct MethodArgs {
    /// The Stan program.
    pub model: PathBuf,
    /// The data, as a CmdStan JSON file (omit for a program without data).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Seed of the run: 0 to 4294967295, or -1 (the default) for one from the clock.
    #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
    pub seed: Option<Seed>,
    /// Initial values: a radius R (uniform in (-R, R) on the unconstrained scale), or a CmdStan
    /// JSON file of constrained parameter values.
    #[arg(long, default_value = "2", allow_negative_numbers = true)]
    pub init: String,
    /// Directory for the output CSV (`<model>-<method>.csv`), created if needed.
    #[arg(long, default_value = ".")]
    pub output_dir: PathBuf,
    /// No progress messages.
    #[arg(long)]
    pub quiet: bool,
    /// Directories searched for `#include` files.
    #[arg(short = 'I', long = "include-path")]
    pub include_paths: Vec<PathBuf>,
}

/// A model ready for a method, with the run's seed and descriptions for the CSV.
pub struct Prepared {
    pub model: CompiledModel,
    pub name: String,
    pub seed: u64,
    pub data_file: String,
    init: InitArg,
    pub init_setting: String,
    pub output_dir: PathBuf,
    pub quiet: bool,
}

/// Checks and compiles the program with its data, fixes the seed, creates the output directory.
pub fn prepare(args: &MethodArgs) -> Result<Prepared, Box<dyn std::error::Error>> {
    let seed = match args.seed {
        Some(Seed::Given(seed)) => seed,
        Some(Seed::FromClock) | None => {
            let seed = clock_seed();
            if !args.quiet {
                eprintln!("seed = {seed} (pass --seed {seed} to repeat this run)");
            }
            seed
        }
    };
    let init = parse_init(&args.init)?;
    if init == InitArg::Pathfinder {
        return Err(
            "--init pathfinder is an option of `hazel sample`; give a radius or a JSON file".into(),
        );
    }
    let source = check_program(&args.model, &args.include_paths)?;
    let data = read_data(args.data.as_deref())?;
    let options = CompileOptions {
        seed,
        ..CompileOptions::default()
    };
    let model = compile_model(&source, &data, args.data.as_deref(), &options)?;
    std::fs::create_dir_all(&args.output_dir).map_err(|e| {
        format!(
            "cannot create output directory {}: {e}",
            args.output_dir.display()
        )
    })?;
    let init_setting = match &init {
        InitArg::Radius(r) => hazel_output::method_csv::format_real(*r),
        InitArg::File(path) => path.display().to_string(),
        InitArg::Pathfinder => "pathfinder".to_string(),
    };
    Ok(Prepared {
        name: model_name(&args.model),
        model,
        seed,
        data_file: args
            .data
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        init,
        init_setting,
        output_dir: args.output_dir.clone(),
        quiet: args.quiet,
    })
}

impl Prepared {
    /// The starting point of chain or path `id`: Stan's initialisation (up to 100 random
    /// attempts in the radius, from the `Init` stream of `id`), or the init file's values
    /// (parameters it leaves out drawn from the same stream).
    pub fn initial_point(&self, id: u64) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
        let init = match &self.init {
            InitArg::Radius(r) => Init::Radius(*r),
            InitArg::Pathfinder => Init::Radius(2.0),
            InitArg::File(path) => {
                let values = read_data(Some(path))?;
                let mut rng = StreamRng::new(self.seed, id, Purpose::Init);
                let q = self
                    .model
                    .unconstrain_inits(&values, || rng.uniform_range(-2.0, 2.0))
                    .map_err(|e| format!("--init {}: {}", path.display(), e.message))?;
                Init::Unconstrained(vec![q])
            }
        };
        let mut ws = self.model.new_workspace();
        let point = initialize(&self.model, &mut ws, &init, 100, self.seed, id, 0)
            .map_err(|e| format!("{e}"))?;
        Ok(point.position)
    }

    /// `<output-dir>/<model>-<method>[-<n>].csv`.
    pub fn output_path(&self, method: &str, n: Option<u64>) -> PathBuf {
        let file = match n {
            Some(n) => format!("{}-{method}-{n}.csv", self.name),
            None => format!("{}-{method}.csv", self.name),
        };
        self.output_dir.join(file)
    }

    /// The configuration block's description of this run.
    pub fn header(
        &self,
        method: &str,
        settings: Vec<MethodSetting>,
        id: u64,
        path: &Path,
    ) -> MethodHeader {
        MethodHeader {
            model: self.name.clone(),
            method: method.to_string(),
            settings,
            id,
            data_file: self.data_file.clone(),
            init: self.init_setting.clone(),
            seed: self.seed,
            output_file: path.display().to_string(),
        }
    }

    /// The model's output columns.
    pub fn names(&self) -> Vec<String> {
        self.model.output_names()
    }

    /// A writer of output rows whose generated quantities draw from the stream of `id`.
    pub fn rows(&self, id: u64) -> OutputRows<'_> {
        OutputRows {
            model: &self.model,
            ws: self.model.new_workspace(),
            rng: StreamRng::new(self.seed, id, Purpose::GeneratedQuantities),
            row: vec![0.0; self.model.output_names().len()],
            quiet: self.quiet,
        }
    }
}

/// Output rows (parameters, transformed parameters, generated quantities) of unconstrained
/// points, in order, generated quantities from one stream.
pub struct OutputRows<'m> {
    model: &'m CompiledModel,
    ws: <CompiledModel as LogDensity>::Workspace,
    rng: StreamRng,
    row: Vec<f64>,
    quiet: bool,
}

impl OutputRows<'_> {
    /// The row of `q`; a row the model cannot compute (a failed check in generated
    /// quantities) is NaN, with the message on stderr, as the sampler does.
    pub fn row(&mut self, q: &[f64]) -> &[f64] {
        if let Err(e) = self
            .model
            .write_output(&mut self.ws, q, &mut self.rng, &mut self.row)
        {
            if !self.quiet {
                eprintln!("warning: output row: {e}");
            }
            self.row.iter_mut().for_each(|v| *v = f64::NAN);
        }
        &self.row
    }
}

/// CSV column values by name (`theta.2.1`) to the model's unconstrained point: the values are
/// arranged as CmdStan JSON (each variable nested in row-major order, shapes from the column
/// names) and unconstrained like an init file. Columns ending in `__` and names that are not
/// parameters (transformed parameters, generated quantities) are ignored.
pub fn unconstrain_columns(
    model: &CompiledModel,
    names: &[String],
    values: &[f64],
) -> Result<Vec<f64>, String> {
    let mut json = String::from("{");
    let model_columns: Vec<(String, f64)> = names
        .iter()
        .zip(values)
        .filter(|(n, _)| !n.ends_with("__"))
        .map(|(n, v)| (n.clone(), *v))
        .collect();
    let column_names: Vec<String> = model_columns.iter().map(|(n, _)| n.clone()).collect();
    for (k, variable) in hazel_output::layout::variables(&column_names)
        .iter()
        .enumerate()
    {
        if k > 0 {
            json.push(',');
        }
        json.push_str(&format!("{:?}:", variable.name));
        nest(
            &mut json,
            &variable.shape,
            &variable.columns,
            &model_columns,
        );
    }
    json.push('}');
    let data = hazel_data::DataFile::parse(&json).map_err(|e| format!("{e}"))?;
    let mut missing = false;
    let q = model
        .unconstrain_inits(&data, || {
            missing = true;
            0.0
        })
        .map_err(|e| e.message)?;
    if missing {
        return Err("the file does not give every parameter of the model".to_string());
    }
    Ok(q)
}

/// Writes the values of `columns` (row-major over `shape`) as nested JSON arrays.
fn nest(json: &mut String, shape: &[u64], columns: &[usize], values: &[(String, f64)]) {
    let number = |json: &mut String, v: f64| {
        if v.is_finite() {
            json.push_str(&format!("{v:?}"));
        } else if v.is_nan() {
            json.push_str("\"NaN\"");
        } else if v > 0.0 {
            json.push_str("\"Inf\"");
        } else {
            json.push_str("\"-Inf\"");
        }
    };
    match shape.split_first() {
        None => number(json, values[columns[0]].1),
        Some((&n, rest)) => {
            let stride = columns.len() / (n as usize).max(1);
            json.push('[');
            for i in 0..n as usize {
                if i > 0 {
                    json.push(',');
                }
                nest(json, rest, &columns[i * stride..(i + 1) * stride], values);
            }
            json.push(']');
        }
    }
}

/// Writes `name = value` lines of a point (the optimize summary).
pub fn print_point(
    out: &mut dyn std::io::Write,
    names: &[&str],
    values: &[f64],
) -> std::io::Result<()> {
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    for (n, v) in names.iter().zip(values) {
        writeln!(out, "{n:>width$} = {v}")?;
    }
    Ok(())
}

/// A `--flag [true|false]` boolean (CmdStan's `jacobian=1`, `adapt engaged=0`).
pub fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        other => Err(format!("expected true or false (or 1 or 0), got {other:?}")),
    }
}
