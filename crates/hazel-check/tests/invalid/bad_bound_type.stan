data { int N; vector[N] lo; }
parameters { real<lower=lo> x; int<lower=1.5> z; }
model { }
