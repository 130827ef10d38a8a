parameters { int k; }
model { }
