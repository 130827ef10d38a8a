parameters { real mu; }
model { mu ~ normal(0, 1); }
generated quantities { real lp = normal_lupdf(mu | 0, 1); }
