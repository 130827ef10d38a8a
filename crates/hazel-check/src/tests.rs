//! Unit tests of the checker: valid programs per rule (must check clean) and the side tables.

use hazel_syntax::ast::*;

use crate::checked::{CallTarget, Origin};
use crate::types::{parse_type, Type};
use crate::{check_source, CheckResult};
use hazel_syntax::visit::{walk_program, Visitor};

fn ok(text: &str) -> CheckResult {
    let r = check_source("test.stan", text);
    assert!(
        !r.has_errors() && r.checked.is_some(),
        "expected no errors, got:\n{}",
        r.render_diagnostics()
    );
    r
}

fn err(text: &str) -> String {
    let r = check_source("test.stan", text);
    assert!(r.has_errors(), "expected an error for:\n{text}");
    assert!(r.checked.is_none());
    r.render_diagnostics()
}

/// The id of the (first, in source order) expression whose source text is exactly `snippet`.
fn find(r: &CheckResult, snippet: &str) -> NodeId {
    struct Find<'r> {
        r: &'r CheckResult,
        snippet: &'r str,
        found: Option<NodeId>,
    }
    impl Visitor for Find<'_> {
        fn expr(&mut self, e: &Expr) {
            if self.found.is_none() && self.r.sources.snippet(e.span) == self.snippet {
                self.found = Some(e.id);
            }
        }
    }
    let checked = r.checked.as_ref().expect("checked");
    let mut find = Find {
        r,
        snippet,
        found: None,
    };
    walk_program(&checked.program, &mut find);
    find.found
        .unwrap_or_else(|| panic!("no expression `{snippet}`"))
}

fn ty_of(r: &CheckResult, snippet: &str) -> Type {
    let id = find(r, snippet);
    r.checked.as_ref().unwrap().expr_type(id).clone()
}

fn t(s: &str) -> Type {
    parse_type(s).unwrap()
}

#[test]
fn indexing_types() {
    let r = ok("data {
        int N;
        matrix[N, N] m;
        array[N] vector[3] a;
        array[N, 2] int ids;
        array[2] int two;
      }
      transformed data {
        real e1 = m[1, 2];
        vector[2] e2 = m[2:3, 1];
        row_vector[N] e3 = m[1];
        matrix[2, N] e4 = m[two];
        array[N] real e5 = a[:, 1];
        array[2] vector[3] e6 = a[two];
        array[2] int e7 = ids[1];
        matrix[2, 2] e8 = m[two, two];
      }");
    assert_eq!(ty_of(&r, "m[1, 2]"), Type::Real);
    assert_eq!(ty_of(&r, "m[2:3, 1]"), Type::Vector);
    assert_eq!(ty_of(&r, "m[1]"), Type::RowVector);
    assert_eq!(ty_of(&r, "m[two]"), Type::Matrix);
    assert_eq!(ty_of(&r, "a[:, 1]"), t("array[] real"));
    assert_eq!(ty_of(&r, "a[two]"), t("array[] vector"));
    assert_eq!(ty_of(&r, "ids[1]"), t("array[] int"));
    assert_eq!(ty_of(&r, "m[two, two]"), Type::Matrix);
}

