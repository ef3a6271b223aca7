SELECT t1.a, t2.y FROM t1 JOIN t2 ON t1.a = t2.x LEFT JOIN t3 ON t3.k = t2.y RIGHT JOIN t1 AS u ON u.a = t2.z FULL JOIN t2 AS w USING (x) CROSS JOIN t3 AS q;
