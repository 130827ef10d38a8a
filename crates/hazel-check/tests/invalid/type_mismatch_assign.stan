transformed data { real x; vector[3] v; x = v; }
