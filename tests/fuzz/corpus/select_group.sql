SELECT y, count(*), count(x), count(DISTINCT x), sum(z), total(z), avg(x), min(y), max(z), group_concat(y, ','), string_agg(y, ';') FROM t2 GROUP BY y HAVING count(*) > 0 ORDER BY 1;
