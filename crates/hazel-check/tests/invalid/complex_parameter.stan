parameters { complex z; }
model { }
