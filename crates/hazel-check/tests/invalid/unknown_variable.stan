data { int N; vector[N] y; }
parameters { real mu; }
model { y ~ normal(muu, 1); }
