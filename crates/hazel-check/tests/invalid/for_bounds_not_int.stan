transformed data { for (i in 1:2.5) { print(i); } }
