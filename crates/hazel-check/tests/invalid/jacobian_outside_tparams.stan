parameters { real mu; }
model { jacobian += mu; }
