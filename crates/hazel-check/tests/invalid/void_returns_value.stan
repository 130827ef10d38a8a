functions {
  void f(real x) { return x; }
}
