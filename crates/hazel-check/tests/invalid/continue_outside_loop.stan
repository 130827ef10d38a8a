transformed data { if (1) continue; }
