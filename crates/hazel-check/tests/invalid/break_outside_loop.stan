transformed data { break; }
