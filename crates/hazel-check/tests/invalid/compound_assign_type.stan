transformed data { int n = 1; n += 2.5; }
