parameters { real mu; }
model { target += norml_lpdf(mu | 0, 1); }
