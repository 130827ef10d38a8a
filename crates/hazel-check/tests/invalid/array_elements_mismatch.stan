data { vector[3] v; }
transformed data { array[2] real x = {1.0, v}; }
