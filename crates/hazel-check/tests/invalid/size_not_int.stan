data { real n; vector[n] v; }
