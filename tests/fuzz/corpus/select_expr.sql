SELECT 1 + 2 * 3 - 4 / 2 % 3, -a, ~a, a << 2, a >> 1, a & 3, a | 4, 'x' || b, CAST(c AS INTEGER), CAST(a AS TEXT) FROM t1;
