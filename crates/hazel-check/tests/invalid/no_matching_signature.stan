data { matrix[3, 3] m; }
parameters { real mu; }
model { m ~ normal(mu, 1); }
