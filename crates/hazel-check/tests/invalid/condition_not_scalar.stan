data { vector[3] v; }
transformed data { if (v) { print("yes"); } }
