transformed data { exp(1.0); }
