data { int N; vector[N] y; }
parameters { real mu; }
model { y = y + 1; mu ~ normal(0, 1); }
