use hazel_density::LogDensity;
#[test]
fn dbg() {
    let src = std::env::var("SRC").unwrap();
    let data = std::env::var("DATA").unwrap();
    let q: Vec<f64> = std::env::var("Q").unwrap().split(',').map(|s| s.parse().unwrap()).collect();
    let parsed = hazel_syntax::parse_str("m", &std::fs::read_to_string(src).unwrap());
    let prog = parsed.program.unwrap();
    let d = hazel_data::DataFile::parse(&std::fs::read_to_string(data).unwrap()).unwrap();
    let m = hazel_graph::compile(&prog, &d, &Default::default()).unwrap();
    let mut ws = m.new_workspace();
    let mut g = vec![0.0; q.len()];
    println!("lp = {:?} grad {:?} dynamic {}", m.log_density_gradient(&mut ws, &q, &mut g), g, m.is_dynamic());
}
#[test]
fn dbg2() {
    use hazel_graph::dists::*;
    for n in [1.0, 2.0, 3.0] {
        println!("n={n} {:?}", eval_const(DistKind::Binomial, &[&[n], &[3.0], &[0.5]], false));
    }
}
