parameters { real<lower=0> hi; }
model {
  vector[3] v = linspaced_vector(3, 0, hi);
  hi ~ exponential(1);
}
