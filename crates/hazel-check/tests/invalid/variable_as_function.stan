data { real x; }
transformed data { real y = x(2); }
