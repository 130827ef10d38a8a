data { real y; }
parameters { real mu; }
model { y ~ wiener(1, 0.1, 0.5, mu) T[0, ]; }
