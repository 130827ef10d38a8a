transformed data { int n = 2.5; }
