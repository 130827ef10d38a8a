data {
  int<lower=0> nChild;
  int<lower=0> nInd;
  array[nInd, 4] real gamma;
  array[nInd] real delta;
  array[nInd] int<lower=0> ncat;
  array[nChild, nInd] int grade;
}
parameters {
  array[nChild] real theta;
}
model {
  theta ~ normal(0.0, 36.0);
  for (i in 1:nChild) {
    for (j in 1:nInd) {
      if (grade[i, j] != -1) {
        int K = ncat[j];
        vector[K - 1] Q;
        vector[K] p;
        for (k in 1:(K - 1)) {
          Q[k] = inv_logit(delta[j] * (theta[i] - gamma[j, k]));
        }
        p[1] = 1 - Q[1];
        for (k in 2:(K - 1)) {
          p[k] = Q[k - 1] - Q[k];
        }
        p[K] = Q[K - 1];
        target += log(p[grade[i, j]]);
      }
    }
  }
}
