data { vector[3] a; row_vector[3] b; }
transformed data { vector[3] c = a * a; vector[3] d = a + b; }
