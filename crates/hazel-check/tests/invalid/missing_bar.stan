parameters { real mu; }
model { target += normal_lpdf(mu, 0, 1); }
