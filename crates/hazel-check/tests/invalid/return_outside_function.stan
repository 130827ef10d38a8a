transformed data { return 1; }
