data { vector[3] v; }
transformed data { real x = 1 ? 1.0 : v; }
