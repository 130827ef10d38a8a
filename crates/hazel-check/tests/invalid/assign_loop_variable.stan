transformed data {
  for (i in 1:10) {
    i = 2;
  }
}
