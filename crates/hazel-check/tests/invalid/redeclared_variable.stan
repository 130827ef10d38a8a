data { int N; }
parameters { real N; }
model { }
