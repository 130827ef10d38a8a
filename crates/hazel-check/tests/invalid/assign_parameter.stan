parameters { real mu; }
model { mu = 1; }
