//! A sampling job through `hazel_run`: the draws do not depend on the outputs chosen (memory
//! only, CSV files and memory, Parquet), the memory sink holds exactly the bits the CSV holds,
//! a model without parameters runs fixed_param with CmdStan's message, and an interrupted job
//! resumed from its checkpoints writes the uninterrupted job's files and returns its draws.

use hazel_density::{IndependentNormal, Unconstrained};
use hazel_draws::{ChainDraws, NoProgress, Progress};
use hazel_nuts::{Algorithm, ChainError, CheckpointPolicy, RunConfig};
use hazel_output::{read_stan_csv, FileOutput, Format, HeaderNotes, MemoryOutput, OutputConfig};
use hazel_run::{sample, SampleJob, NO_PARAMETERS};
use std::path::{Path, PathBuf};

/// `dim` independent normals with means 0, 1, 2, …
fn normals(dim: usize) -> IndependentNormal {
    IndependentNormal::unit((0..dim).map(|i| i as f64).collect())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hazel-run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn run_config() -> RunConfig {
    let mut config = RunConfig {
        seed: 31,
        chains: 2,
        threads: 2,
        ..RunConfig::default()
    };
    config.sampler.num_warmup = 120;
    config.sampler.num_samples = 80;
    config
}

fn files(dir: &Path, format: Format) -> Option<FileOutput> {
    Some(FileOutput {
        format,
        dir: dir.to_path_buf(),
        model: "normals".to_string(),
        data_file: String::new(),
        header: HeaderNotes::default(),
        naming: Default::default(),
    })
}

fn memory() -> Option<MemoryOutput> {
    Some(MemoryOutput::default())
}

fn bits(chain: &ChainDraws) -> Vec<Vec<u64>> {
    let table = &chain.sampling;
    table
        .stats
        .iter()
        .chain(&table.values)
        .map(|column| column.iter().map(|v| v.to_bits()).collect())
        .collect()
}

/// The CSV without its timing lines (the only wall-clock-dependent content) and its own path.
fn without_timing(path: &Path) -> String {
    std::fs::read_to_string(path)
        .expect("csv")
        .lines()
        .filter(|l| !l.contains("seconds") && !l.starts_with("#   file = /"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_outputs_chosen_never_change_the_draws() {
    let model = Unconstrained::new(normals(3), "x");
    let dir = scratch("outputs");
    let job = |files| SampleJob {
        run: run_config(),
        output: OutputConfig {
            files,
            memory: memory(),
        },
        resume: false,
    };
    let in_memory = sample(&model, job(None), &NoProgress).expect("memory only");
    assert!(in_memory.report.all_ok());
    assert!(in_memory.paths.is_empty());
    let with_csv = sample(&model, job(files(&dir, Format::Csv)), &NoProgress).expect("csv");
    assert_eq!(with_csv.paths.len(), 2);
    for (k, path) in with_csv.paths.iter().enumerate() {
        let memory = &with_csv.draws[k];
        assert_eq!(bits(memory), bits(&in_memory.draws[k]), "chain {k}");
        // The memory sink holds the CSV's draws bit for bit, and its adaptation.
        let csv = read_stan_csv(path).expect("read");
        let from_file = csv.to_chain_draws();
        assert_eq!(bits(&from_file), bits(memory));
        assert_eq!(from_file.names, memory.names);
        assert_eq!(from_file.stepsize, memory.stepsize);
        assert_eq!(from_file.inv_metric, memory.inv_metric);
        assert_eq!(memory.chain_id, k as u64 + 1);
        assert_eq!(memory.sampling.len(), 80);
        assert!(memory.timing.is_some());
    }
    // The draws estimate the means 0, 1, 2 (sd 1; 160 draws: 5 standard errors is ~0.4 even
    // at an ESS of 160, and NUTS on independent normals does better).
    for (j, name) in in_memory.draws[0].names.iter().enumerate() {
        let all: Vec<f64> = in_memory
            .draws
            .iter()
            .flat_map(|c| c.sampling.values[j].iter().copied())
            .collect();
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        assert!((mean - j as f64).abs() < 0.4, "{name}: mean {mean}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_model_without_parameters_runs_fixed_param() {
    let model = Unconstrained::new(normals(0), "x");
    let outcome = sample(
        &model,
        SampleJob {
            run: run_config(),
            output: OutputConfig {
                files: None,
                memory: memory(),
            },
            resume: false,
        },
        &NoProgress,
    )
    .expect("run");
    assert_eq!(outcome.config.sampler.algorithm, Algorithm::FixedParam);
    assert_eq!(outcome.config.sampler.num_warmup, 0);
    let chain = &outcome.draws[0];
    let names: Vec<&str> = chain.stat_columns.iter().map(|c| &*c.name).collect();
    assert_eq!(names, ["lp__", "accept_stat__"]);
    assert_eq!(chain.sampling.len(), 80);
    assert_eq!(chain.stepsize, None, "fixed_param reports no adaptation");
    // The note is CmdStan's wording.
    let model = Unconstrained::new(normals(0), "x");
    let prepared = hazel_run::Sampling::prepare(
        &model,
        SampleJob {
            run: run_config(),
            output: OutputConfig::default(),
            resume: false,
        },
    )
    .expect("prepare");
    assert_eq!(prepared.notes(), [NO_PARAMETERS]);
}

/// Panics (as a crash would stop the chain) when chain 0 completes `at` iterations.
struct CrashAt {
    at: usize,
}

impl Progress for CrashAt {
    fn iteration(&self, chain: usize, iteration: usize, _: bool, _: usize) {
        if chain == 0 && iteration == self.at {
            panic!("simulated crash");
        }
    }
}

#[test]
fn an_interrupted_job_resumes_to_the_uninterrupted_files_and_draws() {
    let model = Unconstrained::new(normals(3), "x");
    let mut config = run_config();
    config.sampler.save_warmup = true;
    config.sampler.thin = 3;
    config.checkpoint = CheckpointPolicy {
        every_iterations: 25,
        every: None,
    };
    let job = |dir: &Path, resume| SampleJob {
        run: config.clone(),
        output: OutputConfig {
            files: files(dir, Format::Csv),
            memory: memory(),
        },
        resume,
    };
    let whole_dir = scratch("whole");
    let whole = sample(&model, job(&whole_dir, false), &NoProgress).expect("whole");
    let cut_dir = scratch("cut");
    // Chain 0 stops in sampling after iteration 160 (checkpointed at 150); chain 1 finishes.
    let cut = sample(&model, job(&cut_dir, false), &CrashAt { at: 160 }).expect("cut");
    assert!(matches!(
        cut.report.chains[0].error,
        Some(ChainError::Panicked(_))
    ));
    assert!(cut.report.chains[1].error.is_none());
    let resumed = sample(&model, job(&cut_dir, true), &NoProgress).expect("resumed");
    assert!(resumed.report.all_ok(), "{:?}", resumed.report.chains);
    for k in 0..2 {
        assert_eq!(
            without_timing(&resumed.paths[k]),
            without_timing(&whole.paths[k]),
            "chain {k}: the resumed file is the uninterrupted one"
        );
        // The resumed chain's draws in memory: those read back from its file, then the rest;
        // the finished chain's: all read back.
        assert_eq!(bits(&resumed.draws[k]), bits(&whole.draws[k]), "chain {k}");
    }
    let _ = std::fs::remove_dir_all(&whole_dir);
    let _ = std::fs::remove_dir_all(&cut_dir);
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_output_holds_the_same_draws() {
    let model = Unconstrained::new(normals(3), "x");
    let dir = scratch("parquet");
    let outcome = sample(
        &model,
        SampleJob {
            run: run_config(),
            output: OutputConfig {
                files: files(&dir, Format::Parquet),
                memory: memory(),
            },
            resume: false,
        },
        &NoProgress,
    )
    .expect("run");
    let read = hazel_output::read_draws(&outcome.paths).expect("read");
    for (file, memory) in read.iter().zip(&outcome.draws) {
        assert_eq!(bits(&file.to_chain_draws()), bits(memory));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
