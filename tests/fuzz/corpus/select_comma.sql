SELECT * FROM t1, t2 AS x2, (SELECT 1 AS one) AS s WHERE t1.a = x2.x;
