parameters { real mu; }
model { mu ~ normal_lpdf(0, 1); }
