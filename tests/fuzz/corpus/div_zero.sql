SELECT 1 / 0, 1 % 0, 1.0 / 0, a / 0 FROM t1;
