transformed data { tuple(real, int) t = (1.0, 2); real z = t.3; }
