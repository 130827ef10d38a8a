transformed data { int n = 3; for (x in n) { print(x); } }
