data { vector[2] v; }
transformed data { while (v) { } }