#[test]
fn expression_types_and_promotion() {
    let r = ok("data { int N; vector[N] x; row_vector[N] rv; }
      transformed data {
        real a = 1 + 2.0;
        int b = 3 / 2;
        complex c = 1 + 2i;
        matrix[N, N] outer = x * rv;
        real inner = rv * x;
        array[2] real arr = {1, 2.5};
        row_vector[3] lit = [1, 2, 3];
        matrix[2, 2] mlit = [[1, 2], [3, 4]];
        real tern = 1 ? 2 : 3.5;
        vector[N] ex = exp(x);
        array[2] real eint = exp({1, 2});
      }");
    assert_eq!(ty_of(&r, "1 + 2.0"), Type::Real);
    assert_eq!(ty_of(&r, "3 / 2"), Type::Int);
    assert_eq!(ty_of(&r, "1 + 2i"), Type::Complex);
    assert_eq!(ty_of(&r, "x * rv"), Type::Matrix);
    assert_eq!(ty_of(&r, "rv * x"), Type::Real);
    assert_eq!(ty_of(&r, "{1, 2.5}"), t("array[] real"));
    assert_eq!(ty_of(&r, "[1, 2, 3]"), Type::RowVector);
    assert_eq!(ty_of(&r, "[[1, 2], [3, 4]]"), Type::Matrix);
    assert_eq!(ty_of(&r, "1 ? 2 : 3.5"), Type::Real);
    assert_eq!(ty_of(&r, "exp(x)"), Type::Vector);
    assert_eq!(ty_of(&r, "exp({1, 2})"), t("array[] real"));
}

#[test]
fn calls_resolve_to_builtins_and_user_functions() {
    let r = ok("functions {
        real twice(real x) { return 2 * x; }
        real foo_lpdf(real y, real mu) { return -square(y - mu); }
      }
      data { vector[3] y; }
      parameters { real mu; }
      model {
        y ~ normal(mu, 1);
        mu ~ foo(twice(1.5));
        target += foo_lupdf(mu | 0);
      }");
    let checked = r.checked.as_ref().unwrap();
    let call = find(&r, "twice(1.5)");
    match checked.call_target(call) {
        Some(CallTarget::User { function }) => {
            assert_eq!(checked.functions[*function].name, "twice")
        }
        other => panic!("{other:?}"),
    }
    let model = checked.program.model.as_ref().unwrap();
    match checked.call_target(model.stmts[0].id) {
        Some(CallTarget::Builtin { name, .. }) => assert_eq!(name, "normal_lpdf"),
        other => panic!("{other:?}"),
    }
    match checked.call_target(model.stmts[1].id) {
        Some(CallTarget::User { function }) => {
            assert_eq!(checked.functions[*function].name, "foo_lpdf")
        }
        other => panic!("{other:?}"),
    }
    let plus = find(&r, "2 * x");
    match checked.call_target(plus) {
        Some(CallTarget::Builtin { name, .. }) => assert_eq!(name, "operator*"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn variables_and_blocks() {
    let r = ok("data { int N; }
      parameters { real mu; }
      model { real local = mu; for (i in 1:N) { } }");
    let checked = r.checked.as_ref().unwrap();
    let mu_ref = find(&r, "mu");
    let v = checked.variable_of(mu_ref).expect("resolved");
    assert_eq!(
        checked.variable(v).origin,
        Origin::Block(BlockKind::Parameters)
    );
    let data: Vec<_> = checked
        .block_variables(BlockKind::Data)
        .map(|(_, v)| v.name.clone())
        .collect();
    assert_eq!(data, vec!["N".to_string()]);
    let model = checked.program.model.as_ref().unwrap();
    let decl = checked.declared_vars(model.stmts[0].id);
    assert_eq!(decl.len(), 1);
    assert_eq!(
        checked.variable(decl[0]).origin,
        Origin::Block(BlockKind::Model)
    );
    let lv = checked.declared_vars(model.stmts[1].id);
    assert_eq!(
        checked.variable(lv[0]).origin,
        Origin::LoopVar(Some(BlockKind::Model))
    );
}

#[test]
fn data_only_and_parameter_free() {
    let r = ok("data { int N; vector[N] x; }
      transformed data { real s = sum(x); }
      parameters { real mu; }
      model {
        real a = s * 2;
        real b = mu * 3;
        int k = mu > 0;
        real c = a + 1;
        real d = 0;
        if (mu > 1) d = 5;
        target += a + b + k + c + d;
      }");
    let c = r.checked.as_ref().unwrap();
    let id = |s: &str| find(&r, s);
    assert!(c.is_data_only(id("sum(x)")));
    assert!(c.is_parameter_free(id("sum(x)")));
    assert!(!c.is_data_only(id("mu * 3")));
    assert!(!c.is_parameter_free(id("mu * 3")));
    // Stan's rule: ints are data-only, but `k` changes with `mu`.
    assert!(c.is_data_only(id("mu > 0")));
    assert!(!c.is_parameter_free(id("mu > 0")));
    // `a` is a model local computed from data only: parameter-free by dataflow.
    assert!(c.is_parameter_free(id("a + 1")));
    // `d` is assigned under a parameter-dependent condition.
    assert!(!c.is_parameter_free(id("a + b + k + c + d")));
}

#[test]
fn user_functions_recursion_overloads_forward_declarations() {
    ok("functions {
        int fib(int n);
        int fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }
        real g(real x) { return x; }
        real g(vector x) { return sum(x); }
        real h(real x) { while (1) { if (x > 0) return x; } }
        real k_rng(real m) { return normal_rng(m, 1); }
        void add_lp(real x) { target += x; }
      }
      parameters { real mu; }
      model { add_lp(-square(mu)); real a = g(1) + g([1, 2]'); }
      generated quantities { real z = k_rng(mu); int f = fib(5); }");
}

#[test]
fn higher_order_functions() {
    ok("functions {
        vector rhs(real t, vector y, real k) { return -k * y; }
        real partial(array[] real slice, int start, int end, real mu) {
          return normal_lpdf(slice | mu, 1);
        }
        real integrand(real x, real xc, array[] real theta, array[] real xr, array[] int xi) {
          return exp(-theta[1] * x);
        }
      }
      data { array[3] real ts; array[10] real y; }
      transformed data { array[0] real xr; array[0] int xi; }
      parameters { real<lower=0> k; real mu; }
      transformed parameters {
        array[3] vector[1] sol = ode_rk45(rhs, [1.0]', 0.0, ts, k);
        array[3] vector[1] sol2 = ode_bdf_tol(rhs, [1.0]', 0.0, ts, 1e-6, 1e-6, 1000, k);
      }
      model {
        target += reduce_sum(partial, y, 1, mu);
        target += integrate_1d(integrand, 0, 1, {k}, xr, xi, 1e-8);
      }");
}

#[test]
fn statements_and_misc_features() {
    ok("data { int N; vector[N] y; matrix[2, 2] m; }
      transformed data {
        tuple(real, int) tp = (1.5, 2);
        real first = tp.1;
        real r;
        int n;
        (r, n) = tp;
        for (v in m) { print(\"v = \", v); }
        for (yy in y) { }
        vector[N] z = y;
        z += 1;
        z .*= y;
        z /= 2;
        complex_vector[2] cv = to_complex([1, 2]', [0, 1]');
        profile(\"p\") { real q = 2; }
      }
      parameters { real<lower=0> sigma; vector<lower=-1, upper=1>[N] w; }
      model {
        y ~ normal(0, sigma) T[-10, 10];
        sigma ~ exponential(1);
        target += target();
      }
      generated quantities {
        array[N] real yrep = normal_rng(rep_vector(0, N), sigma);
        int c = poisson_rng(3.0);
      }");
}

#[test]
fn variables_may_share_names_with_builtin_functions() {
    ok("parameters { real beta; real gamma; }
      model { beta ~ normal(0, 1); gamma ~ gamma(2, 2); }");
}

#[test]
fn scoping_rules() {
    // Sibling scopes may reuse a name; a nested scope may not shadow.
    ok("transformed data { { real a = 1; } { real a = 2; } for (i in 1:2) { } for (i in 1:2) { } }");
    let msg = err("transformed data { real a = 1; { real a = 2; } }");
    assert!(msg.contains("`a` is already declared"), "{msg}");
    let msg = err("transformed data { real b = a; real a = 1; }");
    assert!(msg.contains("unknown variable `a`"), "{msg}");
}

#[test]
fn rng_functions_allowed_where_stan_allows() {
    ok("transformed data { real a = normal_rng(0, 1); }
      generated quantities { real b = normal_rng(0, 1); }");
    let msg = err("parameters { real mu; } transformed parameters { real b = normal_rng(0, 1); }");
    assert!(
        msg.contains("not allowed in the transformed parameters block"),
        "{msg}"
    );
}

#[test]
fn never_panics_on_garbage_programs() {
    // A few malformed-but-parseable programs exercising error paths together.
    for text in [
        "transformed data { real x = y[1][2][3]; }",
        "transformed data { vector[3] v; real x = v[1][1]; }",
        "functions { real f(real x) { return f(f(f(x))); } } transformed data { real y = f(); }",
        "transformed data { array[2] int a = {1, 2}; a[1, 2] = 3; }",
        "model { target += ode_rk45(1, 2, 3); }",
        "model { real x = reduce_sum(x, 1, 1); }",
        "transformed data { tuple(real, int) t; t.1.2 = 3; }",
    ] {
        let r = check_source("g.stan", text);
        assert!(r.has_errors(), "{text}");
    }
}

#[test]
fn typical_models_check_clean() {
    // Hierarchical model with correlated effects (multi-index rows of a matrix).
    ok(
        "data { int N; int J; array[N] int<lower=1, upper=J> g; vector[N] y; matrix[N, 3] X; }
      parameters {
        vector[3] b; cholesky_factor_corr[3] L; vector<lower=0>[3] tau; matrix[3, J] z;
        real<lower=0> sigma;
      }
      transformed parameters { matrix[J, 3] B = (diag_pre_multiply(tau, L) * z)'; }
      model {
        to_vector(z) ~ std_normal();
        L ~ lkj_corr_cholesky(2);
        tau ~ cauchy(0, 2.5);
        y ~ normal(rows_dot_product(X, B[g]) + X * b, sigma);
      }
      generated quantities { corr_matrix[3] Omega = multiply_lower_tri_self_transpose(L); }",
    );
    // Mixture via log_sum_exp and user `_lpmf` with `~`.
    ok("functions {
        real my_pois_lpmf(array[] int n, real lambda) { return poisson_lpmf(n | lambda); }
      }
      data { int K; int N; array[N] real y; array[N] int counts; }
      parameters { simplex[K] theta; ordered[K] mu; vector<lower=0>[K] sigma; real<lower=0> lam; }
      model {
        for (n in 1:N) {
          vector[K] lps = log(theta);
          for (k in 1:K) lps[k] += normal_lpdf(y[n] | mu[k], sigma[k]);
          target += log_sum_exp(lps);
        }
        counts ~ my_pois(lam);
        target += log_mix(0.3, normal_lpdf(y[1] | 0, 1), normal_lpdf(y[1] | 1, 1));
      }");
    // Gaussian process with kernels and Cholesky.
    ok("data { int N; array[N] real x; vector[N] y; }
      parameters { real<lower=0> rho; real<lower=0> alpha; real<lower=0> sigma; }
      model {
        matrix[N, N] K = gp_exp_quad_cov(x, alpha, rho);
        matrix[N, N] L = cholesky_decompose(add_diag(K, square(sigma)));
        y ~ multi_normal_cholesky(rep_vector(0, N), L);
        rho ~ inv_gamma(5, 5);
      }");
    // GLMs, binomial, truncation, discrete rng in gq.
    ok(
        "data { int N; int K; matrix[N, K] X; array[N] int<lower=0, upper=1> y;
             array[N] int<lower=0> cnt; array[N] int<lower=1> trials; vector[N] x; }
      parameters { real alpha; vector[K] beta; real<lower=0> l; }
      model {
        y ~ bernoulli_logit_glm(X, alpha, beta);
        cnt ~ poisson_log_glm(X, alpha, beta);
        cnt ~ binomial_logit(trials, alpha + x * 0.5);
        cnt[1] ~ poisson(l) T[, 10];
        target += normal_lupdf(beta | 0, 1);
      }
      generated quantities {
        array[N] int yrep = bernoulli_logit_rng(X * beta + alpha);
        array[N] int crep = poisson_log_rng(X * beta);
      }",
    );
    // Arrays, integer arithmetic, containers, control flow.
    ok("data { int N; array[N, 2] int a; vector[N] v; }
      transformed data {
        int total = sum(a[:, 1]) %/% N;
        int parity = a[1, 2] % 2;
        array[N, 2] real ar = rep_array(0, N, 2);
        array[3] int d = dims(ar) ;
        int n_el = num_elements(ar) + size(v);
        vector[3] s = segment(v, 1, 3);
        vector[2] h = head(v, 2) + tail(v, 2);
        array[N] int idx = sort_indices_asc(v);
        real r = a[1][2] + rank(v, 1);
        vector[N] av = to_vector(a[:, 1]);
        vector[N] t = parity ? v : -v;
        int n = 0;
        while (n < 10) n += 1;
        for (row in a) { print(row); }
        complex_vector[N] f = fft(to_complex(v, 0));
        real re = get_real(f[1]);
        if (n > 100) reject(\"too big: \", n);
      }
      parameters {
        vector<lower=-v, upper=v + 1>[N] w;
        real mu; real<lower=0> sigma;
        vector<offset=mu, multiplier=sigma>[N] z;
        sum_to_zero_vector[N] sz;
      }
      transformed parameters {
        real<lower=0> sq = square(mu);
        jacobian += 0;
      }
      model { z ~ normal(mu, sigma); }");
    // HMM marginal and ODE with data arguments.
    ok("functions {
        vector sho(real t, vector y, real theta) { return [y[2], -y[1] - theta * y[2]]'; }
      }
      data { int K; int T; matrix[K, T] log_omega; array[3] real ts; }
      parameters { simplex[K] rho; array[K] simplex[K] Gamma_rows; real<lower=0> theta; }
      model {
        matrix[K, K] Gamma;
        for (k in 1:K) Gamma[k] = Gamma_rows[k]';
        target += hmm_marginal(log_omega, Gamma, rho);
        array[3] vector[2] y = ode_bdf(sho, [1, 0]', 0, ts, theta);
      }");
}

#[test]
fn user_overload_resolution_prefers_least_promotion_and_reports_ambiguity() {
    let r = ok("functions {
        real f(real x, real y) { return 1; }
        real f(int x, real y) { return 2; }
      }
      transformed data { real a = f(1, 1); }");
    let c = r.checked.as_ref().unwrap();
    let call = find(&r, "f(1, 1)");
    match c.call_target(call) {
        Some(CallTarget::User { function }) => {
            assert_eq!(c.functions[*function].args[0].1, Type::Int)
        }
        other => panic!("{other:?}"),
    }
    let msg = err("functions {
        real f(real x, int y) { return 1; }
        real f(int x, real y) { return 2; }
      }
      transformed data { real a = f(1, 1); }");
    assert!(msg.contains("ambiguous"), "{msg}");
}

#[test]
fn model_block_variables_are_local_to_the_model_block() {
    ok("parameters { real mu; }
      model { real m = mu; mu ~ normal(0, 1); }
      generated quantities { real m = 2 * mu; }");
    let msg = err("parameters { real mu; }
      model { real m = mu; mu ~ normal(0, 1); }
      generated quantities { real g = m; }");
    assert!(msg.contains("unknown variable `m`"), "{msg}");
}

#[test]
fn truncation_resolves_cdfs() {
    let r = ok("data { real y; int k; }
      parameters { real mu; real<lower=0> lam; }
      model {
        y ~ normal(mu, 1) T[0, ];
        y ~ normal(mu, 1) T[, 5];
        y ~ normal(mu, 1) T[-1, 5];
        k ~ poisson(lam) T[0, 10];
      }");
    let c = r.checked.as_ref().unwrap();
    let stmts = &c.program.model.as_ref().unwrap().stmts;
    let names = |i: usize| -> Vec<String> {
        c.truncation_targets(stmts[i].id)
            .iter()
            .map(|t| match t {
                CallTarget::Builtin { name, .. } => name.clone(),
                CallTarget::User { .. } => "user".into(),
            })
            .collect()
    };
    assert_eq!(names(0), vec!["normal_lccdf"]);
    assert_eq!(names(1), vec!["normal_lcdf"]);
    assert_eq!(names(2), vec!["normal_lcdf", "normal_lcdf"]);
    assert_eq!(names(3), vec!["poisson_lcdf", "poisson_lcdf"]);
    let msg = err("data { real y; vector[2] v; } parameters { real mu; }
      model { y ~ normal(mu, 1) T[v, ]; }");
    assert!(msg.contains("truncation bound of type `vector`"), "{msg}");
}

#[test]
fn container_bounds() {
    ok(
        "data { int N; array[N] real lb; vector[N] vlb; array[N] int ilb; }
      parameters { array[N] real<lower=lb> x; vector<lower=vlb>[N] v; real<lower=0, upper=1> p; }
      transformed parameters { array[N] real<lower=lb, upper=100> y = x; }
      generated quantities { array[N] int<lower=ilb> k = ilb; }",
    );
    let msg = err("data { int N; vector[N] vlb; } parameters { real<lower=vlb> x; }");
    assert!(msg.contains("lower bound in `real<...>`"), "{msg}");
}

#[test]
fn assorted_valid_expressions() {
    ok(
        "data { int N; int K; matrix[N, K] m; vector[N] v; row_vector[K] rv; array[2] int idx;
             array[N] vector[K] xs; cov_matrix[N] Sigma; vector[K] c; }
      transformed data {
        matrix[N, N] L = cholesky_decompose(Sigma);
        real q = v' * Sigma * v + quad_form(Sigma, v);
        vector[N] s1 = L \\ v;
        vector[N] s2 = mdivide_left_tri_low(L, v);
        vector[N] s3 = 1 - v / 2;
        real d = sum(v .* v) + max(1, 2.5) + fmax(v[1], 0) + pow(2, 3) + e();
        vector[N] a = abs(v - s1);
        array[N] int ids = sort_indices_desc(v);
        int mn = min(ids);
        matrix[N, K] m2 = m;
        m2[1, :] = rv;
        m2[:, 1] = v;
        m2[idx, 2] = v[idx];
        real xk = xs[1, 2];
        vector[K] row1 = xs[1];
        int flag = !(d > 0) && (q < 1 || 2.5 > 1);
        tuple(int, real) tp;
        int ta;
        real tb;
        (ta, tb) = (1, 2.0);
        complex z = 2.5i * to_complex(1, 1);
        matrix[N, N] D = diag_matrix(rep_vector(1, N));
        vector[N] w = inv(v) + to_vector(m[:, 1]) + -v;
      }
      parameters { simplex[K] theta; vector[K] eta; ordered[K - 1] cut; }
      model {
        print(\"lp = \", target());
        theta ~ dirichlet(rep_vector(1, K));
        target += log(theta);
      }
      generated quantities {
        int b = bernoulli_logit_rng(eta[1]);
        int cat = categorical_rng(softmax(eta));
        vector[N] mv = multi_normal_rng(v, Sigma);
        matrix[K, K] Lc = lkj_corr_cholesky_rng(K, 2.0);
        vector[K] th = dirichlet_rng(rep_vector(1, K));
        real u = uniform_rng(0, 1);
        int o = ordered_logistic_rng(eta[1], cut);
        int bn = binomial_rng(N, 0.5);
        array[N] int bs = binomial_rng(rep_array(N, N), inv_logit(v));
      }",
    );
}

#[test]
fn constrained_locals_are_rejected_even_if_the_parser_let_them_through() {
    // The parser rejects these itself; build the tree by moving a top-level constrained
    // declaration into a nested block, so the checker's own rule is exercised.
    let parsed = hazel_syntax::parse_str(
        "t.stan",
        "generated quantities { real<lower=0> s = 1; { real t; } }",
    );
    let mut program = parsed.program.expect("parses");
    let gq = program.generated_quantities.as_mut().unwrap();
    let decl = gq.stmts.remove(0);
    if let StmtKind::Block(inner) = &mut gq.stmts[0].kind {
        inner.push(decl);
    } else {
        panic!("expected a block");
    }
    let (checked, diags) = crate::check(&program);
    assert!(checked.is_none());
    assert!(
        diags.iter().any(|d| d
            .message
            .contains("local variables cannot have constraints")),
        "{diags:?}"
    );
}

#[test]
fn brms_style_constructs() {
    ok("functions {
        real log_expm1(real x) { return log(expm1(x)); }
        vector log_expm1(vector x) { return log(expm1(x)); }
        real tail_lpdf(real t, real d, real s) {
          if (t <= 0) return negative_infinity();
          real z = inv_square(t) + sqrt2();
          real lp = log1m_exp(std_normal_lcdf(-d / s)) + std_normal_lcdf(z);
          return lp > 0 ? log_diff_exp(lp, 0) : log_mix(0.5, lp, -lp);
        }
      }
      data { int N; int K; matrix[N, K] X; vector[N] Y; int prior_only; }
      transformed data {
        matrix[N, K - 1] Xc;
        vector[K - 1] means_X;
        for (i in 2:K) {
          means_X[i - 1] = mean(X[, i]);
          Xc[, i - 1] = X[, i] - means_X[i - 1];
        }
      }
      parameters { vector[K - 1] b; real Intercept; real<lower=0> s; }
      model {
        if (!prior_only) {
          vector[N] mu = rep_vector(0.0, N);
          mu += Intercept + Xc * b;
          for (n in 1:N) target += tail_lpdf(Y[n] | mu[n], s);
        }
        vector[3] terms = [1, 2, 3]';
        target += log_sum_exp(terms) + log_expm1(2.0) + sum(log_expm1(terms));
      }
      generated quantities { real b_Intercept = Intercept - dot_product(means_X, b); }");
}

#[test]
fn rng_draws_from_data_are_data_only() {
    ok("transformed data { int k = to_int(uniform_rng(0, 10)); }
      parameters { real mu; }
      model { mu ~ normal(0, 1); }
      generated quantities { int j = to_int(uniform_rng(0, 10)); }");
}

#[test]
fn valid_but_deprecated_stan_checks_with_warnings() {
    let r = ok("data { int n; int m; }
         parameters { cov_matrix[2] S; }
         model { real a = n / 2; real b = n / m; real c = n %/% 2; real d = n / 2.0;
                 S ~ lkj_cov(rep_vector(0, 2), rep_vector(1, 2), 2.0); }");
    let warnings: Vec<String> = r
        .diagnostics
        .iter()
        .filter(|d| !d.is_error())
        .map(|d| format!("{} | {}", d.message, d.hint.clone().unwrap_or_default()))
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    assert!(warnings[0].starts_with("found int division: n / 2 |"));
    assert!(warnings[0].contains("`n / 2.0`"));
    assert!(warnings[1].contains("`n * 1.0 / m`"));
    assert!(warnings[2].starts_with("`lkj_cov` is deprecated"));
}

#[test]
fn lp_functions_in_transformed_parameters_warn_and_removed_functions_name_their_replacement() {
    let r = ok("functions { real f_lp(real x) { target += -x; return x; } }
         parameters { real<lower=0> s; }
         transformed parameters { real t = f_lp(s); }
         model { s ~ exponential(1); real u = f_lp(s); }");
    let warnings: Vec<&str> = r
        .diagnostics
        .iter()
        .filter(|d| !d.is_error())
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].starts_with("Using _lp functions in transformed parameters is deprecated"));
    for (call, new) in [
        ("cov_exp_quad(x, 1.0, 1.0)[1, 1]", "gp_exp_quad_cov"),
        ("fabs(x[1])", "abs"),
        ("multiply_log(x[1], x[2])", "lmultiply"),
        ("binomial_coefficient_log(x[1], x[2])", "lchoose"),
        ("normal_log(x[1], 0, 1)", "normal_lpdf"),
        ("poisson_log(2, x[1])", "poisson_lpmf"),
        ("normal_cdf_log(x[1], 0, 1)", "normal_lcdf"),
        ("normal_ccdf_log(x[1], 0, 1)", "normal_lccdf"),
    ] {
        let src =
            format!("transformed data {{ array[2] real x = {{1.0, 2.0}}; real y = {call}; }}");
        let r = check_source("m.stan", &src);
        let errors: Vec<String> = r
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{} | {}", d.message, d.hint.clone().unwrap_or_default()))
            .collect();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(errors[0].contains("was removed in Stan 2.33"), "{errors:?}");
        assert!(errors[0].contains(&format!("use `{new}")), "{errors:?}");
    }
}
