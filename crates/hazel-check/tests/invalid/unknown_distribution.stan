parameters { real mu; }
model { mu ~ norml(0, 1); }
