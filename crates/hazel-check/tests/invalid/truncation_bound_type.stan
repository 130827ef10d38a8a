data { real y; vector[2] v; }
parameters { real mu; }
model { y ~ normal(mu, 1) T[v, ]; }
