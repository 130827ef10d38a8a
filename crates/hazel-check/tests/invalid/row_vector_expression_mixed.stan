data { vector[2] v; }
transformed data { row_vector[3] r = [1, v, 3]; }
